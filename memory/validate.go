package memory

import (
	"bytes"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/memcascade/memcascade/chat"
)

// InputError is a message that cannot be appended. Nothing of the batch it came in was written.
type InputError struct {
	Line  int    // line of the input file (JSONL), 0 when unknown
	Index int    // index of the message in the batch or file, from 0
	Field string // the field at fault, "" for the whole message
	Msg   string
}

func (e *InputError) Error() string {
	s := ""
	if e.Line > 0 {
		s = fmt.Sprintf("line %d: ", e.Line)
	}
	s += fmt.Sprintf("message %d", e.Index)
	if e.Field != "" {
		s += ": " + e.Field
	}
	return s + ": " + e.Msg
}

// badIdentifier says what makes s unfit as an identifier (a thread id, a name, a tool call's
// id or function name): a NUL character or bytes that are not UTF-8, which PostgreSQL's text
// cannot hold and which would otherwise be stored on SQLite alone. "" when it is fit.
func badIdentifier(s string) string {
	switch {
	case strings.ContainsRune(s, 0):
		return "contains a NUL character (U+0000)"
	case !utf8.ValidString(s):
		return "is not valid UTF-8"
	}
	return ""
}

// missingRole says what a value without a role is, when its fields tell: a chat completion
// response or request holds messages but is not one.
func missingRole(m chat.Message) string {
	switch {
	case m.Extra["choices"] != nil:
		return `missing: this is a chat completion response, not a message (its messages are in choices[].message; import .choices[0].message)`
	case m.Extra["message"] != nil:
		return `missing: this holds a message under "message" (import .message)`
	}
	return "missing"
}

// checkRole checks that m has a role, and one of the five: the check every reader of messages
// makes (Store.Import, with the rest of callTracker.check, and ReadMessages).
func checkRole(m chat.Message) (field, msg string) {
	switch m.Role {
	case chat.RoleSystem, chat.RoleDeveloper, chat.RoleUser, chat.RoleAssistant, chat.RoleTool:
		return "", ""
	case "":
		return "role", missingRole(m)
	}
	return "role", fmt.Sprintf("unknown role %q (want system, developer, user, assistant or tool)", m.Role)
}

// callTracker follows the tool calls of a thread that have not been answered yet, in order.
// A tool result answers the unanswered call with its id; an id may be reused once its call was
// answered (recorded agents do), but not while it is still open. A call must be answered before
// the conversation moves on: a message other than a tool result that comes while a call is
// open is refused, as OpenAI's Chat Completions and Anthropic's Messages APIs refuse such a
// history. Calls left open at the end of an append are in flight (their results come next).
type callTracker struct {
	open []string
	// from says, for each open call, which message made it: its index in the batch plus 1, or
	// for a call the thread had open before the batch, its seq negated (0 until keepInherited
	// finds it).
	from []int64
	// resolved: the calls open before the batch were sorted (keepInherited).
	resolved bool
}

// load sets the calls the thread left open before the batch (its stored open_calls).
func (t *callTracker) load(open []string) {
	t.open, t.from, t.resolved = open, make([]int64, len(open)), len(open) == 0
}

// inherited reports whether calls the thread left open before the batch are still open and
// not yet sorted by keepInherited.
func (t *callTracker) inherited() bool {
	return !t.resolved && slices.Contains(t.from, 0)
}

// keepInherited sorts the calls open before the batch, given the calls the thread's stored
// messages leave in flight (those of its last assistant message with calls when only tool
// results follow it, which made them at seq): these stay open; the others, which an earlier
// version let a thread leave behind as it moved on, are dropped, so that such a thread is not
// refused every message after them.
func (t *callTracker) keepInherited(inFlight []string, seq int64) {
	t.resolved = true
	for i := 0; i < len(t.open); i++ {
		if t.from[i] > 0 {
			continue // made in the batch
		}
		if !slices.Contains(inFlight, t.open[i]) {
			t.open, t.from = slices.Delete(t.open, i, i+1), slices.Delete(t.from, i, i+1)
			i--
			continue
		}
		t.from[i] = -seq
	}
}

