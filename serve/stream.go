package serve

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/memcascade/memcascade/serve/dialect"
)

// relayStream passes server-sent events to the client as they arrive, an event at a time,
// and assembles the reply with the dialect's Stream. The stream ends for the client as the
// upstream ended it only when the reply was stored: the event that ends it (Chat Completions'
// data: [DONE], ...) is held back until then. A stream that breaks off (no end nor finish
// before its end, a read error, a line or a total over the limits, an event that cannot be
// assembled) or whose reply cannot be stored ends with the dialect's error event and not its
// end, so that every client raises. An error event of the upstream's own is passed through,
// and nothing is stored. What the upstream sends after its end is not read.
func (s *Server) relayStream(w http.ResponseWriter, r *http.Request, d dialect.Dialect, thread string, body io.Reader, calibrate func(dialect.Usage)) bool {
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	w.WriteHeader(http.StatusOK)
	fail := func(code, msg string) bool {
		s.Logger.Warn("stream ended with an error event", "thread", thread, "code", code)
		w.Write(d.StreamError(code, msg))
		flush()
		return false
	}
	acc := d.Stream()
	sse := newLineReader(body, s.MaxReplyBytes, s.MaxSSEEventBytes)
	var ev sseEvent
	var end []byte // the held-back last event
	// What the relay holds, the reply assembled and its buffers, counts against the bytes in
	// flight as bodies do; over them the stream ends with an error event.
	held, taken := newHeld(acc), int64(0)
	defer func() { s.inflight.give(taken) }()
	for end == nil {
		line, err := sse.next()
		if len(line) > 0 {
			ev.add(line)
		}
		if ev.complete() || err != nil && len(ev.raw) > 0 {
			act, aerr := acc.Event(ev.name, ev.data)
			if aerr != nil {
				return fail("bad_upstream_stream", "the upstream's stream cannot be relayed: "+aerr.Error()+"; nothing was stored")
			}
			if n := held.bytes(ev.data) + int64(cap(ev.raw)+cap(ev.data)+cap(sse.line)+sseBufferBytes); n > taken {
				if !s.inflight.take(n - taken) {
					return fail("server_busy", fmt.Sprintf("the server holds its limit of bytes in flight (MaxInFlightBytes) with the reply of this stream (%d bytes held); nothing was stored", n))
				}
				taken = n
			}
			if act == dialect.End {
				end = bytes.Clone(ev.raw)
				break
			}
			if _, werr := w.Write(ev.raw); werr != nil {
				return false // the client left
			}
			flush()
			ev.reset()
		}
		if err != nil {
			if r.Context().Err() != nil {
				return false // the client left
			}
			if acc.Failed() {
				flush()
				return false // the upstream's own error event was passed on
			}
			if err != io.EOF {
				return fail("upstream_stream_broken", "the upstream's stream broke off: "+redactURLError(err)+"; nothing was stored")
			}
			if !acc.Done() {
				return fail("upstream_stream_broken", "the upstream's stream ended before its last event (it gave no finish); nothing was stored")
			}
			break
		}
	}
	if acc.Failed() {
		flush()
		return false
	}
	if r.Context().Err() != nil {
		return false // the client left: it never sees the end, so nothing is stored
	}
	if u := acc.Usage(); u.PromptTokens > 0 {
		calibrate(u)
	}
	if _, err := s.storeReply(context.WithoutCancel(r.Context()), thread, acc.Messages(), acc.Usage()); err != nil {
		return fail("reply_not_stored", "the model's reply could not be stored: "+err.Error())
	}
	s.compactLater(thread)
	if end != nil {
		w.Write(end)
	}
	flush()
	return true
}

// sseEvent is the event being read: its lines as sent (raw), its name (the event: line) and
// its data (the data: lines, joined by newlines).
type sseEvent struct {
	raw, data []byte
	name      string
	lines     int  // data: lines
	done      bool // its blank line was read
}

// add adds a line (with its newline) to the event.
func (e *sseEvent) add(line []byte) {
	e.raw = append(e.raw, line...)
	l := bytes.TrimRight(line, "\r\n")
	switch {
	case len(l) == 0:
		e.done = true
	case bytes.HasPrefix(l, []byte("data:")):
		if e.lines > 0 {
			e.data = append(e.data, '\n')
		}
		e.data = append(e.data, bytes.TrimSpace(l[len("data:"):])...)
		e.lines++
	case bytes.HasPrefix(l, []byte("event:")):
		e.name = string(bytes.TrimSpace(l[len("event:"):]))
	}
}

// complete reports whether the event's blank line was read.
func (e *sseEvent) complete() bool { return e.done }

func (e *sseEvent) reset() {
	e.raw, e.data, e.name, e.lines, e.done = e.raw[:0], e.data[:0], "", 0, false
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
	return &lineReader{br: bufio.NewReaderSize(r, sseBufferBytes), max: max, maxEvent: maxEvent}
}

// sseBufferBytes is the read buffer of a relayed stream.
const sseBufferBytes = 64 << 10

// heldReply measures what a stream's assembler holds: its own count (dialect.Holder), else the
// data of the events it took, a bound of what it can have kept of them.
type heldReply struct {
	h    dialect.Holder
	data int64
}

func newHeld(acc dialect.Stream) *heldReply {
	h, _ := acc.(dialect.Holder)
	return &heldReply{h: h}
}

// bytes returns what the assembler holds after it took an event of data.
func (r *heldReply) bytes(data []byte) int64 {
	if r.h != nil {
		return int64(r.h.Held())
	}
	r.data += int64(len(data))
	return r.data
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
