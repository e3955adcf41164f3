package anthropic

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/jsontext"
	"github.com/memcascade/memcascade/serve/dialect"
)

// Parse reads a Messages request: model, stream, tools, the system prompt and the messages
// (see the package's doc for how they map to chat messages); every other member passes
// through as sent. Each message's hash is that of what the model sees (its chat message
// without its original): Claude Code moves cache_control to its newest block each turn, and
// sends a message as a string one turn and as a text block the next, and such a message is
// the same message (Same counts them).
func (Dialect) Parse(body []byte, prev *dialect.Sent) (dialect.Turn, error) {
	t, sc, shared, err := dialect.ScanTurn(body, "messages", `{"model": ..., "max_tokens": ..., "messages": [...]}`, prev)
	if err != nil {
		return t, err
	}
	raws := sc.Elems
	if m := t.Fields["messages"]; len(m) == 0 || m[0] != '[' || len(raws) == 0 {
		return t, &dialect.BadRequest{Param: "messages", Msg: "messages: want a non-empty array of messages"}
	}
	if raw, ok := t.Fields["system"]; ok {
		if err := parseSystem(&t, raw); err != nil {
			return t, err
		}
	}
	var hashes []dialect.Hash
	elem := make([]int, len(t.Messages), len(t.Messages)+len(raws)+4)
	for i := range elem {
		elem[i] = -1
	}
	// The messages of the elements the scan took from prev are prev's, value for value, when
	// its system prompt was this one's: each element gives its messages by itself.
	from := 0
	if n := reusable(prev, &t, shared); n > 0 {
		t.Messages, t.Params = slices.Clone(prev.Msgs[:n]), slices.Clone(prev.Params[:n])
		hashes, elem = slices.Clone(prev.Hashes[:n]), append(elem[:0], prev.Elem[:n]...)
		from, t.Same, t.Taken = shared, n, n
	}
	for i := from; i < len(raws); i++ {
		msgs, params, err := parseMessage(i, raws[i])
		if err != nil {
			return t, err
		}
		t.Messages = append(t.Messages, msgs...)
		t.Params = append(t.Params, params...)
		for range msgs {
			elem = append(elem, i)
		}
	}
	for i := len(hashes); i < len(t.Messages); i++ {
		hashes = append(hashes, hashOf(t.Messages[i]))
		if prev != nil && t.Same == i && i < len(prev.Hashes) && hashes[i] == prev.Hashes[i] {
			t.Same++
		}
	}
	t.Prev = prev
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

// reusable returns how many of prev's messages a request t, whose system prompt is read and
// whose first shared elements of messages are prev's byte for byte, takes from it: those of
// its system prompt and of those elements, when t's system member is prev's byte for byte and
// prev is whole (0 otherwise).
func reusable(prev *dialect.Sent, t *dialect.Turn, shared int) int {
	if prev == nil || prev.Scan == nil || shared == 0 {
		return 0
	}
	n := len(prev.Msgs)
	if len(prev.Hashes) != n || len(prev.Elem) != n || len(prev.Params) != n {
		return 0
	}
	sys, had := prev.Scan.MemberHash("system")
	if cur, ok := t.Fields["system"]; ok != had || ok && dialect.HashBytes(cur) != sys {
		return 0
	}
	k := 0
	for k < n && prev.Elem[k] < shared {
		k++
	}
	if k < len(t.Messages) {
		return 0 // not even its system prompt
	}
	return k
}

// hashOf is the hash of what the model sees of m: its role, content (as Parse writes it, one
// spelling of each content), tool_call_id and tool calls, not its original.
func hashOf(m chat.Message) dialect.Hash {
	n := len(m.Role) + len(m.Content) + len(m.ToolCallID) + 8
	for _, c := range m.ToolCalls {
		n += len(c.ID) + len(c.Function.Name) + len(c.Function.Arguments) + 3
	}
	b := make([]byte, 0, n)
	b = append(append(b, m.Role...), 0)
	b = append(append(b, m.Content...), 0)
	b = append(append(b, m.ToolCallID...), 0)
	for _, c := range m.ToolCalls {
		b = append(append(b, c.ID...), 0)
		b = append(append(b, c.Function.Name...), 0)
		b = append(append(b, c.Function.Arguments...), 0)
	}
	return dialect.HashBytes(b)
}

// textMessage is a message of role with the string content s, written as json.Marshal (and
// the store) writes it.
func textMessage(role, s string) chat.Message {
	return chat.Message{Role: role, Content: jsontext.AppendString(nil, s)}
}

// parseTools reads tool definitions as chat tools, to be counted: name, description and
// input_schema as the parameters. A server tool (web search, ...) has its name alone.
func parseTools(raw []byte) ([]chat.Tool, error) {
	var defs []struct {
		Name        string          `json:"name"`
		Description string          `json:"description"`
		InputSchema json.RawMessage `json:"input_schema"`
	}
	if json.Unmarshal(raw, &defs) != nil {
		return nil, &dialect.BadRequest{Param: "tools", Msg: "tools: want an array of tool definitions"}
	}
	tools := make([]chat.Tool, len(defs))
	for i, d := range defs {
		tools[i] = chat.Tool{Type: "function", Function: chat.ToolFunction{Name: d.Name, Description: d.Description, Parameters: d.InputSchema}}
	}
	return tools, nil
}

// parseSystem reads the system prompt, a string or an array of text blocks, as leading system
// messages: one for a string, one for each block.
func parseSystem(t *dialect.Turn, raw []byte) error {
	switch {
	case raw[0] == '"':
		s, ok := jsontext.StringValue(raw)
		if !ok {
			return &dialect.BadRequest{Param: "system", Msg: "system: want a string or an array of text blocks"}
		}
		if s == "" {
			return nil
		}
		m := textMessage(chat.RoleSystem, s)
		m.Extra = map[string]json.RawMessage{Key: bytes.Clone(raw)}
		t.Messages, t.Params = append(t.Messages, m), append(t.Params, "system")
	case raw[0] == '[':
		for k, b := range splitArray(raw) {
			param := fmt.Sprintf("system[%d]", k)
			var bl struct {
				Type string `json:"type"`
				Text string `json:"text"`
			}
			if b[0] != '{' || json.Unmarshal(b, &bl) != nil || bl.Type != "text" {
				return &dialect.BadRequest{Param: param, Msg: param + ": want a text block, {\"type\": \"text\", \"text\": ...}"}
			}
			if billing(bl.Text) {
				continue
			}
			m := textMessage(chat.RoleSystem, bl.Text)
			m.Extra = map[string]json.RawMessage{Key: bytes.Clone(b)}
			t.Messages, t.Params = append(t.Messages, m), append(t.Params, param)
		}
	case !bytes.Equal(raw, []byte("null")):
		return &dialect.BadRequest{Param: "system", Msg: "system: want a string or an array of text blocks"}
	}
	return nil
}

// billing reports the text of the block Claude Code puts first in its system prompt for
// Anthropic's billing ("x-anthropic-billing-header: cc_version=...; cc_entrypoint=cli"): it is
// not the conversation's, and is neither stored nor compared; Render writes the request's.
func billing(text string) bool { return strings.HasPrefix(text, "x-anthropic-billing-header:") }

// block is what is read of a content block.
type block struct {
	Type      string          `json:"type"`
	Text      string          `json:"text"`
	ID        string          `json:"id"`
	Name      string          `json:"name"`
	Input     json.RawMessage `json:"input"`
	ToolUseID string          `json:"tool_use_id"`
	Content   json.RawMessage `json:"content"`
	Source    *struct {
		Type      string          `json:"type"`
		MediaType string          `json:"media_type"`
		Data      json.RawMessage `json:"data"`
		URL       string          `json:"url"`
	} `json:"source"`
	Title string `json:"title"`
}

// readBlock reads a content block known to be valid JSON: false when it is not an object
// with a type.
func readBlock(raw []byte, b *block) bool {
	if len(raw) == 0 || raw[0] != '{' {
		return false
	}
	str := func(v []byte) string { s, _ := jsontext.StringValue(v); return s }
	ok := true
	fields(raw, func(k string, v []byte) {
		switch k {
		case "type":
			b.Type = str(v)
		case "text":
			b.Text = str(v)
		case "id":
			b.ID = str(v)
		case "name":
			b.Name = str(v)
		case "input":
			b.Input = v
		case "tool_use_id":
			b.ToolUseID = str(v)
		case "content":
			b.Content = v
		case "title":
			b.Title = str(v)
		case "source":
			if v[0] == '{' && json.Unmarshal(v, &b.Source) != nil {
				ok = false
			}
		}
	})
	return ok && b.Type != ""
}

// parseMessage reads messages[i] (raw): the chat messages it gives and where each came from.
func parseMessage(i int, raw []byte) ([]chat.Message, []string, error) {
	param := fmt.Sprintf("messages[%d]", i)
	bad := func(p, msg string) error { return &dialect.BadRequest{Param: p, Msg: p + ": " + msg} }
	if raw[0] != '{' {
		return nil, nil, bad(param, "want a message object, {\"role\": ..., \"content\": ...}")
	}
	var role string
	var content []byte
	fields(raw, func(k string, v []byte) {
		switch k {
		case "role":
			role, _ = jsontext.StringValue(v)
		case "content":
			content = v
		}
	})
	if role == chat.RoleSystem {
		return systemMessage(param, content)
	}
	if role != chat.RoleUser && role != chat.RoleAssistant {
		return nil, nil, bad(param+".role", "want \"user\", \"assistant\" or \"system\"")
	}
	if len(content) == 0 || content[0] != '"' && content[0] != '[' {
		return nil, nil, bad(param+".content", "want a string or an array of content blocks")
	}
	if content[0] == '"' {
		s, _ := jsontext.StringValue(content)
		m := textMessage(role, s)
		m.Extra = map[string]json.RawMessage{Key: bytes.Clone(raw)}
		return []chat.Message{m}, []string{param}, nil
	}
	elems := splitArray(content)
	blocks := make([]block, len(elems))
	for k, b := range elems {
		if !readBlock(b, &blocks[k]) {
			p := fmt.Sprintf("%s.content[%d]", param, k)
			return nil, nil, bad(p, "want a content block, an object with a type")
		}
	}
	if role == chat.RoleAssistant {
		m, err := assistantMessage(blocks)
		if err != nil {
			return nil, nil, bad(param+".content", err.Error())
		}
		m.Extra = map[string]json.RawMessage{Key: bytes.Clone(raw)}
		return []chat.Message{m}, []string{param}, nil
	}
	// A user message: its tool results first, each a tool message, then the rest.
	var msgs []chat.Message
	var params []string
	var rest [][]byte
	var restBlocks []block
	for k, b := range blocks {
		if b.Type != "tool_result" {
			rest, restBlocks = append(rest, elems[k]), append(restBlocks, b)
			continue
		}
		p := fmt.Sprintf("%s.content[%d]", param, k)
		if b.ToolUseID == "" {
			return nil, nil, bad(p+".tool_use_id", "missing on a tool_result block")
		}
		m := textMessage(chat.RoleTool, resultText(b.Content))
		m.ToolCallID = b.ToolUseID
		m.Extra = map[string]json.RawMessage{Key: bytes.Clone(elems[k])}
		msgs, params = append(msgs, m), append(params, p)
	}
	if len(msgs) > 0 && len(rest) == 0 {
		return msgs, params, nil
	}
	m := chat.Message{Role: chat.RoleUser, Content: userContent(restBlocks, rest)}
	orig := raw
	if len(msgs) > 0 {
		orig = messageObject(chat.RoleUser, rest, nil)
	}
	m.Extra = map[string]json.RawMessage{Key: bytes.Clone(orig)}
	return append(msgs, m), append(params, param), nil
}

// systemMessage reads a message of role system among the messages, as Claude Code sends its
// environment's description: one system message per text block (a string is one block), each
// with its block as its original, so that Render writes it among the system prompt's blocks.
func systemMessage(param string, content []byte) ([]chat.Message, []string, error) {
	bad := &dialect.BadRequest{Param: param + ".content", Msg: param + ".content: want a string or an array of text blocks"}
	if len(content) == 0 {
		return nil, nil, bad
	}
	if content[0] == '"' {
		s, _ := jsontext.StringValue(content)
		m := textMessage(chat.RoleSystem, s)
		m.Extra = map[string]json.RawMessage{Key: textBlock(s)}
		return []chat.Message{m}, []string{param}, nil
	}
	if content[0] != '[' {
		return nil, nil, bad
	}
	var msgs []chat.Message
	var params []string
	for k, b := range splitArray(content) {
		var bl block
		p := fmt.Sprintf("%s.content[%d]", param, k)
		if !readBlock(b, &bl) || bl.Type != "text" {
			return nil, nil, &dialect.BadRequest{Param: p, Msg: p + ": want a text block, {\"type\": \"text\", \"text\": ...}"}
		}
		m := textMessage(chat.RoleSystem, bl.Text)
		m.Extra = map[string]json.RawMessage{Key: bytes.Clone(b)}
		msgs, params = append(msgs, m), append(params, p)
	}
	return msgs, params, nil
}

// assistantMessage reads an assistant message's blocks (of a request, or of a reply): its
// text blocks joined by newlines as its content, its tool_use blocks as its tool calls.
// Thinking and server tools' blocks are in its original only. Content is null when it calls
// tools and has no text, "" when it has neither.
func assistantMessage(blocks []block) (chat.Message, error) {
	m := chat.Message{Role: chat.RoleAssistant}
	var texts []string
	for _, b := range blocks {
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "tool_use":
			input := []byte("{}")
			if len(b.Input) > 0 {
				input = jsontext.Compact(b.Input)
			}
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: b.ID, Type: "function",
				Function: chat.FunctionCall{Name: b.Name, Arguments: string(input)}})
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
	return m, nil
}

