package mcpserver

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"unicode/utf8"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/transcript"
)

// readChunk is how many messages memory_read reads from the store at a time: it stops at its
// bound, so the messages of a long range are not all held at once.
const readChunk = 8

// Bytes of text per token of the bound. A message is shown whole only when its text is at
// most wholeBytesPerToken bytes per token left (a text the tokenizer packs tightly is cut too);
// a part of a cut message is at most partBytesPerToken bytes per token (about what English
// takes) and within the tokens left.
const (
	wholeBytesPerToken = 16
	partBytesPerToken  = 4
)

func (h *handler) read(ctx context.Context, _ *mcp.CallToolRequest, in ReadInput) (*mcp.CallToolResult, ReadOutput, error) {
	thread, err := h.thread(in.Thread)
	if err != nil {
		return nil, ReadOutput{}, err
	}
	if in.FromSeq < 1 || in.ToSeq < in.FromSeq {
		return nil, ReadOutput{}, fmt.Errorf("from_seq %d, to_seq %d: want 1 <= from_seq <= to_seq", in.FromSeq, in.ToSeq)
	}
	if in.Offset < 0 {
		return nil, ReadOutput{}, fmt.Errorf("offset %d: want 0 or more (a cut's next_offset)", in.Offset)
	}
	bound := h.opt.ReadTokens
	// Read no more than the bound can take: a message takes at least 4 tokens.
	to := min(in.ToSeq, in.FromSeq+int64(bound/4))
	out := ReadOutput{Thread: thread, Messages: []ReadMessage{}}
	used := 0
	last := int64(0) // the last message shown to its end
	ended := false   // the thread has no message after last
	// The first message is read alone (it is the one cut when it is over the bound), the
	// others readChunk at a time.
	for seq, end := in.FromSeq, in.FromSeq; seq <= to && !out.Truncated; seq, end = end+1, min(end+readChunk, to) {
		es, err := h.store.Messages(ctx, thread, seq, end, memory.ReadOptions{Light: true})
		if errors.Is(err, memory.ErrMessageNotFound) && seq > in.FromSeq {
			ended = true // the thread ends at the previous chunk
			break
		} else if err != nil {
			return nil, ReadOutput{}, err
		}
		for i, e := range es {
			if strings.ContainsRune(e.Text(), utf8.RuneError) {
				// An entry read light holds the text stored for search, in which NUL and
				// bytes that are not UTF-8 are U+FFFD: such a message is read again whole,
				// to show its text as it was given.
				full, err := h.store.Messages(ctx, thread, e.Seq, e.Seq)
				if err != nil {
					return nil, ReadOutput{}, err
				}
				es[i] = full[0]
			}
		}
		views, err := h.views(ctx, thread, es)
		if err != nil {
			return nil, ReadOutput{}, err
		}
		for i, e := range es {
			left := bound - used
			bytes := textBytes(e)
			over := e.Tokens > left || bytes > wholeBytesPerToken*int64(left)
			if len(out.Messages) == 0 && (over || in.Offset > 0) {
				m, err := h.cut(ctx, thread, e, views[i], in.Offset, left)
				if err != nil {
					return nil, ReadOutput{}, err
				}
				out.Messages = append(out.Messages, m)
				if m.Cut.NextOffset > 0 {
					out.NextSeq = e.Seq
				} else {
					last = e.Seq
				}
				out.Truncated = true // a cut message comes alone
				break
			}
			if over {
				out.Truncated, out.NextSeq = true, e.Seq
				break
			}
			m := whole(e, views[i])
			used += e.Tokens
			out.Messages = append(out.Messages, m)
			last = e.Seq
		}
		if len(es) == 0 || es[len(es)-1].Seq < end {
			ended = true
			break
		}
	}
	if out.NextSeq == 0 {
		// Nothing stopped the answer before a message: it ends at the range's end, the
		// thread's, the read's own bound (to) or a cut message's end.
		out.Truncated = false
		if last < in.ToSeq && !ended {
			if v, err := h.store.Version(ctx, thread); err == nil && v.LastSeq > last {
				out.Truncated, out.NextSeq = true, last+1
			}
		}
	}
	return nil, out, nil
}

// textBytes is the size of an entry's text as offsets count it: its content, then each tool
// call's arguments.
func textBytes(e memory.Entry) int64 {
	n := int64(len(e.Text()))
	for _, c := range e.Message.ToolCalls {
		n += int64(len(c.Function.Arguments))
	}
	return n
}

// views returns es (consecutive messages) as memory_read shows them: as a provider reads them
// (compact.Compactor.ReadProviderView), or as stored when the server is raw.
func (h *handler) views(ctx context.Context, thread string, es []memory.Entry) ([]transcript.Message, error) {
	if !h.opt.Raw && h.opt.Compactor.Redact != nil {
		return h.opt.Compactor.ReadProviderView(ctx, thread, es)
	}
	out := make([]transcript.Message, len(es))
	for i, e := range es {
		out[i] = transcript.Message{Seq: e.Seq, Role: e.Message.Role, Name: e.Message.Name, ToolCallID: e.Message.ToolCallID, Text: e.Text()}
		for _, c := range e.Message.ToolCalls {
			out[i].ToolCalls = append(out[i].ToolCalls, transcript.ToolCall{ID: c.ID, Name: c.Function.Name, Arguments: c.Function.Arguments})
		}
	}
	return out, nil
}

