package serve

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"

	"github.com/memcascade/memcascade/chat"
)

// Conflict is a request whose messages contradict the thread's stored history.
type Conflict struct {
	// Index is the request's message at fault (from 0); Seq the stored message it differs
	// from (0 when the request ends before the history does).
	Index int
	Seq   int64
	// Rewrite: the request is the thread's conversation rewritten by its agent (an edit, a
	// regenerate, its own compaction): it shares the thread's start or its instructions. The
	// proxy starts a new segment of the thread with it (see Server.turn). Otherwise the request
	// shares nothing with the thread and is refused.
	Rewrite bool
	// Msg says what differs, naming the request's message as messages[Index]; Text names it
	// in a dialect's own terms.
	Msg string
	why string // Msg without the request's message's name
}

func (c *Conflict) Error() string { return c.Msg }

// Text is Msg with the request's message named param ("messages[3]", "input[5]").
func (c *Conflict) Text(param string) string {
	if c.why == "" {
		return c.Msg
	}
	return strings.ReplaceAll(c.why, "{msg}", param)
}

// conflict makes a Conflict whose text names the request's message as {msg}.
func conflict(index int, seq int64, why string) *Conflict {
	return &Conflict{Index: index, Seq: seq, why: why, Msg: strings.ReplaceAll(why, "{msg}", fmt.Sprintf("messages[%d]", index))}
}

// Reconcile returns the messages of a request that are not yet in a thread's history, or the
// first point where the request contradicts it. An agent may send:
//
//   - its whole conversation (what OpenAI's SDKs and most frameworks do): the history is a
//     prefix of the request, and what follows it is new;
//   - only the new turn: nothing of the request is in the history, and all of it is new;
//   - the end of the history, then new messages (an agent that trims its own context, or
//     resends its last turn): the longest start of the request that is the end of the history
//     is skipped.
//
// In each case a leading block of system/developer messages that equals the thread's current
// one (its leading block, or the block it last stored in its place) is recognised and skipped;
// a leading block that differs from it is new instructions (many agents put the date in their
// system prompt): it is new, stored before the request's new messages, and the rest of the
// request is compared with the history without its system/developer messages. A request of
// one message, or that starts with the results of the calls the history leaves unanswered
// (parallel tool calls answered together), is a new turn.
//
// Otherwise the request rewrites the conversation, or is another one:
//
//   - a rewrite (Conflict.Rewrite): it starts like the history (its first message after the
//     system block equals the history's) and then differs (an edited message, a cleared tool
//     result, the agent's own compaction of what followed), or it ends before the thread's
//     stored reply (a regenerate), or its system block is one the thread has and what follows
//     differs from the first message on (the agent's own compaction of everything after its
//     instructions), or its system block is the start of the history's (the agent's
//     instructions, its other system messages moved later). The first differing message is
//     named;
//   - another conversation: it shares neither the thread's start nor its instructions. It is
//     never merged into the thread: the first differing message is named.
//
// Messages are compared by what the model sees (see sameMessage): role, content, name, tool
// calls and tool_call_id; other fields are not compared.
func Reconcile(history, req []chat.Message) ([]chat.Message, *Conflict) {
	if len(history) == 0 {
		return req, nil
	}
	pr := leadingSystem(req)
	var prompt []chat.Message // a changed system prompt: new
	if pr > 0 && !knownSystem(history, req[:pr]) {
		prompt = req[:pr]
	}
	// The history after its leading system block, as stored; or, when that does not match,
	// without any system/developer message (the blocks stored when the prompt changed).
	ph := leadingSystem(history)
	newMsgs, c := reconcileRest(history, req, pr, prompt, func(m chat.Message, i int) bool { return i >= ph })
	if c != nil && slices.ContainsFunc(history[ph:], isSystem) {
		return reconcileRest(history, req, pr, prompt, func(m chat.Message, _ int) bool { return !isSystem(m) })
	}
	return newMsgs, c
}

