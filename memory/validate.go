package memory

import (
	"fmt"
	"slices"
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

// callTracker follows the tool calls of a thread that have not been answered yet, in order.
// A tool result answers the unanswered call with its id; an id may be reused once its call was
// answered (recorded agents do), but not while it is still open.
type callTracker struct {
	open []string
}

// check validates m against the open calls and, when it is valid, applies it. It returns the
// field at fault and the problem.
func (t *callTracker) check(m Message) (field, msg string) {
	switch m.Role {
	case RoleSystem, RoleDeveloper, RoleUser, RoleAssistant, RoleTool:
	case "":
		return "role", "missing"
	default:
		return "role", fmt.Sprintf("unknown role %q (want system, developer, user, assistant or tool)", m.Role)
	}
	if len(m.ToolCalls) > 0 && m.Role != RoleAssistant {
		return "tool_calls", fmt.Sprintf("a %s message cannot call tools", m.Role)
	}
	if m.Role == RoleTool {
		if m.ToolCallID == "" {
			return "tool_call_id", "missing on a tool message"
		}
		i := slices.Index(t.open, m.ToolCallID)
		if i < 0 {
			return "tool_call_id", fmt.Sprintf("%q answers no unanswered tool call", m.ToolCallID)
		}
		t.open = slices.Delete(t.open, i, i+1)
		return "", ""
	}
	if m.ToolCallID != "" {
		return "tool_call_id", fmt.Sprintf("only a tool message answers a call (role is %s)", m.Role)
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
		t.open = append(t.open, c.ID)
	}
	return "", ""
}