// userContent is a user message's content: its text blocks joined by newlines when it has only
// text, else parts in OpenAI's shape (text; an image as image_url, counted as an image; a PDF
// as a file; a text document as text; any other block as it is, without cache_control).
func userContent(blocks []block, raws [][]byte) json.RawMessage {
	textOnly := true
	var texts []string
	for _, b := range blocks {
		if b.Type != "text" {
			textOnly = false
			break
		}
		texts = append(texts, b.Text)
	}
	if textOnly {
		return jsontext.AppendString(nil, strings.Join(texts, "\n"))
	}
	parts := make([]any, 0, len(blocks))
	for k, b := range blocks {
		src := b.Source
		switch {
		case b.Type == "text":
			parts = append(parts, textPart{"text", b.Text})
		case b.Type == "image" && src != nil && src.Type == "base64":
			data, _ := jsontext.StringValue(src.Data)
			parts = append(parts, imagePart{"image_url", urlOf{"data:" + src.MediaType + ";base64," + data}})
		case b.Type == "image" && src != nil && src.Type == "url":
			parts = append(parts, imagePart{"image_url", urlOf{src.URL}})
		case b.Type == "document" && src != nil && src.Type == "text":
			data, _ := jsontext.StringValue(src.Data)
			parts = append(parts, textPart{"text", data})
		case b.Type == "document" && src != nil && src.Type == "base64" && src.MediaType == "application/pdf":
			data, _ := jsontext.StringValue(src.Data)
			parts = append(parts, filePart{"file", fileOf{"data:application/pdf;base64," + data, b.Title}})
		default:
			parts = append(parts, withoutCache(raws[k]))
		}
	}
	c, _ := json.Marshal(parts)
	return c
}

