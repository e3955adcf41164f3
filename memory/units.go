package memory

import (
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/tokencount"
)

// A compaction cuts an active context only between units. A unit is a user message, or an
// assistant message with the tool results that answer its calls (a result answers the latest
// unanswered call with its id). The leading system/developer messages, and the pinned messages
// the compactor reads right after them (see hoistPinned), stay whatever a compaction does. No
// cut separates a call from its result, and what follows a cut never starts with a tool
// result. A call still waiting for its result stays with its unit, even when other messages
// followed it. The planner (compact.MakePlan) and the pins (Store.Pin) share this rule.

// EntryTokens is the sum of the entries' stored counts, without the reply priming.
func EntryTokens(es []Entry) int {
	t := 0
	for _, e := range es {
		t += e.Tokens
	}
	return t
}

// PromptTokens is the prompt size of entries sent as they are: their stored counts plus the
// reply priming (0 for none), as Active.Tokens counts an active context.
func PromptTokens(es []Entry) int {
	if len(es) == 0 {
		return 0
	}
	return EntryTokens(es) + tokencount.ReplyPriming
}

// PinnedLen returns the number of leading pinned entries: the system/developer messages at the
// start, and the pinned messages that follow them.
func PinnedLen(entries []Entry) int {
	n := 0
	for n < len(entries) && isPinnable(entries[n]) {
		n++
	}
	return n
}

// isPinnable reports whether e stays whatever a compaction does: a system/developer message
// that no later instructions superseded, or a pinned one (the compactor reads pinned messages
// right after those, see hoistPinned).
func isPinnable(e Entry) bool {
	return e.Pinned || e.CompactionID == 0 && !e.Superseded && isInstruction(e.Message)
}

// isInstruction reports a system/developer message.
func isInstruction(m chat.Message) bool {
	return m.Role == chat.RoleSystem || m.Role == chat.RoleDeveloper
}

// Cuts returns the indexes i in (pinned, len) where a unit starts, so where the kept part of a
// compaction may start: entries[i] is not a tool result, no tool call before i is answered at
// or after i, and no call before i is still waiting for its result. pinned is the number of
// leading pinned entries (PinnedLen), or 0 for entries that have none.
func Cuts(entries []Entry, pinned int) []int {
	n := len(entries)
	// blocked[i] > 0 when a call made before i is answered at or after i.
	blocked := make([]int, n+1)
	open := map[string][]int{} // call id -> indexes of the messages with unanswered calls, oldest first
	for i := pinned; i < n; i++ {
		m := entries[i].Message
		if m.Role == chat.RoleTool && m.ToolCallID != "" {
			if calls := open[m.ToolCallID]; len(calls) > 0 {
				from := calls[len(calls)-1]
				open[m.ToolCallID] = calls[:len(calls)-1]
				blocked[from+1]++
				blocked[i+1]--
			}
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = append(open[c.ID], i)
		}
	}
	// A call still waiting for its result stays with its unit in the kept part, whatever
	// follows it: the result may yet arrive, and must find its call.
	for _, calls := range open {
		for _, from := range calls {
			blocked[from+1]++
		}
	}
	var cuts []int
	depth := blocked[pinned] // always 0: no call is made before pinned
	for i := pinned + 1; i < n; i++ {
		depth += blocked[i]
		if depth == 0 && entries[i].Message.Role != chat.RoleTool {
			cuts = append(cuts, i)
		}
	}
	return cuts
}
