package memory_test

import (
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestActiveLightLongThread: a context long enough to be read in parts at once (see
// readRange) reads as the whole read does, message for message, in order, before and after a
// compaction's view.
func TestActiveLightLongThread(t *testing.T) {
	ctx := context.Background()
	s, _ := storetest.Open(t)
	msgs := []chat.Message{chat.TextMessage(chat.RoleSystem, "You are a support agent.")}
	for i := range 5000 {
		if i%50 == 7 {
			call := fmt.Sprintf("call_%d", i)
			msgs = append(msgs,
				chat.Message{Role: chat.RoleAssistant, ToolCalls: []chat.ToolCall{{ID: call, Type: "function",
					Function: chat.FunctionCall{Name: "get_order", Arguments: fmt.Sprintf(`{"order_id":"W%06d"}`, i)}}}},
				chat.Message{Role: chat.RoleTool, ToolCallID: call, Content: []byte(fmt.Sprintf(`"order W%06d: shipped"`, i))})
			continue
		}
		msgs = append(msgs, chat.TextMessage([]string{chat.RoleUser, chat.RoleAssistant}[i%2], fmt.Sprintf("message %d about order W%06d", i, i)))
	}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	check := func(when string) {
		t.Helper()
		whole, err := s.Active(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		light, err := s.ActiveLight(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if got, want := len(light.Entries), len(whole.Entries); got != want || light.Tokens != whole.Tokens {
			t.Fatalf("%s: light read %d entries, %d tokens; whole %d, %d", when, got, light.Tokens, want, whole.Tokens)
		}
		for i, w := range whole.Entries {
			l := light.Entries[i]
			if l.Seq != w.Seq || l.Tokens != w.Tokens || l.Text() != w.Text() || l.Message.Role != w.Message.Role ||
				l.Message.ToolCallID != w.Message.ToolCallID || !slices.EqualFunc(l.Message.ToolCalls, w.Message.ToolCalls, func(a, b chat.ToolCall) bool {
				return a.ID == b.ID && a.Function.Name == b.Function.Name && a.Function.Arguments == b.Function.Arguments
			}) {
				t.Fatalf("%s: entry %d: light %+v, whole %+v", when, i, l, w)
			}
		}
	}
	check("before compaction")
	a, err := s.Active(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	c := compact.New(s, storetest.ExtractiveCascade(t, s), memory.Settings{TokenLimit: a.Tokens / 2, Strategy: memory.StrategyHybrid})
	if _, err := c.Compact(ctx, "t", compact.Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	check("after a hybrid compaction")
}
