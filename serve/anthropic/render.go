package anthropic

import (
	"bytes"
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/jsontext"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
)

// Continued is the text of the user message put first when the active context's conversation
// starts with an assistant message (its start was summarized or left out): the Messages API
// wants a user message first.
const Continued = "(earlier messages were summarized above)"

// item is a message of the active context as Render writes it.
type item struct {
	e    memory.Entry
	enc  []byte
	kind int    // plain, summary or shown
	wire []byte // its original: the request's when fresh, else the stored one (nil: none)
	// fresh: wire is the request's, with cache_control where the agent put it this turn; src
	// is the request's message it is (or is a part of), at, its index in the turn's messages.
	fresh   bool
	src, at int
}

const (
	plain   = iota // a stored message shown as stored
	summary        // a compaction's summary
	shown          // a message the view changed (masked or cut): its text only
)

func (it *item) role() string { return it.e.Message.Role }

func (it *item) system() bool {
	return it.kind == summary || it.role() == chat.RoleSystem || it.role() == chat.RoleDeveloper
}

// Render writes the request with the active context as its system prompt and messages, every
// other member as the agent sent it, in its order.
//
// The active context's leading system messages are the system prompt; a compaction's summary
// and any later system message follow them as text blocks (the Messages API has no system
// role among messages). The conversation's messages are written from their originals; those
// of the end of the active context that are the end of this request (in the usual turn, all
// of it that was not compacted) from the request's own, cache_control where the agent put it
// this turn; older ones from the stored originals, without their cache_control (they were
// stored where the agent had its breakpoint then, and the API takes four at most). A message
// the view masked or cut is written from its text, and one with no original (written by
// serve) is converted. Tool results and user messages in a row are one user message, tool
// results first; messages of one role in a row are one message, unless they are the
// request's own messages whole, written as sent. serve's note (t.Notice), when there is one,
// is a text block at the end of the last user message (the API takes neither two user
// messages in a row nor a system role among the messages). A turn that forwards the request
// unchanged (dialect.Turn.SentBody) is the request's own bytes, unless Render would write it
// otherwise (asSent).
func (Dialect) Render(t dialect.Turn, active []memory.Entry, enc []json.RawMessage) ([]byte, error) {
	if b := t.SentBody(); b != nil && asSent(t) {
		return b, nil
	}
	items := make([]item, len(active))
	for i, e := range active {
		it := item{e: e, src: -1, at: -1}
		if i < len(enc) {
			it.enc = enc[i]
		}
		switch {
		case e.CompactionID != 0:
			it.kind = summary
		case e.Mark() != nil && e.Mark().Cleared == nil: // a cleared message is written whole, cleared
			it.kind = shown
		case e.Message.Extra != nil:
			it.wire = e.Message.Extra[Key] // a message read whole
		default:
			it.wire = member(it.enc, Key)
		}
		items[i] = it
	}
	lead := 0 // the active context's leading system messages
	for lead < len(items) && items[lead].kind == plain && items[lead].system() {
		lead++
	}
	reqLead := 0
	for reqLead < len(t.Messages) && t.Messages[reqLead].Role == chat.RoleSystem {
		reqLead++
	}
	srcs := srcsOf(t)
	// The end of the active context that is the end of the request.
	for ai, ri := len(items)-1, len(t.Messages)-1; ai >= lead && ri >= reqLead && sameItem(&items[ai], t.Messages[ri]); ai, ri = ai-1, ri-1 {
		fresh(&items[ai], t, srcs, ri)
	}
	// The system prompt: the request's own when the active context's is it.
	sysFresh := lead == reqLead && lead > 0
	for i := 0; sysFresh && i < lead; i++ {
		sysFresh = sameItem(&items[i], t.Messages[i])
	}
	if sysFresh {
		for i := range lead {
			fresh(&items[i], t, srcs, i)
		}
	}
	var extra []*item // summaries and later system messages
	var conv []*item
	for i := lead; i < len(items); i++ {
		if items[i].system() {
			extra = append(extra, &items[i])
		} else {
			conv = append(conv, &items[i])
		}
	}
	system := renderSystem(t, items[:lead], extra, sysFresh)
	messages := renderMessages(t, srcs, conv)
	return writeBody(t, system, messages), nil
}

