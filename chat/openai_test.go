package chat_test

import (
	"encoding/json"
	"testing"

	"github.com/memcascade/memcascade/chat"
)

func TestOpenAIConversion(t *testing.T) {
	t.Parallel()
	in := `{"role":"assistant","content":null,"tool_calls":[{"id":"c1","type":"function","function":{"name":"get","arguments":"{\"id\":1}"}}]}`
	var m chat.Message
	if err := json.Unmarshal([]byte(in), &m); err != nil {
		t.Fatal(err)
	}
	om, err := m.OpenAI()
	if err != nil {
		t.Fatal(err)
	}
	if len(om.ToolCalls) != 1 || om.ToolCalls[0].Function.Name != "get" || om.ToolCalls[0].ID != "c1" {
		t.Fatalf("tool call lost: %+v", om)
	}
	back, err := chat.FromOpenAI(om)
	if err != nil {
		t.Fatal(err)
	}
	if back.Role != "assistant" || len(back.ToolCalls) != 1 || back.ToolCalls[0].Function.Arguments != `{"id":1}` {
		t.Fatalf("round trip through go-openai: %+v", back)
	}
}
