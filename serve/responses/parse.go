package responses

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/jsontext"
	"github.com/memcascade/memcascade/serve/dialect"
)

// Parse reads a Responses request: model, stream, tools, instructions and input (see the
// package's doc for how they map to chat messages); every other member passes through as
// sent. A message whose items are the previous request's message at the same place, byte for
// byte, is taken from it rather than decoded again (Codex sends its whole history each turn).
func (Dialect) Parse(body []byte, prev *dialect.Sent) (dialect.Turn, error) {
	t, sc, shared, err := dialect.ScanTurn(body, "input", `{"model": ..., "input": ...}`, prev)
	if err != nil {
		return t, err
	}
	raws := sc.Elems
	// At most a message an item, and the instructions: sized once, not grown item by item.
	n := len(raws) + 1
	t.Messages, t.Params = make([]chat.Message, 0, n), make([]string, 0, n)
	hashes, elem := make([]dialect.Hash, 0, n), make([]int, 0, n)
	add := func(m chat.Message, param string, h dialect.Hash, at int) {
		t.Messages, t.Params, hashes, elem = append(t.Messages, m), append(t.Params, param), append(hashes, h), append(elem, at)
	}
	if raw, ok := t.Fields["instructions"]; ok && !bytes.Equal(raw, []byte("null")) {
		s, ok := jsontext.StringValue(raw)
		if !ok {
			return t, &dialect.BadRequest{Param: "instructions", Msg: "instructions: want a string"}
		}
		if s != "" {
			m := textMessage(chat.RoleSystem, s)
			m.Extra = map[string]json.RawMessage{Key: bytes.Clone(raw)}
			add(m, "instructions", dialect.HashBytes(raw), -1)
			if prev != nil && len(prev.Hashes) > 0 && hashes[0] == prev.Hashes[0] {
				t.Same = 1
				t.Messages[0] = prev.Msgs[0]
			}
		}
	}
	input := t.Fields["input"]
	switch {
	case len(input) > 0 && input[0] == '"':
		s, _ := jsontext.StringValue(input)
		item, _ := json.Marshal(map[string]string{"type": "message", "role": "user", "content": s})
		m := textMessage(chat.RoleUser, s)
		m.Extra = map[string]json.RawMessage{Key: wrap([][]byte{item})}
		h, i := dialect.HashBytes(input), len(t.Messages)
		if prev != nil && t.Same == i && i < len(prev.Hashes) && h == prev.Hashes[i] {
			t.Same++
		}
		add(m, "input", h, -1)
	case len(input) > 0 && input[0] == '[':
		// The messages of the runs of items the scan took from prev that end before its last
		// shared item are prev's (a run the last one is in may go on): only the rest is read.
		lead, from := len(t.Messages), 0
		if n := resumable(prev, lead, shared); n > lead {
			for j := lead; j < n; j++ {
				add(prev.Msgs[j], prev.Params[j], prev.Hashes[j], prev.Elem[j])
				if t.Same == j && prev.Hashes[j] == hashes[j] {
					t.Same++
				}
			}
			from = prev.Elem[n]
		}
		groups, err := groupFrom(raws, "input", from)
		if err != nil {
			return t, err
		}
		for _, g := range groups {
			h := g.hash()
			i := len(t.Messages)
			if prev != nil && t.Same == i && i < len(prev.Hashes) && h == prev.Hashes[i] {
				t.Same++
				add(prev.Msgs[i], g.param, h, g.first)
				continue
			}
			m, err := g.message()
			if err != nil {
				return t, err
			}
			add(m, g.param, h, g.first)
		}
	default:
		return t, &dialect.BadRequest{Param: "input", Msg: "input: want a string or an array of input items"}
	}
	if len(t.Messages) == 0 {
		return t, &dialect.BadRequest{Param: "input", Msg: "input: want at least one input item"}
	}
	t.Prev, t.Taken = prev, t.Same
	t.Sent = &dialect.Sent{Hashes: hashes, Msgs: t.Messages, Scan: sc, Elem: elem, Params: t.Params, Own: true}
	if raw, ok := t.Fields["stream"]; ok && !bytes.Equal(raw, []byte("null")) {
		if json.Unmarshal(raw, &t.Stream) != nil {
			return t, &dialect.BadRequest{Param: "stream", Msg: "stream: want true or false"}
		}
	}
	if raw, ok := t.Fields["tools"]; ok && !bytes.Equal(raw, []byte("null")) {
		h := dialect.HashBytes(raw)
		if prev != nil && prev.Tools != nil && h == prev.ToolsHash {
			t.Tools = prev.Tools
		} else if t.Tools, err = parseTools(raw); err != nil {
			return t, err
		}
		t.Sent.ToolsHash, t.Sent.Tools = h, t.Tools
	}
	return t, nil
}