// asSent reports whether Render writes the turn's messages, all of them the request's, as the
// request gives them: no system message comes among its messages (Render writes it among the
// system prompt's blocks), and they do not start with an assistant message (Render puts the
// user message Continued first).
func asSent(t dialect.Turn) bool {
	first := true
	for i, m := range t.Messages {
		if strings.HasPrefix(t.Param(i), "system") {
			continue
		}
		if m.Role == chat.RoleSystem || first && m.Role == chat.RoleAssistant {
			return false
		}
		first = false
	}
	return true
}

// sameItem reports whether it is the request's message m: the same role, tool call ids and
// content (the same bytes, as Parse writes a content; else the same text).
func sameItem(it *item, m chat.Message) bool {
	if it.kind != plain || m.Extra[Key] == nil {
		return false
	}
	a := it.e.Message
	return a.Role == m.Role && a.ToolCallID == m.ToolCallID &&
		slices.EqualFunc(a.ToolCalls, m.ToolCalls, func(x, y chat.ToolCall) bool {
			return x.ID == y.ID && x.Function.Name == y.Function.Name
		}) && (a.Content != nil && bytes.Equal(a.Content, m.Content) || it.e.Text() == textOf(m))
}

// textOf is m.Text(), a string content decoded without encoding/json.
func textOf(m chat.Message) string {
	if s, ok := jsontext.StringValue(m.Content); ok {
		return s
	}
	return m.Text()
}

// fresh makes it the request's message at (srcs: srcsOf(t)).
func fresh(it *item, t dialect.Turn, srcs []int, at int) {
	it.wire, it.fresh, it.at, it.src = t.Messages[at].Extra[Key], true, at, srcs[at]
}

// srcsOf is, for each of the request's messages, the index of the request's message it is or
// is a part of (-1: the system prompt's): as Parse recorded it, else as its param names it.
func srcsOf(t dialect.Turn) []int {
	if t.Sent != nil && len(t.Sent.Elem) == len(t.Messages) {
		return t.Sent.Elem
	}
	srcs := make([]int, len(t.Messages))
	for i := range srcs {
		srcs[i] = srcOf(t.Param(i))
	}
	return srcs
}

// srcOf is the index of the request's message that param names ("messages[3]",
// "messages[3].content[1]"); -1 for the system prompt.
func srcOf(param string) int {
	rest, ok := strings.CutPrefix(param, "messages[")
	if !ok {
		return -1
	}
	n, err := strconv.Atoi(rest[:max(strings.IndexByte(rest, ']'), 0)])
	if err != nil {
		return -1
	}
	return n
}

// textBlock is {"type":"text","text":s}.
func textBlock(s string) []byte {
	return append(jsontext.AppendString([]byte(`{"type":"text","text":`), s), '}')
}

// text is an item's text, as the store shows it.
func (it *item) text() string {
	if it.kind == plain && it.wire == nil && it.enc != nil {
		var m chat.Message
		if json.Unmarshal(it.enc, &m) == nil {
			return m.Text()
		}
	}
	return it.e.Text()
}

// renderSystem is the system member's value: the leading system messages, then the summaries
// and later system messages as text blocks; nil for none.
func renderSystem(t dialect.Turn, lead []item, extra []*item, sysFresh bool) []byte {
	if len(extra) == 0 && sysFresh {
		return t.Fields["system"]
	}
	if len(extra) == 0 && len(lead) == 1 && len(lead[0].wire) > 0 && lead[0].wire[0] == '"' {
		return unescapeHTML(lead[0].wire) // a string, as the agent gave it
	}
	var blocks [][]byte
	if sys := t.Fields["system"]; len(sys) > 0 && sys[0] == '[' {
		for _, b := range splitArray(sys) {
			var bl block
			if readBlock(b, &bl) && billing(bl.Text) {
				blocks = append(blocks, b) // the request's, not stored
			}
		}
	}
	add := func(it *item) {
		switch w := it.wire; {
		case it.kind == plain && len(w) > 0 && w[0] == '{':
			if !it.fresh {
				w = unescapeHTML(stripCache(w))
			}
			blocks = append(blocks, w)
		default:
			if s := it.text(); s != "" {
				blocks = append(blocks, textBlock(s))
			}
		}
	}
	for i := range lead {
		add(&lead[i])
	}
	for _, it := range extra {
		add(it)
	}
	if len(blocks) == 0 {
		return t.Fields["system"] // the agent's empty one, or none
	}
	return joinArray(blocks)
}

