package compact

import (
	"slices"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
)

// What the mask knobs do (see MaskSettings): the view of the mask and hybrid strategies with
// the newest keep_tool_results results kept, the results of exclude_tools never masked, and the
// newest keep_turns turns whole while they fit.

// maskKnobs is the shaper's view of the knobs: the mask section and keep_turns.
type maskKnobs struct {
	mask  MaskSettings
	turns int
}

// knobbed reports whether a knob changes what maskOld does.
func (k maskKnobs) knobbed() bool {
	return !k.mask.IsZero() || k.turns > 0
}

// maskKnobbed is maskOld with the knobs: the results before start are masked, start being the
// kept window's (or, with keep_tool_results, the newest N results' and the newest unit's),
// moved back to keep the newest keep_turns turns whole while they fit keepBudget; the results
// of exclude_tools stay.
func (sh shaper) maskKnobbed(entries []memory.Entry, keepBudget int) []memory.Entry {
	pinned, start := keptStart(entries, keepBudget)
	if n := sh.knobs.mask.KeepToolResults; n > 0 {
		_, newest := keptStart(entries, 0)
		start = min(newest, resultsStart(entries, pinned, n, sh.knobs.mask.ExcludeTools))
	}
	if sh.knobs.turns > 0 {
		if cuts := memory.Cuts(entries, pinned); len(cuts) > 0 {
			s := Settings{KeepTurns: sh.knobs.turns}
			t, _ := keepTurns(entries, cuts, start, memory.EntryTokens(entries[start:]), s, pinned,
				keepBudget-memory.EntryTokens(entries[:pinned]))
			start = min(start, t)
		}
	}
	out := sh.mask(entries, pinned, start)
	for i := pinned; i < start; i++ {
		if out[i].Mark() != entries[i].Mark() && excluded(entries[:i], entries[i].Message, sh.knobs.mask.ExcludeTools) {
			out[i] = entries[i] // exclude_tools: never masked
		}
	}
	return sh.clear(out, pinned, start)
}

// clear returns entries with the assistant messages of entries[from:to] cleared as
// clear_tool_inputs and clear_thinking say (see memory.Cleared): a message with tool calls
// loses their arguments, any loses its reasoning. One already changed by a view stays as it is.
func (sh shaper) clear(entries []memory.Entry, from, to int) []memory.Entry {
	k := sh.knobs.mask
	if !k.ClearToolInputs && !k.ClearThinking {
		return entries
	}
	out := slices.Clone(entries)
	for i := from; i < to; i++ {
		e := out[i]
		if e.Message.Role != chat.RoleAssistant || e.CompactionID != 0 || e.Pinned || e.Mark() != nil {
			continue
		}
		c := memory.Cleared{Seq: e.Seq, Inputs: k.ClearToolInputs && len(e.Message.ToolCalls) > 0, Thinking: k.ClearThinking, OrigTokens: e.Tokens}
		if !c.Inputs && !c.Thinking {
			continue
		}
		cleared := e.Marked(&memory.Mark{Cleared: &c})
		m := cleared.Message
		m.Content = chat.TextMessage("", e.Text()).Content
		if c.Tokens = sh.count.CountMessage(m); c.Tokens > e.Tokens {
			continue // arguments shorter than the placeholder: nothing to save
		}
		cleared.Tokens = c.Tokens
		out[i] = cleared
	}
	return out
}

// resultsStart is the index of the newest n-th tool result of entries after pinned that
// exclude_tools does not name (pinned when there are fewer): from it on, no result is masked.
func resultsStart(entries []memory.Entry, pinned, n int, exclude []string) int {
	seen := 0
	for i := len(entries) - 1; i >= pinned; i-- {
		e := entries[i]
		if e.Message.Role != chat.RoleTool || e.CompactionID != 0 || excluded(entries[:i], e.Message, exclude) {
			continue
		}
		if seen++; seen == n {
			return i
		}
	}
	return pinned
}

// excluded reports whether m is the result of a tool exclude_tools names.
func excluded(before []memory.Entry, m chat.Message, exclude []string) bool {
	return len(exclude) > 0 && m.Role == chat.RoleTool && slices.Contains(exclude, toolName(before, m))
}