// resumable returns the end of the messages of prev a request takes from it, the request's
// first lead messages not of its input's items and its first shared items prev's byte for
// byte: prev's messages from lead on whose runs end before the last shared item (the next
// message starts at a shared item), when prev is whole and led by as many messages (0 for
// none).
func resumable(prev *dialect.Sent, lead, shared int) int {
	if prev == nil || prev.Scan == nil || shared == 0 {
		return 0
	}
	n := len(prev.Msgs)
	if len(prev.Hashes) != n || len(prev.Elem) != n || len(prev.Params) != n || n <= lead || prev.Elem[lead] != 0 || lead > 0 && prev.Elem[lead-1] != -1 {
		return 0
	}
	k := lead
	for k+1 < n && prev.Elem[k+1] >= 0 && prev.Elem[k+1] < shared {
		k++
	}
	if k == lead {
		return 0
	}
	return k
}

// customCall is the type of the tool call of a custom_tool_call item (its input the call's
// arguments, as text).
const customCall = "custom"

// textMessage is a message of role with the string content s.
func textMessage(role, s string) chat.Message {
	return chat.Message{Role: role, Content: jsontext.AppendString(nil, s)}
}

// wrap is the JSON array of items.
func wrap(items [][]byte) []byte {
	n := 2
	for _, it := range items {
		n += len(it) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, it := range items {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, it...)
	}
	return append(out, ']')
}

// parseTools reads tool definitions as chat tools, to be counted: a function's name,
// description and parameters; a custom tool's name, description and format; a built-in tool
// (web_search, ...) its type as its name.
func parseTools(raw []byte) ([]chat.Tool, error) {
	var defs []struct {
		Type        string          `json:"type"`
		Name        string          `json:"name"`
		Description string          `json:"description"`
		Parameters  json.RawMessage `json:"parameters"`
		Format      json.RawMessage `json:"format"`
	}
	if json.Unmarshal(raw, &defs) != nil {
		return nil, &dialect.BadRequest{Param: "tools", Msg: "tools: want an array of tool definitions"}
	}
	tools := make([]chat.Tool, len(defs))
	for i, d := range defs {
		name, params := d.Name, d.Parameters
		if name == "" {
			name = d.Type
		}
		if params == nil {
			params = d.Format
		}
		tools[i] = chat.Tool{Type: "function", Function: chat.ToolFunction{Name: name, Description: d.Description, Parameters: params}}
	}
	return tools, nil
}

// itemHead is what group reads of an item.
type itemHead struct {
	Type string `json:"type"`
	Role string `json:"role"`
}

// head is an item's itemHead.
type head = itemHead

// item is what is read of an input or output item.
type item struct {
	head
	Content json.RawMessage `json:"content"`
	CallID  string          `json:"call_id"`
	Name    string          `json:"name"`
	Args    *string         `json:"arguments"`
	Input   *string         `json:"input"`
	Output  json.RawMessage `json:"output"`
	// Of a compaction item serve wrote (see LocalAnswer).
	CreatedBy string          `json:"created_by"`
	Summary   json.RawMessage `json:"summary"`
}

// side is where an item goes: its own message, the assistant's run, or a tool message.
func (it *item) assistant() bool {
	switch it.Type {
	case "reasoning", "function_call", "custom_tool_call":
		return true
	case "message", "":
		return it.Role == chat.RoleAssistant
	}
	return false
}

