package memory_test

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
)

// An entry marked cleared (Entry.Marked) clears an OpenAI-format message's reasoning members and an Anthropic
// original's thinking blocks and tool_use inputs, keeps its text, ids and names, and changes
// nothing of the message it was given.
func TestMarkedCleared(t *testing.T) {
	orig := `{"role":"assistant","content":[{"type":"thinking","thinking":"hmm","signature":"s"},{"type":"redacted_thinking","data":"x"},` +
		`{"type":"text","text":"Reading it."},{"type":"tool_use","id":"toolu_1","name":"read_file","input":{"path":"a.go"}}]}`
	m := chat.Message{Role: "assistant", Content: json.RawMessage(`"Reading it."`),
		ToolCalls: []chat.ToolCall{{ID: "toolu_1", Type: "function", Function: chat.FunctionCall{Name: "read_file", Arguments: `{"path":"a.go"}`}}},
		Extra:     map[string]json.RawMessage{"reasoning_content": json.RawMessage(`"hmm"`), memory.AnthropicKey: json.RawMessage(orig)}}

	clear := func(c memory.Cleared) chat.Message {
		c.Tokens = 7
		e := memory.Entry{Seq: 3, Tokens: 40, Message: m}.Marked(&memory.Mark{Cleared: &c})
		if e.Tokens != 7 || e.Mark() == nil || e.Mark().Cleared == nil || e.Mark().Cleared.Seq != c.Seq {
			t.Fatalf("cleared entry: %d tokens, mark %+v", e.Tokens, e.Mark())
		}
		return e.Message
	}
	got := clear(memory.Cleared{Seq: 3, Inputs: true, Thinking: true})
	if got.ToolCalls[0].ID != "toolu_1" || got.ToolCalls[0].Function.Name != "read_file" || got.ToolCalls[0].Function.Arguments != memory.ClearedArgs(15) {
		t.Fatalf("tool call %+v", got.ToolCalls[0])
	}
	if _, ok := got.Extra["reasoning_content"]; ok {
		t.Fatal("reasoning_content kept")
	}
	a := string(got.Extra[memory.AnthropicKey])
	if strings.Contains(a, "thinking") || strings.Contains(a, "a.go") || !strings.Contains(a, `"Reading it."`) || !strings.Contains(a, `"toolu_1"`) ||
		!strings.Contains(a, `"cleared":"tool input cleared`) {
		t.Fatalf("anthropic original %s", a)
	}
	if got.Text() != "Reading it." {
		t.Fatalf("text %q", got.Text())
	}
	// The message given is unchanged.
	if m.ToolCalls[0].Function.Arguments != `{"path":"a.go"}` || string(m.Extra[memory.AnthropicKey]) != orig || m.Extra["reasoning_content"] == nil {
		t.Fatal("Marked changed the message it was given")
	}
	// Thinking alone keeps the inputs.
	th := clear(memory.Cleared{Seq: 3, Thinking: true})
	if th.ToolCalls[0].Function.Arguments != `{"path":"a.go"}` || !strings.Contains(string(th.Extra[memory.AnthropicKey]), "a.go") ||
		strings.Contains(string(th.Extra[memory.AnthropicKey]), "thinking") {
		t.Fatalf("thinking alone: %+v %s", th.ToolCalls, th.Extra[memory.AnthropicKey])
	}
}
