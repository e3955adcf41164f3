package anthropic

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/jsontext"
	"github.com/memcascade/memcascade/serve/dialect"
)

// usage is a Messages usage object.
type usage struct {
	InputTokens              int `json:"input_tokens"`
	CacheReadInputTokens     int `json:"cache_read_input_tokens"`
	CacheCreationInputTokens int `json:"cache_creation_input_tokens"`
	OutputTokens             int `json:"output_tokens"`
}

// of is the prompt's usage: its tokens, cache reads and writes included.
func (u usage) of() dialect.Usage {
	return dialect.Usage{PromptTokens: u.InputTokens + u.CacheReadInputTokens + u.CacheCreationInputTokens, CachedTokens: u.CacheReadInputTokens,
		CompletionTokens: u.OutputTokens}
}

// Reply reads a message: one assistant message (see assistantMessage) whose original is its
// role and content as the upstream gave them, and the usage of its prompt.
func (Dialect) Reply(b []byte) ([]chat.Message, dialect.Usage, error) {
	var resp struct {
		Type    string          `json:"type"`
		Role    string          `json:"role"`
		Content json.RawMessage `json:"content"`
		Usage   usage           `json:"usage"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return nil, dialect.Usage{}, fmt.Errorf("the upstream's reply is not a message: %v", err)
	}
	c := bytes.TrimSpace(resp.Content)
	if resp.Type != "message" || len(c) == 0 || c[0] != '[' {
		return nil, dialect.Usage{}, errors.New("the upstream's reply is not a message with content blocks")
	}
	m, err := replyMessage(splitArray(c))
	if err != nil {
		return nil, dialect.Usage{}, fmt.Errorf("the upstream's reply: %v", err)
	}
	return []chat.Message{m}, resp.Usage.of(), nil
}

// replyMessage is the assistant message of a reply's content blocks, each as given.
func replyMessage(raws [][]byte) (chat.Message, error) {
	blocks := make([]block, len(raws))
	for k, raw := range raws {
		if !readBlock(raw, &blocks[k]) {
			return chat.Message{}, fmt.Errorf("content[%d]: want a content block, an object with a type", k)
		}
	}
	m, err := assistantMessage(blocks)
	if err != nil {
		return m, err
	}
	m.Extra = map[string]json.RawMessage{Key: messageObject(chat.RoleAssistant, raws, nil)}
	return m, nil
}

// Stream assembles a streamed message from its events: each content block from its
// content_block_start with its deltas applied, the usage of message_start and message_delta.
// message_stop is held back until the reply is stored.
func (Dialect) Stream() dialect.Stream { return &stream{} }

// MaxBlocks bounds the content blocks of one streamed message: an index is from 0 to
// MaxBlocks-1.
const MaxBlocks = 4096

// stream assembles a message from its events.
type stream struct {
	blocks  []*streamBlock
	usage   usage
	stopped bool // message_delta gave a stop_reason
	done    bool // message_stop was seen
	failed  bool // an error event came
}

// streamBlock is a content block being assembled: its start, as sent, and its deltas.
type streamBlock struct {
	start                     []byte
	text, thinking, signature strings.Builder
	input                     strings.Builder
	citations                 [][]byte
	hasText, hasThinking      bool
	hasSignature, hasInput    bool
}

// Held is what the assembled reply holds (dialect.Holder).
func (a *stream) Held() int {
	n := 0
	for _, b := range a.blocks {
		n += len(b.start) + b.text.Cap() + b.thinking.Cap() + b.signature.Cap() + b.input.Cap()
		for _, c := range b.citations {
			n += len(c)
		}
	}
	return n
}

// Event applies one event.
func (a *stream) Event(name string, data []byte) (dialect.Action, error) {
	var ev struct {
		Type    string `json:"type"`
		Index   int    `json:"index"`
		Message *struct {
			Usage *usage `json:"usage"`
		} `json:"message"`
		ContentBlock json.RawMessage `json:"content_block"`
		Delta        *struct {
			Type        string          `json:"type"`
			Text        string          `json:"text"`
			PartialJSON string          `json:"partial_json"`
			Thinking    string          `json:"thinking"`
			Signature   string          `json:"signature"`
			Citation    json.RawMessage `json:"citation"`
			StopReason  *string         `json:"stop_reason"`
		} `json:"delta"`
		Usage *usage `json:"usage"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		switch {
		case name == "error":
			a.failed = true
			return dialect.Pass, nil
		case name == "" || strings.HasPrefix(name, "message") || strings.HasPrefix(name, "content_block"):
			return dialect.Pass, fmt.Errorf("event %q: its data is not JSON", name)
		}
		return dialect.Pass, nil // ping, or an event of a later version
	}
	if name == "" {
		name = ev.Type
	}
	switch name {
	case "error":
		a.failed = true
	case "message_start":
		if ev.Message != nil && ev.Message.Usage != nil {
			a.addUsage(*ev.Message.Usage)
		}
	case "message_delta":
		if ev.Usage != nil {
			a.addUsage(*ev.Usage)
		}
		if ev.Delta != nil && ev.Delta.StopReason != nil && *ev.Delta.StopReason != "" {
			a.stopped = true
		}
	case "message_stop":
		a.done = true
		return dialect.End, nil
	case "content_block_start":
		if ev.Index < 0 || ev.Index >= MaxBlocks {
			return dialect.Pass, fmt.Errorf("a content block's index is %d: want 0 to %d", ev.Index, MaxBlocks-1)
		}
		if c := bytes.TrimSpace(ev.ContentBlock); len(c) == 0 || c[0] != '{' {
			return dialect.Pass, fmt.Errorf("content_block_start %d: no content block", ev.Index)
		}
		for len(a.blocks) <= ev.Index {
			a.blocks = append(a.blocks, nil)
		}
		a.blocks[ev.Index] = &streamBlock{start: jsontext.Compact(ev.ContentBlock)}
	case "content_block_delta":
		if ev.Index < 0 || ev.Index >= len(a.blocks) || a.blocks[ev.Index] == nil {
			return dialect.Pass, fmt.Errorf("a delta of content block %d, which did not start", ev.Index)
		}
		if ev.Delta == nil {
			return dialect.Pass, nil
		}
		b, d := a.blocks[ev.Index], ev.Delta
		switch d.Type {
		case "text_delta":
			b.hasText = true
			b.text.WriteString(d.Text)
		case "input_json_delta":
			b.hasInput = true
			b.input.WriteString(d.PartialJSON)
		case "thinking_delta":
			b.hasThinking = true
			b.thinking.WriteString(d.Thinking)
		case "signature_delta":
			b.hasSignature = true
			b.signature.WriteString(d.Signature)
		case "citations_delta":
			if len(d.Citation) > 0 {
				b.citations = append(b.citations, jsontext.Compact(d.Citation))
			}
		}
	case "content_block_stop":
		if ev.Index < 0 || ev.Index >= len(a.blocks) || a.blocks[ev.Index] == nil {
			return dialect.Pass, fmt.Errorf("content block %d stopped, which did not start", ev.Index)
		}
		if b := a.blocks[ev.Index]; b.hasInput && b.input.Len() > 0 && !json.Valid([]byte(b.input.String())) {
			return dialect.Pass, fmt.Errorf("content block %d: its input is not JSON", ev.Index)
		}
	}
	return dialect.Pass, nil
}