// The content parts of a user message, in OpenAI's shape.
type (
	textPart struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	imagePart struct {
		Type     string `json:"type"`
		ImageURL urlOf  `json:"image_url"`
	}
	urlOf struct {
		URL string `json:"url"`
	}
	filePart struct {
		Type string `json:"type"`
		File fileOf `json:"file"`
	}
	fileOf struct {
		FileData string `json:"file_data"`
		Filename string `json:"filename,omitempty"`
	}
)

// withoutCache is a block as a map, without its cache_control: the same block wherever the
// agent put its cache breakpoint (its members in one order, compact).
func withoutCache(raw []byte) map[string]json.RawMessage {
	var m map[string]json.RawMessage
	json.Unmarshal(raw, &m)
	delete(m, "cache_control")
	return m
}

// resultText is the text of a tool_result's content: a string, or the text of its blocks
// joined by newlines, an image or a document named by a placeholder.
func resultText(content json.RawMessage) string {
	c := bytes.TrimSpace(content)
	if len(c) == 0 {
		return ""
	}
	if c[0] == '"' {
		s, _ := jsontext.StringValue(c)
		return s
	}
	raws := splitArray(c)
	if raws == nil {
		return string(c)
	}
	texts := make([]string, 0, len(raws))
	for _, raw := range raws {
		var b block
		readBlock(raw, &b)
		switch b.Type {
		case "text":
			texts = append(texts, b.Text)
		case "image", "document":
			texts = append(texts, "["+b.Type+"]")
		default:
			j, _ := json.Marshal(withoutCache(raw))
			texts = append(texts, string(j))
		}
	}
	return strings.Join(texts, "\n")
}

