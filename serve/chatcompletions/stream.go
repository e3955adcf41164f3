package chatcompletions

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"unsafe"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/serve/dialect"
)

// Stream assembles a streamed chat completion: choice 0's deltas, its usage, and data: [DONE],
// the event held back until the reply is stored.
func (Dialect) Stream() dialect.Stream { return &stream{} }

// Event adds a chunk's deltas; [DONE] ends the stream. A chunk that is not JSON is passed on
// and ignored.
func (a *stream) Event(_ string, data []byte) (dialect.Action, error) {
	if bytes.Equal(data, []byte("[DONE]")) {
		a.done = true
		return dialect.End, nil
	}
	if u := UsageOf(data); u.PromptTokens > 0 {
		a.usage = u
	}
	return dialect.Pass, a.add(data)
}

// Done reports whether a finish_reason or [DONE] was seen.
func (a *stream) Done() bool { return a.finished || a.done }

// Failed reports whether an error event came instead of a chunk.
func (a *stream) Failed() bool { return a.failed }

// Messages is the assembled reply.
func (a *stream) Messages() []chat.Message { return []chat.Message{a.message()} }

// Held is what the assembled reply holds (dialect.Holder).
func (a *stream) Held() int {
	n := a.content.Cap() + a.refusal.Cap() + cap(a.calls)*int(unsafe.Sizeof(chat.ToolCall{}))
	for i, c := range a.calls {
		n += len(c.ID) + len(c.Type) + len(c.Function.Name) + a.args[i].Cap()
	}
	return n
}

// Usage is the usage a chunk reported (stream_options.include_usage).
func (a *stream) Usage() dialect.Usage { return a.usage }

// MaxToolCalls bounds the tool calls of one streamed reply: a tool call's index in a chunk is
// from 0 to MaxToolCalls-1.
const MaxToolCalls = 128

// stream assembles choice 0's message from stream chunks.
type stream struct {
	role     string
	content  strings.Builder
	refusal  strings.Builder
	text     bool // a content delta was seen
	refused  bool // a refusal delta was seen
	calls    []chat.ToolCall
	args     []*strings.Builder // the arguments of each call, as they came
	finished bool               // a finish_reason was seen
	done     bool               // data: [DONE] was seen
	failed   bool               // an error event came instead of a chunk
	usage    dialect.Usage
}

// add adds a chunk's deltas. It returns an error for a chunk that cannot be assembled (a tool
// call's index out of range); a chunk that is not JSON is passed on and ignored.
func (a *stream) add(data []byte) error {
	var chunk struct {
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Role      string  `json:"role"`
				Content   *string `json:"content"`
				Refusal   *string `json:"refusal"`
				ToolCalls []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &chunk) != nil {
		return nil
	}
	if len(chunk.Error) > 0 && !bytes.Equal(chunk.Error, []byte("null")) {
		a.failed = true
	}
	for _, c := range chunk.Choices {
		if c.Index != 0 {
			continue
		}
		if c.Delta.Role != "" {
			a.role = c.Delta.Role
		}
		if c.Delta.Content != nil {
			a.text = true
			a.content.WriteString(*c.Delta.Content)
		}
		if c.Delta.Refusal != nil {
			a.refused = true
			a.refusal.WriteString(*c.Delta.Refusal)
		}
		for _, tc := range c.Delta.ToolCalls {
			if tc.Index < 0 || tc.Index >= MaxToolCalls {
				return fmt.Errorf("a tool call's index is %d: want 0 to %d", tc.Index, MaxToolCalls-1)
			}
			for len(a.calls) <= tc.Index {
				a.calls = append(a.calls, chat.ToolCall{})
				a.args = append(a.args, &strings.Builder{})
			}
			call := &a.calls[tc.Index]
			if tc.ID != "" {
				call.ID = tc.ID
			}
			if tc.Type != "" {
				call.Type = tc.Type
			}
			call.Function.Name += tc.Function.Name
			a.args[tc.Index].WriteString(tc.Function.Arguments) // not +=: a long stream of small deltas would copy it at each
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			a.finished = true
		}
	}
	return nil
}

// message is the assembled reply: its text, its refusal (content null when the model gave
// only a refusal) and its tool calls (content null when it gave no text beside them).
func (a *stream) message() chat.Message {
	role := a.role
	if role == "" {
		role = chat.RoleAssistant
	}
	m := chat.TextMessage(role, a.content.String())
	if a.refused {
		r, _ := json.Marshal(a.refusal.String())
		m.Extra = map[string]json.RawMessage{"refusal": r}
		if a.content.Len() == 0 {
			m.Content = json.RawMessage("null")
		}
	}
	if len(a.calls) > 0 {
		for i := range a.calls {
			a.calls[i].Function.Arguments = a.args[i].String()
			if a.calls[i].Type == "" {
				a.calls[i].Type = "function"
			}
		}
		m.ToolCalls = a.calls
		if a.content.Len() == 0 {
			m.Content = json.RawMessage("null")
		}
	}
	return m
}