func joinArray(elems [][]byte) []byte {
	n := 2
	for _, e := range elems {
		n += len(e) + 1
	}
	out := make([]byte, 0, n)
	out = append(out, '[')
	for i, e := range elems {
		if i > 0 {
			out = append(out, ',')
		}
		out = append(out, e...)
	}
	return append(out, ']')
}

// renderMessages writes the conversation: each run of messages of one role (tool results are
// the user's) as one message, or as the request's messages it is whole.
func renderMessages(t dialect.Turn, srcs []int, conv []*item) []byte {
	var reqRaw [][]byte // the request's messages as sent
	// The turn's messages that each of the request's gives: pieces[src], in order (Parse gives
	// them one after the other).
	var pieces []span
	for i, src := range srcs {
		if src < 0 {
			continue
		}
		if src >= len(pieces) {
			pieces = slices.Grow(pieces, src+1-len(pieces))[:src+1]
		}
		if pieces[src].n == 0 {
			pieces[src].first = i
		}
		pieces[src].n++
	}
	var msgs [][]byte
	lastUser := -1 // the last user message of msgs
	for i := 0; i < len(conv); {
		role := apiRole(conv[i].role())
		j := i + 1
		for j < len(conv) && apiRole(conv[j].role()) == role {
			j++
		}
		run := conv[i:j]
		if role == chat.RoleUser {
			lastUser = len(msgs)
		}
		if whole(run, pieces) {
			if reqRaw == nil {
				reqRaw = requestMessages(t)
			}
			for k, it := range run {
				if k == 0 || it.src != run[k-1].src {
					if role == chat.RoleUser {
						lastUser = len(msgs)
					}
					msgs = append(msgs, reqRaw[it.src])
				}
			}
		} else {
			msgs = append(msgs, merged(role, run))
		}
		i = j
	}
	if len(msgs) > 0 && apiRole(conv[0].role()) == chat.RoleAssistant {
		text := Continued
		msgs = slices.Insert(msgs, 0, messageObject(chat.RoleUser, [][]byte{textBlock(text)}, nil))
		lastUser++
	}
	if t.Notice != nil {
		if lastUser < 0 {
			msgs = append(msgs, messageObject(chat.RoleUser, [][]byte{textBlock(t.Notice.Text())}, nil))
		} else {
			msgs[lastUser] = withBlock(msgs[lastUser], textBlock(t.Notice.Text()))
		}
	}
	return joinArray(msgs)
}

// withBlock returns the message object msg with block added at the end of its content (a
// string content becomes its text block), its other members as they are; msg itself is not
// changed (it may be the request's bytes).
func withBlock(msg, block []byte) []byte {
	members, blocks, err := dialect.ScanObject(msg, "content")
	if err != nil {
		return msg // a message this dialect wrote or read: always an object
	}
	out := make([]byte, 0, len(msg)+len(block)+32)
	out = append(out, '{')
	content := false
	for _, m := range members {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(jsontext.AppendString(out, m.Key), ':')
		if m.Key != "content" {
			out = append(out, m.Val...)
			continue
		}
		content = true
		var bs [][]byte
		if v := bytes.TrimSpace(m.Val); len(v) > 0 && v[0] == '"' {
			if s, _ := jsontext.StringValue(v); s != "" {
				bs = append(bs, textBlock(s))
			}
		} else {
			bs = append(bs, blocks...)
		}
		out = append(out, joinArray(append(bs, block))...)
	}
	if !content {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = append(out, `"content":`...)
		out = append(out, joinArray([][]byte{block})...)
	}
	return append(out, '}')
}

