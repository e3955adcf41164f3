package chat_test

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/corpus"
)

// TestMessageKeepsFieldsAsGiven: a message is written back as it was given: named fields that
// are null or "", a call without type or arguments, and unknown fields of a call's function.
func TestMessageKeepsFieldsAsGiven(t *testing.T) {
	t.Parallel()
	for _, in := range []string{
		`{"role":"user","content":"x","name":null}`,
		`{"role":"user","content":"x","name":""}`,
		`{"role":"user","content":"x","tool_call_id":null}`,
		`{"role":"tool","content":"x","tool_call_id":""}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"a","function":{"name":"f"}}]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":null,"function":{"name":"f","arguments":null}}]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"","function":{"name":"f","arguments":"","strict":true,"parsed":{"q":[1,2]}}}]}`,
		`{"role":"assistant","content":null,"tool_calls":[{"id":"a","type":"function","function":{"name":"f","arguments":"{}"}}]}`,
	} {
		var m chat.Message
		if err := json.Unmarshal([]byte(in), &m); err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		out, err := json.Marshal(m)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if got, want := corpus.Normalized(t, out), corpus.Normalized(t, []byte(in)); !reflect.DeepEqual(got, want) {
			t.Errorf("round trip of %s gives %s", in, out)
		}
	}
}

// TestToolResult: a tool result answers its call with its text, and marshals as OpenAI's tool
// message.
func TestToolResult(t *testing.T) {
	m := chat.ToolResult("call_1", `{"ok": true}`)
	b, err := json.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	if m.Role != chat.RoleTool || m.ToolCallID != "call_1" || m.Text() != `{"ok": true}` ||
		string(b) != `{"role":"tool","content":"{\"ok\": true}","tool_call_id":"call_1"}` {
		t.Fatalf("%+v: %s", m, b)
	}
}