// messageObject writes {"role": role, "content": [blocks]}; with text != nil and no blocks,
// its content is that string.
func messageObject(role string, blocks [][]byte, text *string) []byte {
	n := 32
	for _, b := range blocks {
		n += len(b) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, `{"role":`...)
	out = jsontext.AppendString(out, role)
	out = append(out, `,"content":`...)
	if text != nil && len(blocks) == 0 {
		out = jsontext.AppendString(out, *text)
		return append(out, '}')
	}
	out = append(out, '[')
	for i, b := range blocks {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, b...)
	}
	return append(out, ']', '}')
}

// splitArray returns the elements of a JSON array known to be valid (nil for anything else).
func splitArray(b []byte) [][]byte {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '[' {
		return nil
	}
	elems := [][]byte{}
	depth, start, inString, escaped := 0, -1, false, false
	for i := 1; i < len(b); i++ {
		c := b[i]
		switch {
		case escaped:
			escaped = false
			continue
		case inString:
			if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
			continue
		}
		switch c {
		case ' ', '\t', '\n', '\r':
			continue
		case '"':
			inString = true
		case '{', '[':
			depth++
		case '}':
			depth--
		case ']':
			if depth == 0 {
				if start >= 0 {
					elems = append(elems, bytes.TrimSpace(b[start:i]))
				}
				return elems
			}
			depth--
		case ',':
			if depth == 0 {
				elems = append(elems, bytes.TrimSpace(b[start:i]))
				start = -1
				continue
			}
		}
		if start < 0 {
			start = i
		}
	}
	return nil
}