func apiRole(role string) string {
	if role == chat.RoleAssistant {
		return role
	}
	return chat.RoleUser
}

// whole reports whether a run of messages is the request's messages whole, each as Parse
// read it (every part of each, in order), and one after the other in the request: the agent
// sent them so.
func whole(run []*item, pieces []span) bool {
	for k := 0; k < len(run); {
		it := run[k]
		if !it.fresh || it.src < 0 || it.src >= len(pieces) || k > 0 && it.src != run[k-1].src+1 {
			return false
		}
		want := pieces[it.src]
		if want.n == 0 {
			return false
		}
		for at := want.first; at < want.first+want.n; at++ {
			if k >= len(run) || !run[k].fresh || run[k].at != at {
				return false
			}
			k++
		}
	}
	return true
}

// span is the turn's messages that one of the request's gives: n from first.
type span struct{ first, n int }

// requestMessages are the request's messages as sent: as its scan split them, else split now.
func requestMessages(t dialect.Turn) [][]byte {
	if t.Sent != nil && t.Sent.Scan != nil && len(t.Sent.Scan.Elems) > 0 {
		return t.Sent.Scan.Elems
	}
	return splitArray(t.Fields["messages"])
}

// merged writes a run of messages of one role as one message: for the user, the tool results
// first.
func merged(role string, run []*item) []byte {
	var results, rest [][]byte
	for _, it := range run {
		bs := blocksOf(it)
		if it.role() == chat.RoleTool {
			results = append(results, bs...)
		} else {
			rest = append(rest, bs...)
		}
	}
	blocks := append(results, rest...)
	if len(blocks) == 0 {
		empty := ""
		return messageObject(role, nil, &empty)
	}
	return messageObject(role, blocks, nil)
}

// blocksOf is the content blocks of a message: from its original, or from its text when the
// view changed it, or converted from the chat message.
func blocksOf(it *item) [][]byte {
	strip := func(b []byte) []byte {
		if it.fresh {
			return b
		}
		return unescapeHTML(stripCache(b))
	}
	m := it.e.Message
	switch {
	case it.kind == shown && m.Role == chat.RoleTool:
		return [][]byte{toolResult(m.ToolCallID, it.e.Text())}
	case it.kind == shown:
		return [][]byte{textBlock(it.e.Text())}
	case it.wire != nil && m.Role == chat.RoleTool:
		return [][]byte{strip(it.wire)}
	case it.wire != nil:
		c := bytes.TrimSpace(member(it.wire, "content"))
		if len(c) > 0 && c[0] == '"' {
			if s, _ := jsontext.StringValue(c); s != "" {
				return [][]byte{textBlock(s)}
			}
			return nil
		}
		bs := splitArray(c)
		for k := range bs {
			bs[k] = strip(bs[k])
		}
		return bs
	}
	var full chat.Message
	if json.Unmarshal(it.enc, &full) != nil {
		full = m
	}
	return convert(full)
}

// toolResult is a tool_result block of text.
func toolResult(id, text string) []byte {
	b := jsontext.AppendString([]byte(`{"type":"tool_result","tool_use_id":`), id)
	b = append(b, `,"content":`...)
	return append(jsontext.AppendString(b, text), '}')
}

