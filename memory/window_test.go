package memory_test

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// longRecordedThread imports the recorded conversations one after the other, twice, into one
// thread: about 270 messages of real agent traffic.
func longRecordedThread(t testing.TB, s *memory.Store, thread string) {
	t.Helper()
	for range 2 {
		for _, f := range conversations(t) {
			importFile(t, s, thread, f)
		}
	}
}

// TestSmallWindows: summarizers with windows of 1,024 to 128k tokens compact a long recorded
// thread; every request fits its window, and the requests stay within
// 1.5 × ceil(middle / (window / 2)) + 2.
func TestSmallWindows(t *testing.T) {
	ctx := context.Background()
	for _, window := range []int{1024, 1500, 2048, 8192, 128000} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			s, _ := openStore(t)
			longRecordedThread(t, s, "t")
			counter, err := s.Counter(memory.EncodingO200k)
			if err != nil {
				t.Fatal(err)
			}
			var requests, prompt int
			var over []string
			fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
				msgs := make([]memory.Message, len(req.Messages))
				for i, m := range req.Messages {
					msgs[i] = memory.TextMessage(m.Role, m.Content)
				}
				n := counter.CountMessages(msgs)
				requests++
				prompt += n
				if n+req.MaxTokens > window {
					over = append(over, fmt.Sprintf("request %d: %d prompt + %d output tokens", requests, n, req.MaxTokens))
				}
				words := max(8, req.MaxTokens/2)
				return llm.Response{Text: "## Goal and constraints\n" + strings.TrimSpace(strings.Repeat("work went on ", words/3)), FinishReason: "stop"}, nil
			}}
			e := fakeEntry("local", fake, window)
			e.MaxOutputTokens = 1024
			c := memory.NewCompactor(s, cascade.New(s.DB(), e), memory.Settings{TokenLimit: 16000})
			dry, err := c.Compact(ctx, "t", memory.CompactOptions{Force: true, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := c.Compact(ctx, "t", memory.CompactOptions{Force: true})
			if err != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("compact: %+v, %v", rep, err)
			}
			if len(over) > 0 {
				t.Fatalf("requests over the window of %d: %v", window, over)
			}
			mid := middleTokens(t, s, dry)
			target := int(1.5*float64((mid+window/2-1)/(window/2))) + 2
			t.Logf("WINDOW %d: middle %d tokens, %d requests (target %d), %d prompt tokens, transcript share %.0f%%, %d -> %d tokens",
				window, mid, requests, target, prompt, 100*float64(mid)/float64(prompt), rep.TokensBefore, rep.TokensAfter)
			if requests > target {
				t.Fatalf("%d requests for a middle of %d tokens, over the target %d", requests, mid, target)
			}
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

// TestConcurrentChunks: a provider that serves three requests at once gets the parts of the
// middle in parallel (each summarized on its own, then merged): the compaction is applied,
// every request fits the window, requests overlap, and the requests stay within the target.
func TestConcurrentChunks(t *testing.T) {
	ctx := context.Background()
	for _, window := range []int{2048, 8192} {
		t.Run(fmt.Sprint(window), func(t *testing.T) {
			s, _ := openStore(t)
			longRecordedThread(t, s, "t")
			counter, err := s.Counter(memory.EncodingO200k)
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			var requests, inFlight, maxInFlight int
			var over []string
			two := make(chan struct{})
			fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
				msgs := make([]memory.Message, len(req.Messages))
				for i, m := range req.Messages {
					msgs[i] = memory.TextMessage(m.Role, m.Content)
				}
				n := counter.CountMessages(msgs)
				mu.Lock()
				requests++
				inFlight++
				first := inFlight == 2 && maxInFlight < 2
				maxInFlight = max(maxInFlight, inFlight)
				if first {
					close(two) // the first time two requests overlap
				}
				if n+req.MaxTokens > window {
					over = append(over, fmt.Sprintf("request %d: %d prompt + %d output tokens", requests, n, req.MaxTokens))
				}
				mu.Unlock()
				select { // hold the first request until a second one is in flight (or give up)
				case <-two:
				case <-time.After(5 * time.Second):
				}
				mu.Lock()
				inFlight--
				mu.Unlock()
				return llm.Response{Text: "## Goal and constraints\n" + strings.TrimSpace(strings.Repeat("work went on ", max(8, req.MaxTokens/2)/3)), FinishReason: "stop"}, nil
			}}
			e := fakeEntry("local", fake, window)
			e.MaxOutputTokens, e.Concurrency = 1024, 3
			c := memory.NewCompactor(s, cascade.New(s.DB(), e), memory.Settings{TokenLimit: 16000})
			dry, err := c.Compact(ctx, "t", memory.CompactOptions{Force: true, DryRun: true})
			if err != nil {
				t.Fatal(err)
			}
			rep, err := c.Compact(ctx, "t", memory.CompactOptions{Force: true})
			if err != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("compact: %+v, %v", rep, err)
			}
			if len(over) > 0 {
				t.Fatalf("requests over the window of %d: %v", window, over)
			}
			if maxInFlight < 2 {
				t.Fatalf("at most %d request in flight with concurrency 3", maxInFlight)
			}
			mid := middleTokens(t, s, dry)
			target := int(1.5*float64((mid+window/2-1)/(window/2))) + 2
			t.Logf("CONCURRENT %d: middle %d tokens, %d requests (target %d), at most %d in flight, chunks %d",
				window, mid, requests, target, maxInFlight, rep.Chunks)
			if requests > target || rep.Chunks != requests {
				t.Fatalf("%d requests (report: %d chunks) for a middle of %d tokens, target %d", requests, rep.Chunks, mid, target)
			}
		})
	}
}
