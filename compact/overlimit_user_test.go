package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestOverLimitNamesLongUserMessage: a task statement longer than the limit, then tool units.
// No summary can bring the context under the limit and on_failure keep cuts only results, so
// the error must name the newest user message among what keeps it over, not only the pinned
// messages (9 tokens here) and the newest unit.
func TestOverLimitNamesLongUserMessage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	msgs := []chat.Message{chat.TextMessage("system", "You are an agent."),
		chat.TextMessage("user", "Please fix this: "+strings.Repeat("word ", 2600))}
	for k := range 12 {
		args, _ := json.Marshal(map[string]string{"path": fmt.Sprintf("/src/f%d.go", k)})
		call := chat.TextMessage("assistant", "")
		call.Content = nil
		call.ToolCalls = []chat.ToolCall{{ID: fmt.Sprintf("c%d", k), Type: "function", Function: chat.FunctionCall{Name: "read_file", Arguments: string(args)}}}
		res := chat.TextMessage("tool", strings.Repeat("line of code ", 60))
		res.ToolCallID = fmt.Sprintf("c%d", k)
		msgs = append(msgs, call, res)
	}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 2048})
	_, err := c.Compact(ctx, "t", compact.Options{})
	if err == nil || !strings.Contains(err.Error(), "the newest user message (seq 2, ") {
		t.Fatalf("error %v does not name the newest user message", err)
	}
}