// convert writes the blocks of a chat message that has no original: its text, its image parts
// as images, its tool calls as tool_use blocks, a tool message as a tool result.
func convert(m chat.Message) [][]byte {
	if m.Role == chat.RoleTool {
		return [][]byte{toolResult(m.ToolCallID, m.Text())}
	}
	var blocks [][]byte
	c := bytes.TrimSpace(m.Content)
	if len(c) > 0 && c[0] == '[' {
		for _, p := range splitArray(c) {
			var part struct {
				Type     string `json:"type"`
				Text     string `json:"text"`
				ImageURL struct {
					URL string `json:"url"`
				} `json:"image_url"`
			}
			json.Unmarshal(p, &part)
			switch part.Type {
			case "text":
				if part.Text != "" {
					blocks = append(blocks, textBlock(part.Text))
				}
			case "image_url":
				blocks = append(blocks, imageBlock(part.ImageURL.URL))
			default:
				blocks = append(blocks, textBlock(string(p)))
			}
		}
	} else if s := m.Text(); s != "" {
		blocks = append(blocks, textBlock(s))
	}
	for _, tc := range m.ToolCalls {
		input := []byte(tc.Function.Arguments)
		if c := bytes.TrimSpace(input); len(c) == 0 || c[0] != '{' || !json.Valid(c) {
			input = []byte("{}")
		}
		b, _ := json.Marshal(map[string]any{"type": "tool_use", "id": tc.ID, "name": tc.Function.Name, "input": json.RawMessage(input)})
		blocks = append(blocks, b)
	}
	return blocks
}

// imageBlock is the image block of an image part's URL: a data URL as base64, else the URL.
func imageBlock(url string) []byte {
	var src map[string]string
	if rest, ok := strings.CutPrefix(url, "data:"); ok {
		if mt, data, ok := strings.Cut(rest, ";base64,"); ok {
			src = map[string]string{"type": "base64", "media_type": mt, "data": data}
		}
	}
	if src == nil {
		src = map[string]string{"type": "url", "url": url}
	}
	b, _ := json.Marshal(map[string]any{"type": "image", "source": src})
	return b
}

// writeBody writes the request's members in its order, system and messages replaced (system
// put before messages when the agent sent none), then those the proxy added, by name.
func writeBody(t dialect.Turn, system, messages []byte) []byte {
	n := 64 + len(system) + len(messages)
	for k, v := range t.Fields {
		if k != "messages" && k != "system" {
			n += len(k) + len(v) + 4
		}
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	member := func(k string, v []byte) {
		if len(b) > 1 {
			b = append(b, ',')
		}
		b = jsontext.AppendString(b, k)
		b = append(append(b, ':'), v...)
	}
	keys := slices.Clone(t.Order)
	if !slices.Contains(keys, "messages") {
		keys = append(keys, "messages")
	}
	if !slices.Contains(keys, "system") {
		keys = slices.Insert(keys, slices.Index(keys, "messages"), "system")
	}
	added := len(keys)
	for k := range t.Fields {
		if !slices.Contains(keys, k) {
			keys = append(keys, k) // added by the proxy
		}
	}
	slices.Sort(keys[added:])
	for _, k := range keys {
		switch k {
		case "system":
			if system != nil {
				member(k, system)
			}
		case "messages":
			member(k, messages)
		default:
			member(k, t.Fields[k])
		}
	}
	return append(b, '}')
}

// unescapeHTML undoes the escapes of <, >, &, U+2028 and U+2029 that the store's encoding (as
// encoding/json's) writes in a stored original: an agent's JSON (JavaScript's, Python's) has
// them as they are, and the original is its bytes.
func unescapeHTML(b []byte) []byte {
	if !bytes.Contains(b, []byte(`\u00`)) && !bytes.Contains(b, []byte(`\u202`)) {
		return b
	}
	out := make([]byte, 0, len(b))
	for i := 0; i < len(b); i++ {
		c := b[i]
		if c != '\\' || i+1 >= len(b) {
			out = append(out, c)
			continue
		}
		if b[i+1] == 'u' && i+6 <= len(b) {
			switch string(b[i+2 : i+6]) {
			case "003c", "003C":
				out, i = append(out, '<'), i+5
				continue
			case "003e", "003E":
				out, i = append(out, '>'), i+5
				continue
			case "0026":
				out, i = append(out, '&'), i+5
				continue
			case "2028":
				out, i = append(out, "\u2028"...), i+5
				continue
			case "2029":
				out, i = append(out, "\u2029"...), i+5
				continue
			}
		}
		out = append(out, c, b[i+1]) // an escape kept as it is, \\ included
		i++
	}
	return out
}