// reconcileRest compares req[pr:] with the messages of history that keep selects (see
// Reconcile); prompt, a changed system prompt, comes before the new messages it returns.
func reconcileRest(history, req []chat.Message, pr int, prompt []chat.Message, keep func(chat.Message, int) bool) ([]chat.Message, *Conflict) {
	var h []chat.Message
	var at []int // where each message of h is in history
	for i, m := range history {
		if keep(m, i) {
			h, at = append(h, m), append(at, i)
		}
	}
	at = append(at, len(history))
	r := req[pr:]
	fresh := func(ms []chat.Message) ([]chat.Message, *Conflict) {
		return append(slices.Clip(prompt), ms...), nil
	}
	// The whole history, then new messages.
	if len(r) >= len(h) && samePrefix(r, h) {
		return fresh(r[len(h):])
	}
	// The end of the history, then new messages: the longest such overlap.
	for k := min(len(r), len(h)); k >= 1; k-- {
		if samePrefix(r[:k], h[len(h)-k:]) {
			return fresh(r[k:])
		}
	}
	if len(r) == 1 || answersOpenCalls(r, h) {
		return fresh(r) // only the new turn
	}
	i := 0
	for i < len(r) && i < len(h) && sameMessage(r[i], h[i]) {
		i++
	}
	c := conflictAt(history, req, pr+i, at[min(i, len(at)-1)])
	c.Rewrite = i > 0 || resendsReply(r, h) || pr > 0 && (prompt == nil || startsInstructions(history, req[:pr]))
	return nil, c
}

// startsInstructions reports whether block, a request's leading system/developer messages,
// is the start of the history's leading block: the agent's instructions, without the system
// messages it put after them (Codex CLI, after compacting its conversation itself, sends its
// instructions first and its other developer messages later).
func startsInstructions(history, block []chat.Message) bool {
	n := leadingSystem(history)
	return len(block) > 0 && len(block) <= n && slices.EqualFunc(history[:len(block)], block, sameMessage)
}

// knownSystem reports whether block, a request's leading system/developer messages, is one
// of the blocks of consecutive system/developer messages of the history: its leading block,
// one stored when the agent changed its instructions, or one the agent put in mid-conversation.
func knownSystem(history, block []chat.Message) bool {
	for i := 0; i < len(history); i++ {
		if !isSystem(history[i]) || i > 0 && isSystem(history[i-1]) {
			continue // not the start of a block
		}
		n := leadingSystem(history[i:])
		if slices.EqualFunc(history[i:i+n], block, sameMessage) {
			return true
		}
	}
	return false
}

// answersOpenCalls reports a request that starts with a tool result answering a call the
// history leaves unanswered: the new turn of an agent that sends only it.
func answersOpenCalls(r, h []chat.Message) bool {
	if len(r) == 0 || r[0].Role != chat.RoleTool {
		return false
	}
	open := map[string]bool{}
	for _, m := range h {
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
		if m.Role == chat.RoleTool {
			delete(open, m.ToolCallID)
		}
	}
	return open[r[0].ToolCallID]
}

func isSystem(m chat.Message) bool {
	return m.Role == chat.RoleSystem || m.Role == chat.RoleDeveloper
}

// resendsReply reports a request that holds a stored assistant reply at its place in the
// history: a resent (edited) history, not a new turn, whatever its length.
func resendsReply(r, h []chat.Message) bool {
	for i := 0; i < len(r) && i < len(h); i++ {
		if r[i].Role == chat.RoleAssistant && sameMessage(r[i], h[i]) {
			return true
		}
	}
	return false
}

// conflictAt describes the difference between request message ri and stored message hi.
func conflictAt(history, req []chat.Message, ri, hi int) *Conflict {
	const hint = "; to start the thread over, send the header " + ResetHeader + ": 1"
	switch {
	case ri >= len(req):
		return conflict(ri, int64(hi+1), fmt.Sprintf(
			"the request's %d messages match the thread's history but end before it: the thread's message seq %d (%s) and the %d after it are not in the request%s",
			len(req), hi+1, history[hi].Role, len(history)-hi-1, hint))
	case hi >= len(history):
		return conflict(ri, 0, fmt.Sprintf(
			"the request's {msg} (%s) is a system/developer message where the thread's history has none%s", req[ri].Role, hint))
	}
	return conflict(ri, int64(hi+1), fmt.Sprintf(
		"the request's {msg} (%s) differs from the thread's message seq %d (%s): %s%s",
		req[ri].Role, hi+1, history[hi].Role, difference(req[ri], history[hi]), hint))
}

