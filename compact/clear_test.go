package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/lifesim"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// thinkingThread is toolThread with long arguments and a reasoning_content on every call.
func thinkingThread(turns int) []chat.Message {
	msgs := toolThread(turns)
	for i, m := range msgs {
		if len(m.ToolCalls) == 0 {
			continue
		}
		m.ToolCalls = []chat.ToolCall{m.ToolCalls[0]}
		m.ToolCalls[0].Function.Arguments = fmt.Sprintf(`{"path": "src/file%d.go", "pattern": %q}`, i, strings.Repeat("needle ", 60))
		m.Extra = map[string]json.RawMessage{"reasoning_content": json.RawMessage(fmt.Sprintf(`"I should look at file %d next."`, i))}
		msgs[i] = m
	}
	return msgs
}

// TestMaskClearToolInputsAndThinking: clear_tool_inputs replaces the arguments of the old tool
// calls by a placeholder in the view (id and name kept, the newest unit's calls whole, history
// whole), clear_thinking drops their reasoning_content; every fact of the arguments is kept or
// named dropped. Without the knobs the calls stay as they were.
func TestMaskClearToolInputsAndThinking(t *testing.T) {
	t.Parallel()
	for _, on := range []bool{false, true} {
		t.Run(fmt.Sprint("clear=", on), func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			st, _ := storetest.Open(t)
			msgs := thinkingThread(12)
			if _, err := st.Append(ctx, "t", msgs, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
				t.Fatal(err)
			}
			s := compact.Settings{TokenLimit: 9000, Strategy: compact.StrategyMask,
				Mask: compact.MaskSettings{ClearToolInputs: on, ClearThinking: on}}
			c := compact.New(st, storetest.ExtractiveCascade(t, st), s)
			rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if err != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("compact: %s, %v (%s)", rep.Status, err, rep.Detail)
			}
			a, err := st.Active(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			cleared, whole, thinking := 0, 0, 0
			for _, e := range a.Entries {
				for k, tc := range e.Message.ToolCalls {
					orig := msgs[e.Seq-1].ToolCalls[k]
					if tc.ID != orig.ID || tc.Function.Name != orig.Function.Name {
						t.Fatalf("seq %d: call %s %s, want %s %s", e.Seq, tc.ID, tc.Function.Name, orig.ID, orig.Function.Name)
					}
					switch tc.Function.Arguments {
					case orig.Function.Arguments:
						whole++
					case fmt.Sprintf(`{"cleared":"tool input cleared to save context: %d bytes, kept in history"}`, len(orig.Function.Arguments)):
						cleared++
					default:
						t.Fatalf("seq %d: arguments %s", e.Seq, tc.Function.Arguments)
					}
				}
				if _, ok := e.Message.Extra["reasoning_content"]; ok {
					thinking++
				}
			}
			t.Logf("clear %v: %d calls cleared, %d whole, %d with reasoning; %s", on, cleared, whole, thinking, rep.Detail)
			if !on && (cleared > 0 || thinking != 12) {
				t.Fatalf("knobs off: %d calls cleared, %d of 12 with reasoning", cleared, thinking)
			}
			if on && (cleared == 0 || whole == 0 || thinking != whole) {
				t.Fatalf("knobs on: %d calls cleared, %d whole (the newest), %d with reasoning (want only the whole ones)", cleared, whole, thinking)
			}
			hist, err := st.History(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			for i, e := range hist {
				if len(e.Message.ToolCalls) > 0 && e.Message.ToolCalls[0].Function.Arguments != msgs[i].ToolCalls[0].Function.Arguments {
					t.Fatalf("history seq %d changed", e.Seq)
				}
			}
			if lost, err := lifesim.Losses(ctx, st, "t", originalFacts(t, st, "t")); err != nil || len(lost) > 0 {
				t.Fatalf("facts lost unnamed: %v, %v", lost, err)
			}
		})
	}
}
