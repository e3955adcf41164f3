package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
)

// Messages of a turn with two parallel tool calls, as a request's JSON.
const (
	sUser    = `{"role":"user","content":"book it"}`
	sCalls   = `{"role":"assistant","content":null,"tool_calls":[{"id":"A","type":"function","function":{"name":"f","arguments":"{}"}},{"id":"B","type":"function","function":{"name":"g","arguments":"{}"}}]}`
	sResultA = `{"role":"tool","tool_call_id":"A","content":"a done"}`
	sResultB = `{"role":"tool","tool_call_id":"B","content":"b done"}`
)

func chatBody(msgs ...string) string {
	return `{"model":"m","messages":[` + strings.Join(msgs, ",") + `]}`
}

// TestUnansweredCallRefused: a request whose history leaves a tool call without its result, as
// the conversation moves on or at its end, is answered 400 naming the call and the message,
// and nothing of it is stored or sent upstream. Before, both were accepted: the call B stayed
// unanswered for good in the thread, and the model was asked to go on past it.
func TestUnansweredCallRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	for _, tc := range []struct {
		name, body, param, says string
	}{
		{"moves on", chatBody(sUser, sCalls, sResultA, sUser), "messages[3]", `tool call "B" of the message 2 before it has no result`},
		{"at the end", chatBody(sUser, sCalls, sResultA), "messages[1]", `messages[1]: tool call "B" has no result`},
	} {
		status, body, _ := e.post("/t/"+strings.ReplaceAll(tc.name, " ", "-")+"/v1/chat/completions", tc.body)
		var v struct {
			Error struct {
				Message, Param, Code string
			} `json:"error"`
		}
		json.Unmarshal([]byte(body), &v)
		if status != 400 || v.Error.Code != "invalid_message" || v.Error.Param != tc.param || !strings.Contains(v.Error.Message, tc.says) {
			t.Fatalf("%s: %d %s; want 400 invalid_message at %s saying %q", tc.name, status, body, tc.param, tc.says)
		}
		if _, err := e.store.History(context.Background(), strings.ReplaceAll(tc.name, " ", "-")); !errors.Is(err, memory.ErrThreadNotFound) {
			t.Fatalf("%s: the thread was stored (%v)", tc.name, err)
		}
	}
	if requests, _ := e.up.stats(); requests != 0 {
		t.Fatalf("%d requests sent upstream, want none", requests)
	}

	// The model calls two tools; the agent answers one and asks again: refused, whether it
	// resends its history or sends only the result. With both results, the turn goes on.
	e.up.set(func(u *upstream) {
		u.reply = func(n int, _ []chat.Message) chat.Message {
			if n > 1 {
				return chat.TextMessage("assistant", "booked")
			}
			var m chat.Message
			json.Unmarshal([]byte(sCalls), &m)
			return m
		}
	})
	if status, body, _ := e.post("/t/w/v1/chat/completions", chatBody(sUser)); status != 200 {
		t.Fatalf("first turn: %d %s", status, body)
	}
	for _, body := range []string{chatBody(sUser, sCalls, sResultA), chatBody(sResultA)} {
		if status, got, _ := e.post("/t/w/v1/chat/completions", body); status != 400 || !strings.Contains(got, `tool call \"B\" has no result`) {
			t.Fatalf("%s: %d %s; want 400 naming B", body, status, got)
		}
	}
	if status, body, _ := e.post("/t/w/v1/chat/completions", chatBody(sUser, sCalls, sResultA, sResultB)); status != 200 {
		t.Fatalf("with both results: %d %s", status, body)
	}
	if h := e.history("w"); len(h) != 5 || h[4] != "assistant: booked" {
		t.Fatalf("history %q", h)
	}
}