// check validates m, the message of index i of the batch, against the open calls and, when it
// is valid, applies it. It returns the field at fault and the problem.
func (t *callTracker) check(m chat.Message, i int) (field, msg string) {
	if field, msg := checkRole(m); msg != "" {
		return field, msg
	}
	if m.ToolCalls != nil && m.Role != chat.RoleAssistant {
		return "tool_calls", fmt.Sprintf("a %s message cannot call tools", m.Role)
	}
	if field, msg := checkShape(m); msg != "" {
		return field, msg
	}
	if msg := badIdentifier(m.Name); msg != "" {
		return "name", msg
	}
	if msg := badIdentifier(m.ToolCallID); msg != "" {
		return "tool_call_id", msg
	}
	for j, c := range m.ToolCalls {
		if msg := badIdentifier(c.ID); msg != "" {
			return fmt.Sprintf("tool_calls[%d].id", j), msg
		}
		if msg := badIdentifier(c.Function.Name); msg != "" {
			return fmt.Sprintf("tool_calls[%d].function.name", j), msg
		}
	}
	if m.Role == chat.RoleTool {
		if m.ToolCallID == "" {
			return "tool_call_id", "missing on a tool message"
		}
		k := slices.Index(t.open, m.ToolCallID)
		if k < 0 {
			return "tool_call_id", fmt.Sprintf("%q answers no unanswered tool call", m.ToolCallID)
		}
		t.open, t.from = slices.Delete(t.open, k, k+1), slices.Delete(t.from, k, k+1)
		return "", ""
	}
	if m.ToolCallID != "" {
		return "tool_call_id", fmt.Sprintf("only a tool message answers a call (role is %s)", m.Role)
	}
	if len(t.open) > 0 {
		// The message that made the call, said relative to this one: a caller that appends
		// the end of a longer list (memctl serve) numbers its messages otherwise.
		var where string
		switch from := t.from[0]; {
		case from < 0:
			where = fmt.Sprintf("the thread's message %d", -from)
		case int64(i)+1-from == 1:
			where = "the message before it"
		default:
			where = fmt.Sprintf("the message %d before it", int64(i)+1-from)
		}
		more := ""
		if len(t.open) > 1 {
			more = fmt.Sprintf(" (and %d more)", len(t.open)-1)
		}
		return "", fmt.Sprintf("tool call %q of %s has no result%s: a call must be answered (a tool message with its tool_call_id, any content) before the next %s message, as OpenAI's and Anthropic's APIs require",
			t.open[0], where, more, m.Role)
	}
	for j, c := range m.ToolCalls {
		f := fmt.Sprintf("tool_calls[%d]", j)
		switch {
		case c.ID == "":
			return f + ".id", "missing"
		case c.Function.Name == "":
			return f + ".function.name", "missing"
		case slices.Contains(t.open, c.ID):
			return f + ".id", fmt.Sprintf("%q is repeated while a call with that id is unanswered", c.ID)
		}
		t.open, t.from = append(t.open, c.ID), append(t.from, int64(i)+1)
	}
	return "", ""
}

// refuses reports an assistant message that carries a refusal: a non-empty string.
func refuses(m chat.Message) bool {
	var r string
	return json.Unmarshal(m.Extra["refusal"], &r) == nil && r != ""
}

// checkShape checks what OpenAI's chat completions API checks of a message's content and calls:
// content is required (a string or a non-empty array of parts), except on an assistant message
// that calls tools or refuses (a non-empty string refusal, as OpenAI's API answers a refusal,
// content null); each part is an object with a type (and a text part has a string text);
// tool_calls, when given, holds at least one call; the legacy function_call is refused, since the
// function role that would answer it is.
func checkShape(m chat.Message) (field, msg string) {
	if fc, ok := m.Extra["function_call"]; ok && !bytes.Equal(fc, []byte("null")) {
		return "function_call", "the legacy function_call is not accepted (nor the function role that would answer it): use tool_calls"
	}
	if m.ToolCalls != nil && len(m.ToolCalls) == 0 {
		return "tool_calls", "an empty array: give at least one call, or leave tool_calls out"
	}
	c := bytes.TrimSpace(m.Content)
	switch {
	case len(c) == 0 || bytes.Equal(c, []byte("null")):
		if m.Role == chat.RoleAssistant && (len(m.ToolCalls) > 0 || refuses(m)) {
			return "", ""
		}
		what := "missing"
		if len(c) > 0 {
			what = "null"
		}
		if m.Role == chat.RoleAssistant {
			return "content", what + " on an assistant message that calls no tool and has no refusal"
		}
		return "content", fmt.Sprintf("%s: a %s message needs content (a string or an array of parts)", what, m.Role)
	case c[0] == '[':
		var parts []json.RawMessage
		if err := json.Unmarshal(c, &parts); err != nil {
			return "content", "malformed array of parts"
		}
		if len(parts) == 0 {
			return "content", "an empty array of parts: give at least one part, or a string"
		}
		for i, p := range parts {
			var part map[string]json.RawMessage
			f := fmt.Sprintf("content[%d]", i)
			if json.Unmarshal(p, &part) != nil || part == nil {
				return f, "not a content part: want an object with a type, such as {\"type\": \"text\", \"text\": \"...\"}"
			}
			var typ string
			if json.Unmarshal(part["type"], &typ) != nil || typ == "" {
				return f + ".type", "missing: want a string such as \"text\" or \"image_url\""
			}
			if typ == "text" {
				var text string
				if raw, ok := part["text"]; !ok || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) || json.Unmarshal(raw, &text) != nil {
					return f + ".text", "a text part needs a string text"
				}
			}
		}
	}
	return "", ""
}
