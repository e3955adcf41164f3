package compact_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// longRecordedThread imports the recorded conversations one after the other, twice, into one
// thread: about 270 messages of real agent traffic.
func longRecordedThread(t testing.TB, s *memory.Store, thread string) {
	t.Helper()
	for range 2 {
		for _, f := range corpus.Conversations(t) {
			storetest.Import(t, s, thread, f)
		}
	}
}

// windowProvider is a summarizer with a window of window tokens that counts its requests and
// names those over the window; hold, when set, runs inside each request (under no lock).
type windowProvider struct {
	mu               sync.Mutex
	requests, prompt int
	over             []string
}

func (w *windowProvider) fake(counter tokencount.Counter, window int, hold func()) *cascade.Fake {
	return &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		msgs := make([]chat.Message, len(req.Messages))
		for i, m := range req.Messages {
			msgs[i] = chat.TextMessage(m.Role, m.Content)
		}
		n := counter.CountMessages(msgs)
		w.mu.Lock()
		w.requests++
		w.prompt += n
		if n+req.MaxTokens > window {
			w.over = append(w.over, fmt.Sprintf("request %d: %d prompt + %d output tokens", w.requests, n, req.MaxTokens))
		}
		w.mu.Unlock()
		if hold != nil {
			hold()
		}
		words := max(8, req.MaxTokens/2)
		return llm.Response{Text: "## Goal and constraints\n" + strings.TrimSpace(strings.Repeat("work went on ", words/3)), FinishReason: "stop"}, nil
	}}
}

// throughWindow compacts thread t of s at limit through a provider of the given window and
// concurrency (hold, if set, runs in each request), and checks that it applied and that every
// request fit the window. It returns the provider's record, the report, the middle's tokens and
// the request target 1.5 x ceil(middle / (window / 2)) + 2.
func throughWindow(t *testing.T, s *memory.Store, limit, window, concurrency int, hold func()) (*windowProvider, memory.Report, int, int) {
	t.Helper()
	ctx := context.Background()
	counter, err := s.Counter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	w := &windowProvider{}
	e := fakeEntry("local", w.fake(counter, window, hold), window)
	e.MaxOutputTokens, e.Concurrency = 1024, concurrency
	c := compact.New(s, cascade.New(s.DB(), e), compact.Settings{TokenLimit: limit})
	dry, err := c.Compact(ctx, "t", compact.Options{Force: true, DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %+v, %v", rep, err)
	}
	if len(w.over) > 0 {
		t.Fatalf("requests over the window of %d: %v", window, w.over)
	}
	mid := middleTokens(t, s, dry)
	return w, rep, mid, int(1.5*float64((mid+window/2-1)/(window/2))) + 2
}

// windowRun compacts the long recorded thread at a limit of 16000 through a provider of the
// given window and concurrency, and checks the result: applied, every request within the
// window, the requests within 1.5 x ceil(middle / (window / 2)) + 2.
func windowRun(t *testing.T, window, concurrency int, hold func()) (*windowProvider, memory.Report, int, int) {
	t.Helper()
	s, _ := storetest.Open(t)
	longRecordedThread(t, s, "t")
	w, rep, mid, target := throughWindow(t, s, 16000, window, concurrency, hold)
	if w.requests > target || rep.Chunks != w.requests {
		t.Fatalf("%d requests (report: %d chunks) for a middle of %d tokens, over the target %d", w.requests, rep.Chunks, mid, target)
	}
	return w, rep, mid, target
}

// TestSmallWindows: summarizers with windows of 1,024 to 128k tokens compact a long recorded
// thread; every request fits its window, and the requests stay within
// 1.5 × ceil(middle / (window / 2)) + 2.
func TestSmallWindows(t *testing.T) {
	t.Parallel()
	for _, window := range []int{1024, 1500, 2048, 8192, 128000} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			t.Parallel()
			w, rep, mid, target := windowRun(t, window, 1, nil)
			t.Logf("WINDOW %d: middle %d tokens, %d requests (target %d), %d prompt tokens, middle/prompt %.0f%%, %d -> %d tokens",
				window, mid, w.requests, target, w.prompt, 100*float64(mid)/float64(w.prompt), rep.TokensBefore, rep.TokensAfter)
		})
	}
}

// TestConcurrentChunks: a provider that serves three requests at once gets the parts of the
// middle in parallel (each summarized on its own, then merged): the compaction is applied,
// every request fits the window, requests overlap, and the requests stay within the target.
func TestConcurrentChunks(t *testing.T) {
	t.Parallel()
	for _, window := range []int{1024, 2048, 8192} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			var mu sync.Mutex
			inFlight, maxInFlight := 0, 0
			two := make(chan struct{})
			hold := func() {
				mu.Lock()
				inFlight++
				if inFlight == 2 && maxInFlight < 2 {
					close(two) // the first time two requests overlap
				}
				maxInFlight = max(maxInFlight, inFlight)
				mu.Unlock()
				select { // hold each request until a second one is in flight (or give up)
				case <-two:
				case <-time.After(5 * time.Second):
				}
				mu.Lock()
				inFlight--
				mu.Unlock()
			}
			w, rep, mid, target := windowRun(t, window, 3, hold)
			if maxInFlight < 2 {
				t.Fatalf("at most %d request in flight with concurrency 3", maxInFlight)
			}
			t.Logf("CONCURRENT %d: middle %d tokens, %d requests (target %d), at most %d in flight, chunks %d",
				window, mid, w.requests, target, maxInFlight, rep.Chunks)
		})
	}
}

// middleTokens is the size of what a dry run plans to summarize: its messages' stored counts.
func middleTokens(t testing.TB, s *memory.Store, dry memory.Report) int {
	t.Helper()
	hist, err := s.History(context.Background(), dry.Thread)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range hist {
		if e.Seq >= dry.FromSeq && e.Seq <= dry.ToSeq {
			n += e.Tokens
		}
	}
	return n
}
