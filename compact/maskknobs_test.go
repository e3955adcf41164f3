package compact_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// toolThread is a thread of turns tool calls, alternating read_file and search, each result a
// few hundred tokens, then a last user question answered in words.
func toolThread(turns int) []chat.Message {
	msgs := []chat.Message{chat.TextMessage("system", "You are a coding agent."), chat.TextMessage("user", "Find the bug in the parser.")}
	for k := range turns {
		name := []string{"read_file", "search"}[k%2]
		id := fmt.Sprintf("call_%d", k)
		call := chat.Message{Role: "assistant", Content: []byte("null"), ToolCalls: []chat.ToolCall{{ID: id, Type: "function",
			Function: chat.FunctionCall{Name: name, Arguments: fmt.Sprintf(`{"path": "src/file%d.go"}`, k)}}}}
		res := chat.TextMessage("tool", strings.Repeat(fmt.Sprintf("line %d of result %d: some code here\n", k, k), 40))
		res.ToolCallID = id
		msgs = append(msgs, call, res)
	}
	return append(msgs, chat.TextMessage("assistant", "The bug is in file 3."), chat.TextMessage("user", "Fix it."),
		chat.TextMessage("assistant", "Done."))
}

// maskedThread appends msgs to a new thread, compacts it once with s (forced) and returns its
// active context.
func maskedThread(t *testing.T, msgs []chat.Message, s compact.Settings) memory.Active {
	t.Helper()
	ctx := context.Background()
	st, _ := storetest.Open(t)
	if _, err := st.Append(ctx, "t", msgs, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	c := compact.New(st, storetest.ExtractiveCascade(t, st), s)
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %s, %v (%s)", rep.Status, err, rep.Detail)
	}
	a, err := st.Active(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	return a
}

// results lists the tool results of a, oldest first, as "name:masked" or "name:verbatim".
func results(a memory.Active) []string {
	names := map[string]string{}
	var out []string
	for _, e := range a.Entries {
		for _, c := range e.Message.ToolCalls {
			names[c.ID] = c.Function.Name
		}
		if e.Message.Role == "tool" {
			state := "verbatim"
			if e.Mark() != nil {
				state = "masked"
			}
			out = append(out, names[e.Message.ToolCallID]+":"+state)
		}
	}
	return out
}

// TestMaskExcludeTools: with exclude_tools [read_file], the mask strategy masks the old search
// results and leaves every read_file result verbatim; without it, old read_file results are
// masked too.
func TestMaskExcludeTools(t *testing.T) {
	t.Parallel()
	base := compact.Settings{TokenLimit: 7000, Strategy: compact.StrategyMask}
	for _, exclude := range [][]string{nil, {"read_file"}} {
		t.Run(fmt.Sprint(exclude), func(t *testing.T) {
			t.Parallel()
			s := base
			s.Mask.ExcludeTools = exclude
			got := results(maskedThread(t, toolThread(12), s))
			readMasked, searchMasked := 0, 0
			for _, r := range got {
				switch r {
				case "read_file:masked":
					readMasked++
				case "search:masked":
					searchMasked++
				}
			}
			t.Logf("exclude_tools %v: %v", exclude, got)
			if searchMasked == 0 {
				t.Fatalf("no search result masked: %v", got)
			}
			if exclude != nil && readMasked > 0 {
				t.Fatalf("exclude_tools %v: %d read_file results masked: %v", exclude, readMasked, got)
			}
			if exclude == nil && readMasked == 0 {
				t.Fatalf("without exclude_tools no read_file result masked: the test cannot tell: %v", got)
			}
		})
	}
}

// TestMaskKeepToolResults: keep_tool_results N keeps exactly the newest N results verbatim and
// masks every older one, on the mask and hybrid strategies, whatever the kept window.
func TestMaskKeepToolResults(t *testing.T) {
	t.Parallel()
	for _, strategy := range []string{compact.StrategyMask, compact.StrategyHybrid} {
		for _, n := range []int{1, 3, 5} {
			t.Run(fmt.Sprint(strategy, n), func(t *testing.T) {
				t.Parallel()
				s := compact.Settings{TokenLimit: 16000, Strategy: strategy, Mask: compact.MaskSettings{KeepToolResults: n}}
				got := results(maskedThread(t, toolThread(12), s))
				if len(got) != 12 {
					t.Fatalf("%d results in the active context, want 12: %v", len(got), got)
				}
				for i, r := range got {
					if want := i >= len(got)-n; strings.HasSuffix(r, ":verbatim") != want {
						t.Fatalf("keep_tool_results %d: result %d is %s: %v", n, i, r, got)
					}
				}
			})
		}
	}
}

// TestMaskKnobsPerThread: the mask knobs stored on a thread apply to its compactions, over the
// compactor's settings, and another thread keeps the compactor's.
func TestMaskKnobsPerThread(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	st, _ := storetest.Open(t)
	for _, id := range []string{"knobbed", "plain"} {
		if _, err := st.Append(ctx, id, toolThread(12), memory.AppendOptions{Model: "gpt-4o"}); err != nil {
			t.Fatal(err)
		}
	}
	two := 2
	if err := compact.SaveThreadSettings(ctx, st, "knobbed", compact.ThreadSettings{Mask: &compact.ThreadMask{KeepToolResults: &two}}); err != nil {
		t.Fatal(err)
	}
	c := compact.New(st, storetest.ExtractiveCascade(t, st), compact.Settings{TokenLimit: 16000, Strategy: compact.StrategyMask})
	verbatim := map[string]int{}
	for _, id := range []string{"knobbed", "plain"} {
		rep, err := c.Compact(ctx, id, compact.Options{Force: true})
		if err != nil {
			t.Fatal(err)
		}
		a, err := st.Active(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range results(a) {
			if strings.HasSuffix(r, ":verbatim") {
				verbatim[id]++
			}
		}
		t.Logf("%s: %s, %d verbatim", id, rep.Status, verbatim[id])
	}
	if verbatim["knobbed"] != 2 || verbatim["plain"] != 12 {
		t.Fatalf("verbatim results %v, want knobbed 2 (its keep_tool_results), plain 12", verbatim)
	}
	neg := -1
	if err := compact.SaveThreadSettings(ctx, st, "plain", compact.ThreadSettings{KeepTurns: &neg}); err == nil ||
		err.Error() != `thread "plain": keep_turns -1 must not be negative (0: off)` {
		t.Fatalf("a negative keep_turns: %v", err)
	}
}
