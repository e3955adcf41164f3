package mcpserver_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/mcpserver"
)

// contextSecrets is a conversation with a secret in each field a tool shows, and secrets that
// only the conversation shows: the password typed alone after a request for it, a token cut in
// two by the end of a message. The pieces must never be shown unless the server is raw.
func contextSecrets() ([]chat.Message, []string) {
	const token = "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12xy"
	parts, _ := json.Marshal([]map[string]string{{"type": "text", "text": "deploy notes"}, {"type": "text", "text": "db password=Lk9#Wq2Zr7Tb"}})
	call := chat.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{{ID: "call_1", Type: "function",
		Function: chat.FunctionCall{Name: "deploy", Arguments: `{"env":"prod","api_key":"Zx4Vb8Nm2Qw6Er1Ty5Ui"}`}}}}
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
	return msgs, []string{"Qm4!Tz8Wr2Lp", token[4:17], token[17:], "Lk9#Wq2Zr7Tb", "Zx4Vb8Nm2Qw6Er1Ty5Ui", "Qk7Lm2Vb9Tz4Rk8Wc1Yd5Fh3"}
}

// TestToolsRedactInContext: memory_read and memory_search show what a summarizing provider
// would have seen: the reply to a request for a password and a token split over two messages
// are redacted too (before, memory_read showed the password and both halves of the token, and
// memory_search the password), and so is a secret in a content part, a tool call's arguments
// and a message's name. With --raw, every piece is shown.
func TestToolsRedactInContext(t *testing.T) {
	msgs, pieces := contextSecrets()
	for _, raw := range []bool{false, true} {
		cs, _ := serveThread(t, mcpserver.Options{Thread: "t", Raw: raw}, msgs...)
		var read mcpserver.ReadOutput
		if e := call(t, cs, "memory_read", map[string]any{"from_seq": 1, "to_seq": len(msgs)}, &read); e != "" {
			t.Fatal(e)
		}
		readJSON, _ := json.Marshal(read)
		var shown strings.Builder
		shown.Write(readJSON)
		for _, q := range []string{"Qm4*", "deploy", "ghp*", "R4nD0m*", "password", "Zx4Vb8Nm2Qw6Er1Ty5Ui", "xoxb*", "api_key"} {
			var found mcpserver.SearchOutput
			if e := call(t, cs, "memory_search", map[string]any{"query": q}, &found); e != "" {
				t.Fatal(e)
			}
			b, _ := json.Marshal(found)
			shown.Write(b)
		}
		// Each message read alone: its neighbours are read by the server.
		for seq := 1; seq <= len(msgs); seq++ {
			var one mcpserver.ReadOutput
			if e := call(t, cs, "memory_read", map[string]any{"from_seq": seq, "to_seq": seq}, &one); e != "" {
				t.Fatal(e)
			}
			b, _ := json.Marshal(one)
			shown.Write(b)
		}
		left := 0
		for _, p := range pieces {
			if strings.Contains(shown.String(), p) || strings.Contains(shown.String(), strings.Trim(string(must(json.Marshal(p))), `"`)) {
				left++
				if !raw {
					t.Errorf("a tool showed %q", p)
				}
			}
		}
		if raw && left != len(pieces) {
			t.Errorf("raw: %d of %d pieces shown, want all", left, len(pieces))
		}
		if !raw && !strings.Contains(string(readJSON), "[REDACTED:reply_secret]") {
			t.Errorf("memory_read did not mark the reply to the request for a password: %s", readJSON)
		}
		t.Logf("raw %v: %d of %d secrets shown", raw, left, len(pieces))
	}
}
