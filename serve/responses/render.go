package responses

import (
	"bytes"
	"encoding/json"
	"slices"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/jsontext"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
)

// Render writes the request with the active context as its input (and instructions), every
// other member as the agent sent it, in its order; previous_response_id is left out, as the
// active context is the whole conversation.
//
// Each message is written from its original items: the request's own where the active
// context's start or end is the request's (in the usual turn, all of it that was not
// compacted), else the stored ones. A compaction's summary is a developer message item where
// it stands; a message the view masked or cut is written from its text, and one with no
// original (written by serve, or by another dialect) is converted. The instructions are the
// request's when the active context holds them. serve's note (t.Notice), when there is one,
// is the last item, a developer message. A turn that forwards the request unchanged
// (dialect.Turn.SentBody), without previous_response_id, is the request's own bytes.
func (Dialect) Render(t dialect.Turn, active []memory.Entry, enc []json.RawMessage) ([]byte, error) {
	if _, prev := t.Fields["previous_response_id"]; !prev {
		if b := t.SentBody(); b != nil {
			return b, nil
		}
	}
	wires := make([][]byte, len(active))
	origs := make([][]byte, len(active)) // the stored originals, of changed messages too
	for i, e := range active {
		switch {
		case e.CompactionID != 0:
			continue
		case e.Message.Extra != nil:
			origs[i] = e.Message.Extra[Key]
		case i < len(enc):
			origs[i] = member(enc[i], Key)
		}
		if e.Mark() == nil {
			wires[i] = origs[i]
		}
	}
	// The request's own items where the active context's start and end are the request's.
	for ai, ri := 0, 0; ai < len(active) && ri < len(t.Messages) && same(active[ai], wires[ai], t.Messages[ri]); ai, ri = ai+1, ri+1 {
		wires[ai] = t.Messages[ri].Extra[Key]
	}
	for ai, ri := len(active)-1, len(t.Messages)-1; ai >= 0 && ri >= 0 && same(active[ai], wires[ai], t.Messages[ri]); ai, ri = ai-1, ri-1 {
		wires[ai] = t.Messages[ri].Extra[Key]
	}
	var instructions []byte
	// The request's input a string: its one item is written back as that string (see below), so
	// the items are counted; else each original array's items are written as they are in it,
	// not split (a message's items are one piece of the input).
	strInput := len(t.Fields["input"]) > 0 && t.Fields["input"][0] == '"'
	items := make([][]byte, 0, len(active)+4)
	for i, e := range active {
		w := wires[i]
		switch {
		case e.CompactionID != 0:
			items = append(items, messageItem(chat.RoleDeveloper, "input_text", e.Text()))
		case len(w) > 0 && w[0] == '"':
			instructions = w
		case len(w) > 0 && w[0] == '[' && strInput:
			items = append(items, splitArray(w)...)
		case len(w) > 0 && w[0] == '[':
			if in := inner(w); len(in) > 0 {
				items = append(items, in)
			}
		default:
			items = append(items, convert(e, origs[i])...)
		}
	}
	if n := t.Notice; n != nil {
		// serve's note: the last item, a developer message (a user one for a note of role user).
		role := chat.RoleDeveloper
		if n.Role == chat.RoleUser {
			role = chat.RoleUser
		}
		items = append(items, messageItem(role, "input_text", n.Text()))
	}
	input := wrap(items)
	if orig := t.Fields["input"]; len(orig) > 0 && orig[0] == '"' && len(items) == 1 && bytes.Equal(items[0], t.Messages[len(t.Messages)-1].Extra[Key][1:len(t.Messages[len(t.Messages)-1].Extra[Key])-1]) {
		input = orig // the agent's string, as sent
	}
	var out bytes.Buffer
	out.Grow(len(input) + 1024)
	out.WriteByte('{')
	n := 0
	write := func(k string, v []byte) {
		if n > 0 {
			out.WriteByte(',')
		}
		n++
		out.Write(jsontext.AppendString(nil, k))
		out.WriteByte(':')
		out.Write(v)
	}
	wroteInstr := false
	for _, k := range t.Order {
		switch k {
		case "previous_response_id":
			continue
		case "input":
			write(k, input)
		case "instructions":
			if instructions != nil {
				write(k, instructions)
				wroteInstr = true
			} else {
				write(k, t.Fields[k])
			}
		default:
			write(k, t.Fields[k])
		}
	}
	if instructions != nil && !wroteInstr {
		write("instructions", instructions)
	}
	out.WriteByte('}')
	return out.Bytes(), nil
}