// run is the items that make one chat message, and where the first was given.
type run struct {
	param string
	name  string // the array's name
	first int    // the first item's index in it
	raws  [][]byte
	items []item
}

func (g *run) hash() dialect.Hash {
	if len(g.raws) == 1 {
		return dialect.HashBytes(g.raws[0])
	}
	return dialect.HashBytes(wrap(g.raws))
}

// group reads the items of an input (or output) array and groups them into messages: a run of
// assistant-side items in a row is one.
func group(raws [][]byte, name string) ([]run, error) { return groupFrom(raws, name, 0) }

// groupFrom is group of the items raws[from:] (a run of assistant items never starts before).
func groupFrom(raws [][]byte, name string, from int) ([]run, error) {
	var runs []run
	for k := from; k < len(raws); k++ {
		raw := raws[k]
		param := fmt.Sprintf("%s[%d]", name, k)
		var it item // its type and role only: the rest is read by message
		if len(raw) == 0 || raw[0] != '{' || json.Unmarshal(raw, (*itemHead)(&it.head)) != nil {
			return nil, &dialect.BadRequest{Param: param, Msg: param + ": want an input item, an object with a type (or a role)"}
		}
		if it.Type == "" && it.Role == "" {
			return nil, &dialect.BadRequest{Param: param, Msg: param + ": want an input item, an object with a type (or a role)"}
		}
		if it.assistant() && len(runs) > 0 && runs[len(runs)-1].items[0].assistant() {
			g := &runs[len(runs)-1]
			g.raws, g.items = append(g.raws, raw), append(g.items, it)
			continue
		}
		runs = append(runs, run{param: param, name: name, first: k, raws: [][]byte{raw}, items: []item{it}})
	}
	return runs, nil
}

// message is the chat message of a run, its items as sent its original.
func (g *run) message() (chat.Message, error) {
	for k := range g.items {
		if err := json.Unmarshal(g.raws[k], &g.items[k]); err != nil {
			p := fmt.Sprintf("%s[%d]", g.name, g.first+k)
			return chat.Message{}, &dialect.BadRequest{Param: p, Msg: fmt.Sprintf("%s: %v", p, err)}
		}
	}
	it := g.items[0]
	bad := func(p, msg string) error { return &dialect.BadRequest{Param: p, Msg: p + ": " + msg} }
	var m chat.Message
	switch {
	case it.assistant():
		m = assistantMessage(g.items)
	case it.Type == "message" || it.Type == "":
		role := it.Role
		switch role {
		case chat.RoleUser, chat.RoleSystem, chat.RoleDeveloper:
		default:
			return m, bad(g.param+".role", "want \"user\", \"assistant\", \"system\" or \"developer\"")
		}
		c, ok := inputContent(it.Content)
		if !ok {
			return m, bad(g.param+".content", "want a string or an array of content parts")
		}
		m = chat.Message{Role: role, Content: c}
	case it.Type == "function_call_output" || it.Type == "custom_tool_call_output":
		if it.CallID == "" {
			return m, bad(g.param+".call_id", "missing on a "+it.Type+" item")
		}
		m = textMessage(chat.RoleTool, outputText(it.Output))
		m.ToolCallID = it.CallID
	case it.Type == "compaction" && it.CreatedBy == CreatedBy:
		// serve's own compaction item sent back: the summary, which the developer message
		// beside it carries to the model; written as nothing.
		s, _ := jsontext.StringValue(it.Summary)
		m = textMessage(chat.RoleDeveloper, s)
		m.Extra = map[string]json.RawMessage{Key: []byte("[]")}
		return m, nil
	default:
		// An item of another type (a compaction, an item reference, a built-in tool's call):
		// kept as sent, shown to the store as its JSON.
		m = textMessage(chat.RoleUser, string(g.raws[0]))
	}
	m.Extra = map[string]json.RawMessage{Key: wrap(cloneAll(g.raws))}
	return m, nil
}

func cloneAll(raws [][]byte) [][]byte {
	out := make([][]byte, len(raws))
	for i, r := range raws {
		out[i] = bytes.Clone(r)
	}
	return out
}