// whole returns a message as memory_read shows it, its fields those of v (views).
func whole(e memory.Entry, v transcript.Message) ReadMessage {
	m := ReadMessage{Seq: e.Seq, Role: e.Message.Role, Content: v.Text, Name: v.Name, ToolCallID: v.ToolCallID, Tokens: e.Tokens}
	for _, c := range v.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, ReadCall{ID: c.ID, Name: c.Name, Arguments: c.Arguments})
	}
	return m
}

// cut returns the part of a message that starts at byte offset of its text (its content, then
// each tool call's arguments, as shown: redacted whole first, so that the part holds no piece of
// a secret) and takes at most budget tokens, with its cut saying where the rest starts.
func (h *handler) cut(ctx context.Context, thread string, e memory.Entry, v transcript.Message, offset int64, budget int) (ReadMessage, error) {
	segs := []string{v.Text}
	for _, c := range v.ToolCalls {
		segs = append(segs, c.Arguments)
	}
	total := int64(0)
	for _, s := range segs {
		total += int64(len(s))
	}
	if offset > 0 && offset >= total {
		return ReadMessage{}, fmt.Errorf("offset %d: message %d has %d bytes of text (its content, then its tool-call arguments)", offset, e.Seq, total)
	}
	t, err := h.store.Thread(ctx, thread)
	if err != nil {
		return ReadMessage{}, err
	}
	counter, err := h.store.Counter(t.Encoding) // what the thread's messages were counted with
	if err != nil {
		return ReadMessage{}, err
	}
	parts, start, next, tokens := cutSegments(segs, offset, max(budget, 1), counter.CountText)
	m := ReadMessage{Seq: e.Seq, Role: e.Message.Role, Content: parts[0], Name: v.Name, ToolCallID: v.ToolCallID, Tokens: tokens}
	for i, c := range v.ToolCalls {
		m.ToolCalls = append(m.ToolCalls, ReadCall{ID: c.ID, Name: c.Name, Arguments: parts[i+1]})
	}
	shown := int64(0)
	for _, p := range parts {
		shown += int64(len(p))
	}
	m.Cut = &ReadCut{Tokens: e.Tokens, Bytes: total, Offset: start, NextOffset: next,
		Note: fmt.Sprintf("message %d is %d tokens, %d bytes of text: this is bytes %d to %d", e.Seq, e.Tokens, total, start, start+shown)}
	if next > 0 {
		m.Cut.Note += fmt.Sprintf("; read on with from_seq %d, offset %d", e.Seq, next)
	} else {
		m.Cut.Note += ", its end"
	}
	return m, nil
}

// cutSegments returns the part of the text made of segs, one after the other, that starts at
// byte offset (moved back to the start of its character) and takes at most budget tokens as
// count counts them, piece by piece: the piece of each segment (empty when the part does not
// reach it), where the part starts, where the rest starts (0: the part ends the text), and the
// tokens of the part. The part holds at least one character when the text has one past offset.
func cutSegments(segs []string, offset int64, budget int, count func(string) int) (parts []string, start, next int64, tokens int) {
	parts = make([]string, len(segs))
	base := int64(0)
	for _, s := range segs {
		if offset < base+int64(len(s)) {
			at := int(offset - base)
			for at > 0 && !utf8.RuneStart(s[at]) {
				at--
			}
			offset = base + int64(at)
			break
		}
		base += int64(len(s))
	}
	start, base = offset, 0
	taken := false
	for i, s := range segs {
		a := base
		base += int64(len(s))
		if base <= start {
			continue // before the part (or empty)
		}
		from := 0
		if start > a {
			from = int(start - a)
		}
		n, t := cutText(s[from:], budget-tokens, count)
		if n == 0 && !taken {
			_, n = utf8.DecodeRuneInString(s[from:])
			t = count(s[from : from+n])
		}
		parts[i], taken, tokens = s[from:from+n], true, tokens+t
		if from+n < len(s) {
			return parts, start, a + int64(from+n), tokens
		}
	}
	return parts, start, 0, tokens
}

// cutText returns how many bytes of s to take within budget tokens, at most
// partBytesPerToken a token, and their tokens.
func cutText(s string, budget int, count func(string) int) (n, tokens int) {
	if s == "" || budget <= 0 {
		return 0, 0
	}
	n = min(len(s), budget*partBytesPerToken)
	for {
		if n < len(s) {
			n = cutPoint(s, n)
		}
		if n == 0 {
			return 0, 0
		}
		if tokens = count(s[:n]); tokens <= budget {
			return n, tokens
		}
		n = n * budget / tokens * 9 / 10
	}
}

// cutPoint returns where to cut s before byte n (0 < n < len(s)): after the last line break,
// else the last space, of the 256 bytes before n; else at the start of the character at n.
func cutPoint(s string, n int) int {
	lo := max(n-256, 0)
	if i := strings.LastIndexByte(s[lo:n], '\n'); i >= 0 {
		return lo + i + 1
	}
	if i := strings.LastIndexByte(s[lo:n], ' '); i >= 0 {
		return lo + i + 1
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return n
}