// same reports whether the stored entry e (its original w) is the request's message m.
func same(e memory.Entry, w []byte, m chat.Message) bool {
	if e.CompactionID != 0 || e.Mark() != nil || m.Extra[Key] == nil {
		return false
	}
	if w != nil && bytes.Equal(w, m.Extra[Key]) {
		return true
	}
	a := e.Message
	return a.Role == m.Role && a.ToolCallID == m.ToolCallID &&
		slices.EqualFunc(a.ToolCalls, m.ToolCalls, func(x, y chat.ToolCall) bool {
			return x.ID == y.ID && x.Function.Name == y.Function.Name
		}) && (a.Content != nil && bytes.Equal(a.Content, m.Content) || e.Text() == m.Text())
}

// messageItem is {"type":"message","role":role,"content":[{"type":partType,"text":s}]}.
func messageItem(role, partType, s string) []byte {
	b := []byte(`{"type":"message","role":`)
	b = jsontext.AppendString(b, role)
	b = append(b, `,"content":[{"type":`...)
	b = jsontext.AppendString(b, partType)
	b = append(b, `,"text":`...)
	b = jsontext.AppendString(b, s)
	return append(b, `}]}`...)
}

// convert writes a message with no original (or one the view changed) as items, from its text
// and tool calls.
func convert(e memory.Entry, orig []byte) [][]byte {
	m := e.Message
	text := e.Text()
	custom := bytes.Contains(orig, []byte(`"type":"custom_tool_call`))
	switch m.Role {
	case chat.RoleAssistant:
		var items [][]byte
		if text != "" || len(m.ToolCalls) == 0 {
			items = append(items, messageItem(chat.RoleAssistant, "output_text", text))
		}
		for _, c := range m.ToolCalls {
			b, _ := json.Marshal(map[string]string{"type": "function_call", "call_id": c.ID, "name": c.Function.Name, "arguments": c.Function.Arguments})
			if c.Type == customCall {
				b, _ = json.Marshal(map[string]string{"type": "custom_tool_call", "call_id": c.ID, "name": c.Function.Name, "input": c.Function.Arguments})
			}
			items = append(items, b)
		}
		return items
	case chat.RoleTool:
		typ := "function_call_output"
		if custom {
			typ = "custom_tool_call_output"
		}
		b, _ := json.Marshal(map[string]string{"type": typ, "call_id": m.ToolCallID, "output": text})
		return [][]byte{b}
	case chat.RoleSystem, chat.RoleDeveloper:
		return [][]byte{messageItem(m.Role, "input_text", text)}
	}
	return [][]byte{messageItem(chat.RoleUser, "input_text", text)}
}

// member returns the value of key in a JSON object (nil when absent).
func member(b []byte, key string) []byte {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	return m[key]
}

// splitArray returns the elements of a JSON array known to be valid (nil for anything else).
// inner is what a JSON array holds between its brackets, its items and the commas between
// them: nil for an empty one.
func inner(arr []byte) []byte {
	arr = bytes.TrimSpace(arr)
	if len(arr) < 2 {
		return nil
	}
	return bytes.TrimSpace(arr[1 : len(arr)-1])
}

func splitArray(b []byte) [][]byte {
	_, elems, err := dialect.ScanObject(append(append([]byte(`{"a":`), b...), '}'), "a")
	if err != nil {
		return nil
	}
	return elems
}
