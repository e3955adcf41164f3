package serve_test

import (
	"context"
	"encoding/json"
	"html"
	"net/http"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
)

// TestPageAndAPIRedactInContext: the thread's page, /api/threads/{id}/messages and /api/search
// show what a summarizing provider would have seen: a password typed alone after a request for
// it, both halves of a token cut by the end of a message, and a secret in a content part, a tool
// call's arguments, a tool's name and a message's name are redacted. Before, the page showed 6
// of the 7, the messages route 7, and a search for "deploy" the token's second half.
func TestPageAndAPIRedactInContext(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	const token = "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12xy"
	parts, _ := json.Marshal([]map[string]string{{"type": "text", "text": "deploy notes"}, {"type": "text", "text": "db password=Lk9#Wq2Zr7Tb"}})
	call := chat.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{{ID: "call_1", Type: "function",
		Function: chat.FunctionCall{Name: "deploy_glpat-Xy7Zq2Wv9Ut4Sr8Pq1No", Arguments: `{"env":"prod","api_key":"Zx4Vb8Nm2Qw6Er1Ty5Ui"}`}}}}
	res := chat.TextMessage("tool", "deploy done")
	res.ToolCallID = "call_1"
	named := chat.TextMessage("user", "deploy the release")
	named.Name = "xoxb-2931847561-8273645102-Qk7Lm2Vb9Tz4Rk8Wc1Yd5Fh3"
	msgs := []chat.Message{
		chat.TextMessage("assistant", "Please type your password."),
		chat.TextMessage("user", "Qm4!Tz8Wr2Lp"),
		chat.TextMessage("user", "here is the token "+token[:17]),
		chat.TextMessage("user", token[17:]+" deploy"),
		{Role: "user", Content: parts},
		call, res, named,
	}
	pieces := []string{"Qm4!Tz8Wr2Lp", token[4:17], token[17:], "Lk9#Wq2Zr7Tb", "Zx4Vb8Nm2Qw6Er1Ty5Ui", "Xy7Zq2Wv9Ut4Sr8Pq1No", "Qk7Lm2Vb9Tz4Rk8Wc1Yd5Fh3"}
	if _, err := e.store.Append(context.Background(), "s", msgs, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	for _, path := range []string{"/threads/s", "/api/threads/s/messages", "/api/threads/s/messages?from=2&to=2", "/api/threads/s/messages?from=4&to=4",
		"/api/search?q=Qm4*&thread=s", "/api/search?q=deploy&thread=s", "/api/search?q=R4nD0m*&thread=s"} {
		code, body, _ := e.get(path)
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", path, code, body)
		}
		shown := 0
		for _, p := range pieces {
			if strings.Contains(body, p) || strings.Contains(body, html.EscapeString(p)) {
				shown++
				t.Errorf("%s shows %q", path, p)
			}
		}
		t.Logf("%s: %d of %d secrets shown", path, shown, len(pieces))
	}
	_, body, _ := e.get("/api/threads/s/messages?from=2&to=2")
	if !strings.Contains(body, "[REDACTED:reply_secret]") {
		t.Errorf("the reply to a request for a password is not marked: %s", body)
	}
}
