package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/memcascade/memcascade/chat"
)

// relayStream passes server-sent events to the client as they arrive and assembles the reply
// from the deltas of choice 0. The stream ends for the client as the upstream ended it only
// when the reply was stored: the upstream's data: [DONE] is held back until then. A stream
// that breaks off (no [DONE] nor finish_reason before its end, a read error, a line or a
// total over the limits, a chunk that cannot be assembled) or whose reply cannot be stored
// ends with an error event in OpenAI's shape (data: {"error": {...}}) and no [DONE], so
// that every client raises. An error event of the upstream's own is passed through, and
// nothing is stored. What the upstream sends after [DONE] is not read.
func (s *Server) relayStream(w http.ResponseWriter, r *http.Request, thread string, body io.Reader, calibrate func(int)) bool {
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	w.WriteHeader(http.StatusOK)
	fail := func(code, msg string) bool {
		s.Logger.Warn("stream ended with an error event", "thread", thread, "code", code)
		writeErrorEvent(w, code, msg)
		flush()
		return false
	}
	var acc streamReply
	sse := newLineReader(body, s.MaxReplyBytes, s.MaxSSEEventBytes)
	done := false
	for !done {
		line, err := sse.next()
		if len(line) > 0 {
			data, isData := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
			data = bytes.TrimSpace(data)
			if isData && bytes.Equal(data, []byte("[DONE]")) {
				done = true
				break
			}
			if isData {
				if aerr := acc.add(data); aerr != nil {
					return fail("bad_upstream_stream", "the upstream's stream cannot be relayed: "+aerr.Error()+"; nothing was stored")
				}
				if n := promptTokens(data); n > 0 {
					calibrate(n)
				}
			}
			if _, werr := w.Write(line); werr != nil {
				return false // the client left
			}
			if len(bytes.TrimSpace(line)) == 0 {
				flush() // the end of an event
			}
		}
		if err != nil {
			if r.Context().Err() != nil {
				return false // the client left
			}
			if acc.failed {
				flush()
				return false // the upstream's own error event was passed on
			}
			if err != io.EOF {
				return fail("upstream_stream_broken", "the upstream's stream broke off: "+redactURLError(err)+"; nothing was stored")
			}
			if !acc.finished {
				return fail("upstream_stream_broken", "the upstream's stream ended before its last chunk (it gave no finish_reason); nothing was stored")
			}
			break
		}
	}
	if acc.failed {
		flush()
		return false
	}
	if r.Context().Err() != nil {
		return false // the client left: it never sees the end, so nothing is stored
	}
	reply := acc.message()
	if _, err := s.storeReply(context.WithoutCancel(r.Context()), thread, []chat.Message{reply}); err != nil {
		return fail("reply_not_stored", "the model's reply could not be stored: "+err.Error())
	}
	s.compactLater(thread)
	if done {
		io.WriteString(w, "data: [DONE]\n\n")
	}
	flush()
	return true
}

// lineReader reads the lines of a stream, each at most MaxSSELineBytes, those of one event
// (up to the blank line that ends it) at most maxEvent bytes together, and all together at
// most max bytes; over any, next returns an error saying which. It holds one line at a time:
// an event's lines are relayed as they come, and what they add to the reply is bounded by
// the event's bound.
type lineReader struct {
	br              *bufio.Reader
	max, read       int64
	maxEvent, event int64 // the bound of an event and the bytes of the current one
	line            []byte
}

// MaxSSELineBytes bounds one line of an upstream's stream (one data: line holds one chunk).
const MaxSSELineBytes = 4 << 20

func newLineReader(r io.Reader, max, maxEvent int64) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max, maxEvent: maxEvent}
}

// next returns the next line with its newline (without at the end of the stream), and the
// error that ended the stream (io.EOF at its end).
func (l *lineReader) next() ([]byte, error) {
	l.line = l.line[:0]
	for {
		frag, err := l.br.ReadSlice('\n')
		l.read += int64(len(frag))
		if l.read > l.max {
			return nil, fmt.Errorf("the stream is over %d bytes", l.max)
		}
		if len(l.line)+len(frag) > MaxSSELineBytes {
			return nil, fmt.Errorf("a line of the stream is over %d bytes", MaxSSELineBytes)
		}
		l.event += int64(len(frag))
		if l.event > l.maxEvent {
			return nil, fmt.Errorf("an event of the stream is over %d bytes", l.maxEvent)
		}
		l.line = append(l.line, frag...)
		if err != bufio.ErrBufferFull {
			if len(bytes.TrimSpace(l.line)) == 0 {
				l.event = 0 // a blank line ends the event
			}
			return l.line, err
		}
	}
}

// MaxToolCalls bounds the tool calls of one streamed reply: a tool call's index in a chunk is
// from 0 to MaxToolCalls-1.
const MaxToolCalls = 128

// streamReply assembles choice 0's message from stream chunks.
type streamReply struct {
	role     string
	content  strings.Builder
	refusal  strings.Builder
	text     bool // a content delta was seen
	refused  bool // a refusal delta was seen
	calls    []chat.ToolCall
	finished bool // a finish_reason was seen
	failed   bool // an error event came instead of a chunk
}

// add adds a chunk's deltas. It returns an error for a chunk that cannot be assembled (a tool
// call's index out of range); a chunk that is not JSON is passed on and ignored.
func (a *streamReply) add(data []byte) error {
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
			}
			call := &a.calls[tc.Index]
			if tc.ID != "" {
				call.ID = tc.ID
			}
			if tc.Type != "" {
				call.Type = tc.Type
			}
			call.Function.Name += tc.Function.Name
			call.Function.Arguments += tc.Function.Arguments
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			a.finished = true
		}
	}
	return nil
}

// message is the assembled reply: its text, its refusal (content null when the model gave
// only a refusal) and its tool calls (content null when it gave no text beside them).
func (a *streamReply) message() chat.Message {
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
