package serve_test

import (
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
)

// TestOversizedToolResultGoesOn: under the default settings, a tool result larger than the
// whole limit is cut in what the model gets (the history keeps it whole) and the turn is
// answered; the user's question is in what the model gets. A thread that cannot fit at all (a
// system prompt over the limit) is answered 400 with an error that names on_failure: fit.
func TestOversizedToolResultGoesOn(t *testing.T) {
	t.Parallel()
	const limit = 2048
	e := newEnv(t, envOptions{limit: limit})
	huge := strings.Repeat("line of a very long log output 0123456789\n", 1500)
	msgs := []map[string]any{
		{"role": "system", "content": "You are an agent."},
		{"role": "user", "content": "why does the build fail?"},
		{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "read_log", "arguments": "{}"}}}},
		{"role": "tool", "tool_call_id": "c1", "content": huge},
	}
	body, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
	for turn := 0; turn < 2; turn++ {
		status, out, _ := e.post("/t/big/v1/chat/completions", string(body))
		if status != http.StatusOK {
			t.Fatalf("turn %d: %d %s", turn, status, out)
		}
		if _, maxTokens := e.up.stats(); maxTokens > limit {
			t.Fatalf("the upstream got %d tokens, over %d", maxTokens, limit)
		}
		var last []chat.Message
		e.up.set(func(u *upstream) { last = u.lastMsgs })
		var asked bool
		for _, m := range last {
			asked = asked || m.Text() == "why does the build fail?"
		}
		if !asked {
			t.Fatal("the user's question was not sent")
		}
		var resp struct {
			Choices []struct {
				Message map[string]any `json:"message"`
			} `json:"choices"`
		}
		json.Unmarshal([]byte(out), &resp)
		msgs = append(msgs, resp.Choices[0].Message, map[string]any{"role": "user", "content": "and now?"})
		body, _ = json.Marshal(map[string]any{"model": "m", "messages": msgs})
	}
	if h := e.history("big"); len(h) < 4 || !strings.Contains(h[3], huge[:2000]) || len(h[3]) < len(huge) {
		t.Fatal("the history does not keep the tool result whole")
	}

	big, _ := json.Marshal(map[string]any{"model": "m", "messages": []any{
		map[string]any{"role": "system", "content": huge}, map[string]any{"role": "user", "content": "hi"}}})
	status, out, _ := e.post("/t/nofit/v1/chat/completions", string(big))
	if status != http.StatusBadRequest || errorCode(t, out) != "context_length_exceeded" || !strings.Contains(out, "on_failure: fit") {
		t.Fatalf("unfittable thread: %d %s; want 400 context_length_exceeded naming on_failure: fit", status, out)
	}
}
