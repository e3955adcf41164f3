// Package chat holds the chat message as an agent gives it (OpenAI's chat format): Message,
// its tool calls, the tool definitions of a request, and their JSON codec, which writes a
// message back as it was given. The store keeps these messages, token counting counts them,
// and the proxy relays them.
package chat

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/memcascade/memcascade/internal/jsontext"
)

// Roles a message may have.
const (
	RoleSystem    = "system"
	RoleDeveloper = "developer"
	RoleUser      = "user"
	RoleAssistant = "assistant"
	RoleTool      = "tool"
)

// Message is one OpenAI chat message as the agent gave it. Fields this type does not model are
// kept in Extra and written back unchanged, so a message survives a round trip through the store.
// So are modelled string fields given as null or "" (name, tool_call_id): the field is "" and
// Extra keeps the value as given.
type Message struct {
	Role string
	// Content is the message's content as given: a JSON string, null, or an array of content
	// parts. It is nil when the message has no content field.
	Content    json.RawMessage
	Name       string
	ToolCalls  []ToolCall
	ToolCallID string
	// Extra holds every field not named above, as given.
	Extra map[string]json.RawMessage
}

// ToolCall is one entry of an assistant message's tool_calls.
type ToolCall struct {
	ID       string
	Type     string
	Function FunctionCall
	// Extra holds every field of the call not named above, as given.
	Extra map[string]json.RawMessage
}

// FunctionCall is the function a ToolCall invokes.
type FunctionCall struct {
	Name      string
	Arguments string
	// Extra holds every field of the function not named above, and arguments given as null or
	// "", as given.
	Extra map[string]json.RawMessage
}

// TextMessage returns a message with a plain string content.
func TextMessage(role, text string) Message {
	b, _ := json.Marshal(text) // a string always marshals
	return Message{Role: role, Content: b}
}

// ToolResult is a tool message answering the call callID with text.
func ToolResult(callID, text string) Message {
	m := TextMessage(RoleTool, text)
	m.ToolCallID = callID
	return m
}

// Text returns the message's textual content: the string content, or the text of its text parts
// joined by newlines. It is "" for null or absent content.
func (m Message) Text() string {
	return contentText(m.Content)
}

func contentText(c json.RawMessage) string {
	c = bytes.TrimSpace(c)
	if len(c) == 0 {
		return ""
	}
	switch c[0] {
	case '"':
		var s string
		if json.Unmarshal(c, &s) == nil {
			return s
		}
	case '[':
		var parts []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}
		if json.Unmarshal(c, &parts) == nil {
			var texts []string
			for _, p := range parts {
				if p.Text != "" {
					texts = append(texts, p.Text)
				}
			}
			return strings.Join(texts, "\n")
		}
	}
	return ""
}

// MarshalJSON writes the modelled fields in the usual OpenAI order, then Extra in key order.
func (m Message) MarshalJSON() ([]byte, error) {
	w := objectWriter{}
	w.buf.Grow(len(m.Content) + 256) // a large content is written once, not grown into
	w.field("role", m.Role)
	if m.Content != nil {
		w.raw("content", m.Content)
	}
	if m.Name != "" {
		w.field("name", m.Name)
	}
	if m.ToolCalls != nil {
		w.field("tool_calls", m.ToolCalls)
	}
	if m.ToolCallID != "" {
		w.field("tool_call_id", m.ToolCallID)
	}
	w.extra(m.Extra)
	return w.finish()
}

// UnmarshalJSON reads a message, keeping unknown fields in Extra. It checks the types of the
// modelled fields, not their values: the store's validation does that.
func (m *Message) UnmarshalJSON(b []byte) error {
	*m = Message{}
	var err error
	m.Extra, err = decodeObject(b, map[string]*string{"name": &m.Name, "tool_call_id": &m.ToolCallID},
		map[string]func(json.RawMessage) (bool, error){
			"role": func(v json.RawMessage) (bool, error) { return true, unmarshalString(v, &m.Role) },
			"content": func(v json.RawMessage) (bool, error) {
				m.Content = jsontext.Compact(v)
				if c := m.Content[0]; c != '"' && c != '[' && !bytes.Equal(m.Content, []byte("null")) {
					return true, fmt.Errorf("want a string, null or an array of parts")
				}
				return true, nil
			},
			"tool_calls": func(v json.RawMessage) (bool, error) {
				if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
					return false, nil // kept in Extra, written back as given
				}
				if err := json.Unmarshal(v, &m.ToolCalls); err != nil {
					return true, err
				}
				if m.ToolCalls == nil {
					m.ToolCalls = []ToolCall{}
				}
				return true, nil
			},
		})
	return err
}