// assistantMessage is the assistant message of a run of items: its messages' text joined by
// newlines, its calls as tool calls. Reasoning is in its original only. Content is null when it
// calls tools and has no text, "" when it has neither.
func assistantMessage(items []item) chat.Message {
	m := chat.Message{Role: chat.RoleAssistant}
	var texts []string
	for _, it := range items {
		switch it.Type {
		case "message", "":
			if s, ok := jsontext.StringValue(it.Content); ok {
				texts = append(texts, s)
			} else {
				texts = append(texts, partsText(it.Content)...)
			}
		case "function_call", "custom_tool_call":
			args := ""
			if it.Args != nil {
				args = *it.Args
			} else if it.Input != nil {
				args = *it.Input
			}
			typ := "function"
			if it.Type == "custom_tool_call" {
				typ = customCall
			}
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: it.CallID, Type: typ,
				Function: chat.FunctionCall{Name: it.Name, Arguments: args}})
		}
	}
	switch {
	case texts != nil:
		m.Content = jsontext.AppendString(nil, strings.Join(texts, "\n"))
	case m.ToolCalls != nil:
		m.Content = json.RawMessage("null")
	default:
		m.Content = json.RawMessage(`""`)
	}
	return m
}

// part is what is read of a content part.
type part struct {
	Type     string `json:"type"`
	Text     string `json:"text"`
	ImageURL string `json:"image_url"`
	FileData string `json:"file_data"`
	FileID   string `json:"file_id"`
	Filename string `json:"filename"`
	Refusal  string `json:"refusal"`
}

// partsText is the text of content parts: text parts' text, a refusal's, others named.
func partsText(c json.RawMessage) []string {
	var parts []part
	if json.Unmarshal(c, &parts) != nil {
		return nil
	}
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			texts = append(texts, p.Text)
		case "refusal":
			texts = append(texts, p.Refusal)
		default:
			texts = append(texts, "["+p.Type+"]")
		}
	}
	return texts
}

// inputContent is a message item's content as chat content: a string, or the text of its
// text parts joined by newlines when it has only text, else parts in OpenAI's chat shape (an
// image as image_url, a file as file).
func inputContent(c json.RawMessage) (json.RawMessage, bool) {
	c = bytes.TrimSpace(c)
	if len(c) == 0 {
		return nil, false
	}
	if c[0] == '"' {
		return bytes.Clone(c), true
	}
	var parts []part
	if c[0] != '[' || json.Unmarshal(c, &parts) != nil {
		return nil, false
	}
	textOnly := true
	var texts []string
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			texts = append(texts, p.Text)
		default:
			textOnly = false
		}
	}
	if textOnly {
		return jsontext.AppendString(nil, strings.Join(texts, "\n")), true
	}
	out := make([]any, 0, len(parts))
	for _, p := range parts {
		switch p.Type {
		case "input_text", "output_text", "text":
			out = append(out, map[string]string{"type": "text", "text": p.Text})
		case "input_image":
			url := p.ImageURL
			if url == "" {
				url = "file:" + p.FileID
			}
			out = append(out, map[string]any{"type": "image_url", "image_url": map[string]string{"url": url}})
		case "input_file":
			f := map[string]string{"filename": p.Filename}
			if p.FileData != "" {
				f["file_data"] = p.FileData
			} else {
				f["file_id"] = p.FileID
			}
			out = append(out, map[string]any{"type": "file", "file": f})
		default:
			out = append(out, map[string]string{"type": "text", "text": "[" + p.Type + "]"})
		}
	}
	b, _ := json.Marshal(out)
	return b, true
}

// outputText is a tool output's text: a string, or its parts' text joined by newlines.
func outputText(c json.RawMessage) string {
	c = bytes.TrimSpace(c)
	if len(c) == 0 || bytes.Equal(c, []byte("null")) {
		return ""
	}
	if s, ok := jsontext.StringValue(c); ok {
		return s
	}
	if t := partsText(c); t != nil {
		return strings.Join(t, "\n")
	}
	return string(c)
}
