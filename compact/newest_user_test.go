package compact_test

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// newestUserThread is a thread whose newest user message is followed by tool-call units that
// alone fill the kept budget of a 2,048-token limit.
func newestUserThread(t *testing.T, s *memory.Store) string {
	t.Helper()
	msgs := []chat.Message{chat.TextMessage("system", "You are an agent. Use the tools.")}
	for k := range 4 {
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("Earlier task %d: look at file src/old_%d.go.", k, k)),
			chat.TextMessage("assistant", fmt.Sprintf("Done with src/old_%d.go.", k)))
	}
	newest := "Now fix the failing test in pkg/ledger/ledger_test.go and keep the public API of ledger.Open unchanged."
	msgs = append(msgs, chat.TextMessage("user", newest))
	for k := range 10 {
		id := fmt.Sprintf("call_%d", k)
		msgs = append(msgs, chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: id, Type: "function",
			Function: chat.FunctionCall{Name: "read_file", Arguments: fmt.Sprintf(`{"path": "pkg/ledger/part_%d.go"}`, k)}}}},
			chat.Message{Role: "tool", ToolCallID: id, Content: storetest.MustJSON(strings.Repeat(fmt.Sprintf("func part%d() { return nil } // line of code\n", k), 25))})
	}
	if _, err := s.Append(context.Background(), "t", msgs, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	return newest
}

// TestNewestUserMessageStays: the newest user message is in the active context after a
// compaction whatever the strategy or fit, when the units after it alone fill the kept budget;
// the context stays within its limit, and a second compaction (the summary folded in) keeps it
// too.
func TestNewestUserMessageStays(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const limit = 2048
	cases := []struct {
		name string
		set  compact.Settings
		fail bool
	}{
		{"summarize", compact.Settings{TokenLimit: limit}, false},
		{"hybrid", compact.Settings{TokenLimit: limit, Strategy: compact.StrategyHybrid}, false},
		{"window", compact.Settings{TokenLimit: limit, Strategy: compact.StrategyWindow}, false},
		{"fit", compact.Settings{TokenLimit: limit, OnFailure: compact.OnFailureFit}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a store of its own
			s, _ := storetest.Open(t)
			newest := newestUserThread(t, s)
			casc := storetest.ExtractiveCascade(t, s)
			if tc.fail {
				casc = storetest.FailingCascade(s)
			}
			c := compact.New(s, casc, tc.set)
			views := [][]byte{activeJSON(t, s, "t")} // the active context before each compaction
			var ids []int64
			for round := 1; round <= 2; round++ {
				rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
				if rep.Status == memory.StatusApplied {
					ids = append(ids, rep.ID)
					views = append(views, activeJSON(t, s, "t"))
				}
				if round == 1 && (err != nil || rep.Status != memory.StatusApplied) {
					t.Fatalf("compact: %+v, %v; want applied", rep, err)
				}
				a, err := s.Active(ctx, "t")
				if err != nil {
					t.Fatal(err)
				}
				held := false // as a message of its own, not quoted in a summary
				for _, e := range a.Entries {
					held = held || e.CompactionID == 0 && e.Message.Role == "user" && e.Message.Text() == newest
				}
				if !held {
					t.Fatalf("round %d (%s): the newest user message is out of the active context (%d tokens, %d messages)", round, rep.Status, a.Tokens, len(a.Entries))
				}
				if a.Tokens > limit {
					t.Fatalf("round %d: %d tokens, over the limit %d", round, a.Tokens, limit)
				}
				checkActive(t, a, "system", limit)
				checkStoredCounts(t, s, "t")
			}
			// Revert brings back each earlier view exactly, the held message with it.
			for k := len(ids) - 1; k >= 0; k-- {
				if _, err := s.Revert(ctx, "", ids[k]); err != nil {
					t.Fatal(err)
				}
				if got := activeJSON(t, s, "t"); !bytes.Equal(got, views[k]) {
					t.Fatalf("revert of compaction %d: the active context is not the one before it", ids[k])
				}
			}
		})
	}
}