// MarshalJSON writes id, type (when set) and function, then Extra in key order.
func (c ToolCall) MarshalJSON() ([]byte, error) {
	w := objectWriter{}
	w.field("id", c.ID)
	if c.Type != "" {
		w.field("type", c.Type)
	}
	w.field("function", c.Function)
	w.extra(c.Extra)
	return w.finish()
}

// UnmarshalJSON reads a tool call, keeping unknown fields, and a type given as null or "", in
// Extra.
func (c *ToolCall) UnmarshalJSON(b []byte) error {
	*c = ToolCall{}
	var err error
	c.Extra, err = decodeObject(b, map[string]*string{"type": &c.Type},
		map[string]func(json.RawMessage) (bool, error){
			"id":       func(v json.RawMessage) (bool, error) { return true, unmarshalString(v, &c.ID) },
			"function": func(v json.RawMessage) (bool, error) { return true, json.Unmarshal(v, &c.Function) },
		})
	return err
}

// MarshalJSON writes name and arguments (when set), then Extra in key order.
func (f FunctionCall) MarshalJSON() ([]byte, error) {
	w := objectWriter{}
	w.field("name", f.Name)
	if f.Arguments != "" {
		w.field("arguments", f.Arguments)
	}
	w.extra(f.Extra)
	return w.finish()
}

// UnmarshalJSON reads a function, keeping unknown fields, and arguments given as null or "", in
// Extra.
func (f *FunctionCall) UnmarshalJSON(b []byte) error {
	*f = FunctionCall{}
	var err error
	f.Extra, err = decodeObject(b, map[string]*string{"arguments": &f.Arguments},
		map[string]func(json.RawMessage) (bool, error){
			"name": func(v json.RawMessage) (bool, error) { return true, unmarshalString(v, &f.Name) },
		})
	return err
}

// decodeObject reads a JSON object and returns the fields to keep in Extra. A field named in
// strs is a string, except that null or "" goes to Extra (so it is written back as given); a
// field named in decode is read by its function, which returns false to keep the value in
// Extra; any other field goes to Extra.
func decodeObject(b []byte, strs map[string]*string, decode map[string]func(json.RawMessage) (bool, error)) (map[string]json.RawMessage, error) {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return nil, err
	}
	if fields == nil {
		return nil, fmt.Errorf("null, want an object")
	}
	var extra map[string]json.RawMessage
	for k, v := range fields {
		taken, err := false, error(nil)
		if dst, ok := strs[k]; ok && !jsontext.IsNullOrEmpty(v) {
			taken, err = true, unmarshalString(v, dst)
		} else if f, ok := decode[k]; ok {
			taken, err = f(v)
		}
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		if !taken {
			extra = setExtra(extra, k, v)
		}
	}
	return extra, nil
}

func unmarshalString(v json.RawMessage, dst *string) error {
	if bytes.Equal(bytes.TrimSpace(v), []byte("null")) {
		return nil
	}
	if err := json.Unmarshal(v, dst); err != nil {
		return fmt.Errorf("want a string")
	}
	return nil
}

func setExtra(m map[string]json.RawMessage, k string, v json.RawMessage) map[string]json.RawMessage {
	if m == nil {
		m = map[string]json.RawMessage{}
	}
	m[k] = jsontext.Compact(v)
	return m
}

// objectWriter writes a JSON object with fields in the order they are added.
type objectWriter struct {
	buf bytes.Buffer
	err error
}

func (w *objectWriter) raw(key string, v json.RawMessage) {
	if w.buf.Len() == 0 {
		w.buf.WriteByte('{')
	} else {
		w.buf.WriteByte(',')
	}
	k, _ := json.Marshal(key) // a string always marshals
	w.buf.Write(k)
	w.buf.WriteByte(':')
	w.buf.Write(v)
}

func (w *objectWriter) field(key string, v any) {
	b, err := json.Marshal(v)
	if err != nil && w.err == nil {
		w.err = fmt.Errorf("%s: %w", key, err)
	}
	w.raw(key, b)
}

func (w *objectWriter) extra(m map[string]json.RawMessage) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		w.raw(k, m[k])
	}
}

func (w *objectWriter) finish() ([]byte, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.buf.Len() == 0 {
		return []byte("{}"), nil
	}
	w.buf.WriteByte('}')
	return w.buf.Bytes(), nil
}