// difference names what differs between two messages.
func difference(a, b chat.Message) string {
	switch {
	case a.Role != b.Role:
		return fmt.Sprintf("role %q, stored %q", a.Role, b.Role)
	case !bytes.Equal(normContent(a.Content), normContent(b.Content)):
		return "its content differs"
	case a.Name != b.Name:
		return "its name differs"
	case a.ToolCallID != b.ToolCallID:
		return "its tool_call_id differs"
	}
	return "its tool calls differ"
}

func leadingSystem(ms []chat.Message) int {
	n := 0
	for n < len(ms) && isSystem(ms[n]) {
		n++
	}
	return n
}

func samePrefix(r, h []chat.Message) bool {
	for i := range h {
		if !sameMessage(r[i], h[i]) {
			return false
		}
	}
	return true
}

// sameMessage reports whether two messages are the same to the model: role, content (null,
// "" and absent are the same; text-only parts equal the string they join to), name,
// tool_call_id, and each tool call's id, function name and arguments (a missing type is
// "function"). Other fields (refusal, annotations, reasoning fields) are not compared: a
// client may drop or add them when it resends a reply.
func sameMessage(a, b chat.Message) bool {
	return a.Role == b.Role && a.Name == b.Name && a.ToolCallID == b.ToolCallID &&
		sameContent(a.Content, b.Content) &&
		slices.EqualFunc(a.ToolCalls, b.ToolCalls, func(x, y chat.ToolCall) bool {
			return x.ID == y.ID && typeOrFunction(x.Type) == typeOrFunction(y.Type) &&
				x.Function.Name == y.Function.Name && sameArguments(x.Function.Arguments, y.Function.Arguments)
		})
}

// sameContent compares contents as normContent does; the same bytes (what an agent that
// resends its history sends) are the same without decoding them.
func sameContent(a, b json.RawMessage) bool {
	return bytes.Equal(a, b) || bytes.Equal(normContent(a), normContent(b))
}

// sameArguments compares tool-call arguments as JSON when both are JSON (other white space or
// key order is the same call), else as text.
func sameArguments(a, b string) bool {
	if a == b {
		return true
	}
	var x, y any
	if decodeJSON(a, &x) != nil || decodeJSON(b, &y) != nil {
		return false
	}
	xb, _ := json.Marshal(x)
	yb, _ := json.Marshal(y)
	return bytes.Equal(xb, yb)
}

// decodeJSON decodes one JSON value, numbers kept as written.
func decodeJSON(s string, v *any) error {
	d := json.NewDecoder(strings.NewReader(s))
	d.UseNumber()
	if err := d.Decode(v); err != nil {
		return err
	}
	if d.More() {
		return fmt.Errorf("more than one JSON value")
	}
	return nil
}

func typeOrFunction(t string) string {
	if t == "" {
		return "function"
	}
	return t
}

// normContent returns content in a comparable form: a JSON string for text (text-only parts
// joined by newlines), the compact JSON of anything else.
func normContent(c json.RawMessage) []byte {
	c = bytes.TrimSpace(c)
	if len(c) == 0 || bytes.Equal(c, []byte("null")) {
		return []byte(`""`)
	}
	if c[0] == '[' {
		var parts []map[string]json.RawMessage
		if json.Unmarshal(c, &parts) == nil && textOnly(parts) {
			b, _ := json.Marshal(chat.Message{Content: c}.Text())
			return b
		}
	}
	if c[0] == '"' {
		var s string
		if json.Unmarshal(c, &s) == nil {
			b, _ := json.Marshal(s) // one spelling of each string
			return b
		}
	}
	var buf bytes.Buffer
	if json.Compact(&buf, c) != nil {
		return c
	}
	return buf.Bytes()
}

func textOnly(parts []map[string]json.RawMessage) bool {
	for _, p := range parts {
		if string(p["type"]) != `"text"` {
			return false
		}
		for k := range p {
			if k != "type" && k != "text" {
				return false
			}
		}
	}
	return true
}