// members returns the members of a JSON object known to be valid.
func members(b []byte) []dialect.Member {
	var ms []dialect.Member
	fields(b, func(k string, v []byte) { ms = append(ms, dialect.Member{Key: k, Val: v}) })
	return ms
}

// fields calls f with each member of a JSON object known to be valid (checked when the
// request was read, or written here): its key, decoded, and its value as it is. It reads
// nothing of anything else.
func fields(b []byte, f func(key string, val []byte)) {
	b = bytes.TrimSpace(b)
	if len(b) < 2 || b[0] != '{' {
		return
	}
	i := 1
	space := func() {
		for i < len(b) && (b[i] == ' ' || b[i] == '\t' || b[i] == '\n' || b[i] == '\r') {
			i++
		}
	}
	for {
		space()
		if i >= len(b) || b[i] != '"' {
			return
		}
		end := skipValue(b, i)
		key, ok := jsontext.StringValue(b[i:end])
		if !ok {
			return
		}
		i = end
		space()
		if i >= len(b) || b[i] != ':' {
			return
		}
		i++
		space()
		end = skipValue(b, i)
		if end <= i {
			return
		}
		f(key, b[i:end])
		i = end
		space()
		if i >= len(b) || b[i] != ',' {
			return
		}
		i++
	}
}

// skipValue returns the end of the valid JSON value at b[i:].
func skipValue(b []byte, i int) int {
	depth, inString, escaped := 0, false, false
	for j := i; j < len(b); j++ {
		c := b[j]
		switch {
		case escaped:
			escaped = false
		case inString:
			if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
				if depth == 0 {
					return j + 1
				}
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
		case c == '}' || c == ']':
			if depth == 0 {
				return j // the end of the object or array that holds a number, true, ...
			}
			depth--
			if depth == 0 {
				return j + 1
			}
		case depth == 0 && (c == ',' || c == ' ' || c == '\t' || c == '\n' || c == '\r'):
			return j
		}
	}
	return len(b)
}

// member returns the value of key in a JSON object known to be valid (nil when absent).
func member(b []byte, key string) []byte {
	for _, m := range members(b) {
		if m.Key == key {
			return m.Val
		}
	}
	return nil
}

// stripCache returns a block without its cache_control member (b itself when it has none).
func stripCache(b []byte) []byte {
	if !bytes.Contains(b, []byte(`"cache_control"`)) {
		return b
	}
	ms := members(b)
	if !slices.ContainsFunc(ms, func(m dialect.Member) bool { return m.Key == "cache_control" }) {
		return b
	}
	out := make([]byte, 0, len(b))
	out = append(out, '{')
	for _, m := range ms {
		if m.Key == "cache_control" {
			continue
		}
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = jsontext.AppendString(out, m.Key)
		out = append(out, ':')
		out = append(out, m.Val...)
	}
	return append(out, '}')
}
