package compact_test

import (
	"bytes"
	"context"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestOversizedNewestResultIsCut: a tool result larger than the whole limit (an agent's one
// huge log read, the thread's newest unit) is cut in the view under the default settings, so
// the thread goes on; the history keeps it whole, and the user's question stays in the view
// under every on_failure, including fit (which used to leave it out as an older unit).
func TestOversizedNewestResultIsCut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	huge := strings.Repeat("line of a very long log output 0123456789\n", 2000)
	for _, onFailure := range []string{"", compact.OnFailureKeep, compact.OnFailureFit} {
		t.Run("on_failure="+onFailure, func(t *testing.T) {
			s, _ := storetest.Open(t)
			msgs := []chat.Message{chat.TextMessage("system", "You are an agent."), chat.TextMessage("user", "why does the build fail? read the log"),
				{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "read", Arguments: `{}`}}}},
				{Role: "tool", ToolCallID: "c1", Content: storetest.MustJSON(huge)}}
			if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			hist := exportAll(t, s, "t")
			c := compact.New(s, storetest.FailingCascade(s), compact.Settings{TokenLimit: 2048, OnFailure: onFailure})
			rep, err := c.Compact(ctx, "t", compact.Options{Emergency: true})
			if err != nil || rep.Status != memory.StatusApplied || rep.View == nil || len(rep.View.Cut) != 1 {
				t.Fatalf("compact: %+v, %v; want applied with the result cut", rep, err)
			}
			after, _ := s.Active(ctx, "t")
			checkActive(t, after, "system", 2048)
			var user bool
			for _, e := range after.Entries {
				user = user || e.Message.Text() == "why does the build fail? read the log"
			}
			if !user {
				t.Fatal("the user's question was left out of the view")
			}
			last := after.Entries[len(after.Entries)-1]
			if text := last.Message.Text(); !strings.Contains(text, "bytes cut to fit the context window") || last.Message.ToolCallID != "c1" {
				t.Fatalf("cut result %q lacks its marker or its call id", text[:min(len(text), 200)])
			}
			if !bytes.Equal(exportAll(t, s, "t"), hist) {
				t.Fatal("the history changed")
			}
			checkStoredCounts(t, s, "t")
		})
	}
}
