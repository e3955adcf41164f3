package responses

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

// usage is a Responses usage object.
type usage struct {
	InputTokens        int `json:"input_tokens"`
	OutputTokens       int `json:"output_tokens"`
	InputTokensDetails struct {
		CachedTokens int `json:"cached_tokens"`
	} `json:"input_tokens_details"`
}

func (u *usage) of() dialect.Usage {
	if u == nil {
		return dialect.Usage{}
	}
	return dialect.Usage{PromptTokens: u.InputTokens, CachedTokens: u.InputTokensDetails.CachedTokens, CompletionTokens: u.OutputTokens}
}

// response is what is read of a response object.
type response struct {
	Object string            `json:"object"`
	Status string            `json:"status"`
	Output []json.RawMessage `json:"output"`
	Usage  *usage            `json:"usage"`
}

// Reply reads a response: its output items as chat messages (as Parse reads the same items
// when the agent sends them back), and the usage of its prompt.
func (Dialect) Reply(b []byte) ([]chat.Message, dialect.Usage, error) {
	var r response
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, dialect.Usage{}, fmt.Errorf("the upstream's reply is not a response: %v", err)
	}
	if r.Object != "" && r.Object != "response" {
		return nil, dialect.Usage{}, fmt.Errorf("the upstream's reply is a %q, not a response", r.Object)
	}
	msgs, err := outputMessages(r.Output)
	if err != nil {
		return nil, dialect.Usage{}, fmt.Errorf("the upstream's reply: %v", err)
	}
	return msgs, r.Usage.of(), nil
}

// outputMessages reads output items as Parse reads input items.
func outputMessages(raws []json.RawMessage) ([]chat.Message, error) {
	bs := make([][]byte, len(raws))
	for i, r := range raws {
		bs[i] = jsontext.Compact(r)
	}
	runs, err := group(bs, "output")
	if err != nil {
		return nil, err
	}
	var msgs []chat.Message
	for i := range runs {
		m, err := runs[i].message()
		if err != nil {
			return nil, err
		}
		msgs = append(msgs, m)
	}
	if len(msgs) == 0 {
		return nil, errors.New("no output items")
	}
	return msgs, nil
}

// Stream assembles a streamed response from its events: each output item from
// response.output_item.done (from its added event and deltas when done is missing), the
// response and usage from response.completed, which is held back until the reply is stored.
func (Dialect) Stream() dialect.Stream { return &stream{} }

// MaxItems bounds the output items of one streamed response.
const MaxItems = 4096

type stream struct {
	items  []*streamItem
	final  []json.RawMessage // response.completed's output
	usage  *usage
	done   bool
	failed bool
}

type streamItem struct {
	added []byte // the item as added
	done  []byte // the item as done (nil: not yet)
	text  strings.Builder
	args  strings.Builder
}

// Held is what the assembled reply holds (dialect.Holder).
func (a *stream) Held() int {
	n := 0
	for _, it := range a.items {
		n += len(it.added) + len(it.done) + it.text.Cap() + it.args.Cap()
	}
	for _, f := range a.final {
		n += len(f)
	}
	return n
}

// Event applies one event.
func (a *stream) Event(name string, data []byte) (dialect.Action, error) {
	var ev struct {
		Type        string          `json:"type"`
		OutputIndex int             `json:"output_index"`
		Item        json.RawMessage `json:"item"`
		Delta       string          `json:"delta"`
		Response    *response       `json:"response"`
	}
	if err := json.Unmarshal(data, &ev); err != nil {
		if name == "error" {
			a.failed = true
			return dialect.Pass, nil
		}
		if name == "" || strings.HasPrefix(name, "response.") {
			return dialect.Pass, fmt.Errorf("event %q: its data is not JSON", name)
		}
		return dialect.Pass, nil
	}
	if name == "" {
		name = ev.Type
	}
	switch name {
	case "error", "response.failed":
		a.failed = true
	case "response.completed", "response.incomplete":
		if ev.Response != nil {
			a.final, a.usage = ev.Response.Output, ev.Response.Usage
		}
		a.done = true
		return dialect.End, nil
	case "response.output_item.added", "response.output_item.done":
		if ev.OutputIndex < 0 || ev.OutputIndex >= MaxItems {
			return dialect.Pass, fmt.Errorf("an output item's index is %d: want 0 to %d", ev.OutputIndex, MaxItems-1)
		}
		if c := bytes.TrimSpace(ev.Item); len(c) == 0 || c[0] != '{' {
			return dialect.Pass, fmt.Errorf("%s %d: no item", name, ev.OutputIndex)
		}
		for len(a.items) <= ev.OutputIndex {
			a.items = append(a.items, nil)
		}
		if a.items[ev.OutputIndex] == nil {
			a.items[ev.OutputIndex] = &streamItem{}
		}
		if name == "response.output_item.added" {
			a.items[ev.OutputIndex].added = jsontext.Compact(ev.Item)
		} else {
			a.items[ev.OutputIndex].done = jsontext.Compact(ev.Item)
		}
	case "response.output_text.delta", "response.function_call_arguments.delta", "response.custom_tool_call_input.delta":
		if ev.OutputIndex < 0 || ev.OutputIndex >= len(a.items) || a.items[ev.OutputIndex] == nil {
			return dialect.Pass, fmt.Errorf("a delta of output item %d, which was not added", ev.OutputIndex)
		}
		if name == "response.output_text.delta" {
			a.items[ev.OutputIndex].text.WriteString(ev.Delta)
		} else {
			a.items[ev.OutputIndex].args.WriteString(ev.Delta)
		}
	}
	return dialect.Pass, nil
}

// Done reports whether response.completed (or response.incomplete) came.
func (a *stream) Done() bool { return a.done }

// Failed reports whether an error or response.failed event came.
func (a *stream) Failed() bool { return a.failed }

// Usage is the usage response.completed reported.
func (a *stream) Usage() dialect.Usage { return a.usage.of() }

// Messages are the assembled output: response.completed's output when it gave one, else the
// items as done (or as added, with their deltas).
func (a *stream) Messages() []chat.Message {
	raws := a.final
	if len(raws) == 0 {
		for _, it := range a.items {
			if it != nil {
				raws = append(raws, it.item())
			}
		}
	}
	msgs, err := outputMessages(raws)
	if err != nil {
		return []chat.Message{textMessage(chat.RoleAssistant, "")}
	}
	return msgs
}

// item is the item as done, else as added with its deltas applied.
func (it *streamItem) item() []byte {
	if it.done != nil {
		return it.done
	}
	var m map[string]json.RawMessage
	if json.Unmarshal(it.added, &m) != nil {
		return it.added
	}
	if it.text.Len() > 0 {
		m["content"], _ = json.Marshal([]map[string]any{{"type": "output_text", "text": it.text.String(), "annotations": []any{}}})
	}
	if it.args.Len() > 0 {
		k := "arguments"
		if _, ok := m["input"]; ok {
			k = "input"
		}
		m[k] = jsontext.AppendString(nil, it.args.String())
	}
	b, _ := json.Marshal(m)
	return b
}