// addUsage takes the prompt's usage as an event gives it: message_start gives it, and a
// message_delta may give it again, whole. The output tokens a message_delta gives are the
// reply's so far: the last one given counts.
func (a *stream) addUsage(u usage) {
	out := max(u.OutputTokens, a.usage.OutputTokens)
	if u.InputTokens+u.CacheReadInputTokens+u.CacheCreationInputTokens > 0 {
		a.usage = u
	}
	if u.OutputTokens > 0 {
		out = u.OutputTokens
	}
	a.usage.OutputTokens = out
}

// Done reports whether message_stop, or a stop_reason, was seen.
func (a *stream) Done() bool { return a.done || a.stopped }

// Failed reports whether an error event came.
func (a *stream) Failed() bool { return a.failed }

// Usage is the usage of the prompt the stream reported.
func (a *stream) Usage() dialect.Usage { return a.usage.of() }

// Messages is the assembled message: what Reply gives of the same message.
func (a *stream) Messages() []chat.Message {
	raws := make([][]byte, 0, len(a.blocks))
	for _, b := range a.blocks {
		if b != nil {
			raws = append(raws, b.block())
		}
	}
	m, err := replyMessage(raws)
	if err != nil {
		m = chat.TextMessage(chat.RoleAssistant, "")
	}
	return []chat.Message{m}
}

// block is the assembled block: its start with the members its deltas make replaced, in the
// start's order (those it lacks after them).
func (b *streamBlock) block() []byte {
	set := map[string][]byte{}
	var order []string
	put := func(k string, v []byte) {
		if _, ok := set[k]; !ok {
			order = append(order, k)
		}
		set[k] = v
	}
	str := func(s string) []byte { return jsontext.AppendString(nil, s) }
	if b.hasText {
		put("text", str(b.text.String()))
	}
	if b.hasThinking {
		put("thinking", str(b.thinking.String()))
	}
	if b.hasSignature {
		put("signature", str(b.signature.String()))
	}
	if b.hasInput && b.input.Len() > 0 {
		put("input", jsontext.Compact([]byte(b.input.String())))
	}
	if b.citations != nil {
		put("citations", append(append([]byte{'['}, bytes.Join(b.citations, []byte{','})...), ']'))
	}
	if len(set) == 0 {
		return b.start
	}
	out := make([]byte, 0, len(b.start)+b.text.Len()+b.thinking.Len()+b.input.Len()+64)
	out = append(out, '{')
	written := map[string]bool{}
	write := func(k string, v []byte) {
		if len(out) > 1 {
			out = append(out, ',')
		}
		out = jsontext.AppendString(out, k)
		out = append(out, ':')
		out = append(out, v...)
	}
	for _, m := range members(b.start) {
		if v, ok := set[m.Key]; ok {
			write(m.Key, v)
			written[m.Key] = true
		} else {
			write(m.Key, m.Val)
		}
	}
	for _, k := range order {
		if !written[k] {
			write(k, set[k])
		}
	}
	return append(out, '}')
}
