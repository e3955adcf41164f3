package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"slices"

	"github.com/memcascade/memcascade/chat"
)

// Cleared is an assistant message a view shows without its tool calls' arguments (Inputs) or
// without its reasoning (Thinking): compaction.mask's clear_tool_inputs and clear_thinking.
// Its JSON is that of the stored view column.
type Cleared struct {
	Seq        int64 `json:"seq"`
	Inputs     bool  `json:"inputs,omitempty"`
	Thinking   bool  `json:"thinking,omitempty"`
	Tokens     int   `json:"tokens"`
	OrigTokens int   `json:"orig_tokens"`
}

// anthropicKey is the member of a chat message's Extra that holds its Anthropic original (the
// value of serve/anthropic.Key, which this package cannot import).
const anthropicKey = "anthropic"

// thinkingMembers are the members of an OpenAI-format message that hold its reasoning.
var thinkingMembers = []string{"reasoning_content", "reasoning", "thinking"}

// thinkingBlocks are the content blocks of an Anthropic message that hold its reasoning.
var thinkingBlocks = []string{"thinking", "redacted_thinking"}

// clearedArgs is the placeholder of a tool call's arguments of n bytes: a JSON object, as the
// Messages API wants a tool_use input.
func clearedArgs(n int) string {
	return fmt.Sprintf(`{"cleared":"tool input cleared to save context: %d bytes, kept in history"}`, n)
}

// apply returns m as the view shows it: its tool calls' arguments replaced by clearedArgs when
// c.Inputs, its reasoning members and blocks gone when c.Thinking. m itself is not changed.
func (c Cleared) apply(m chat.Message) chat.Message {
	if c.Inputs && len(m.ToolCalls) > 0 {
		calls := slices.Clone(m.ToolCalls)
		for i := range calls {
			calls[i].Function.Arguments = clearedArgs(len(calls[i].Function.Arguments))
			calls[i].Function.Extra = nil
		}
		m.ToolCalls = calls
	}
	if m.Extra == nil {
		return m
	}
	m.Extra = maps.Clone(m.Extra)
	if c.Thinking {
		for _, k := range thinkingMembers {
			delete(m.Extra, k)
		}
	}
	if orig, ok := m.Extra[anthropicKey]; ok {
		if out, ok := clearAnthropic(orig, c); ok {
			m.Extra[anthropicKey] = out
		} else {
			delete(m.Extra, anthropicKey) // written from the chat message instead
		}
	}
	return m
}

// clearAnthropic returns an Anthropic assistant message object with the inputs of its tool_use
// blocks cleared (c.Inputs) and its thinking blocks left out (c.Thinking); false when it is not
// a message object with a content array.
func clearAnthropic(orig json.RawMessage, c Cleared) (json.RawMessage, bool) {
	var msg map[string]json.RawMessage
	if json.Unmarshal(orig, &msg) != nil {
		return nil, false
	}
	content := bytes.TrimSpace(msg["content"])
	if len(content) == 0 || content[0] != '[' {
		return orig, true // a string content: no block to clear
	}
	var blocks []map[string]json.RawMessage
	if json.Unmarshal(content, &blocks) != nil {
		return nil, false
	}
	out := blocks[:0]
	for _, b := range blocks {
		var typ string
		json.Unmarshal(b["type"], &typ)
		switch {
		case c.Thinking && slices.Contains(thinkingBlocks, typ):
			continue
		case c.Inputs && typ == "tool_use":
			b["input"] = json.RawMessage(clearedArgs(len(bytes.TrimSpace(b["input"]))))
		}
		out = append(out, b)
	}
	raw, err := json.Marshal(out)
	if err != nil {
		return nil, false
	}
	msg["content"] = raw
	if raw, err = json.Marshal(msg); err != nil {
		return nil, false
	}
	return raw, true
}
