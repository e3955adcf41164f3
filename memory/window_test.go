package memory_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

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
