package compact

import (
	"context"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// keep_turns and compact_every_turns: what they do.
//
// A user turn is a user message and everything after it up to the next user message.
// keep_turns N moves the start of the kept part back, when it lies within the newest N turns, to
// the start of the oldest of them that fits: the newest k <= N turns whole, k as large as the
// kept budget allows (L * target_ratio, less the pinned messages and what the summary needs at
// least, Settings.MinSummaryTokens). Beyond the budget the budget wins.

// turnStarts returns the indexes of entries, from pinned on, where a user turn starts (its user
// message), newest first: at most n of them.
func turnStarts(entries []memory.Entry, pinned, n int) []int {
	var out []int
	for i := len(entries) - 1; i >= pinned && len(out) < n; i-- {
		if entries[i].Message.Role == chat.RoleUser && entries[i].CompactionID == 0 {
			out = append(out, i)
		}
	}
	return out
}

// keepTurns returns where the kept part starts, and its tokens, with the newest s.KeepTurns user
// turns whole while they fit in budget: start and tokens are keptFrom's, moved back to the
// start of a turn among cuts when that is earlier and turns up to it fit.
func keepTurns(entries []memory.Entry, cuts []int, start, tokens int, s Settings, pinned, budget int) (int, int) {
	if s.KeepTurns <= 0 || len(cuts) == 0 {
		return start, tokens
	}
	isCut := map[int]bool{}
	for _, c := range cuts {
		isCut[c] = true
	}
	for _, u := range turnStarts(entries, pinned, s.KeepTurns) {
		if u >= start {
			continue // kept already
		}
		if !isCut[u] {
			break // a unit still open spans it: no earlier start is a whole turn's
		}
		t := memory.EntryTokens(entries[u:])
		if t > budget {
			break // the budget wins
		}
		start, tokens = u, t
	}
	return start, tokens
}

// turnsBudget is what the kept part may take to keep whole turns: the kept budget keep less
// the pinned messages, the reply priming and the least a summary needs.
func turnsBudget(s Settings, keep, pinnedTokens int) int {
	return keep - pinnedTokens - tokencount.ReplyPriming - s.MinSummaryTokens()
}

// turnsDue reports whether compact_every_turns makes a compaction of thread t due: at least
// s.CompactEveryTurns user messages were appended since the latest settled compaction (applied
// or ineffective; since the thread's first message when there is none). It derives the count
// from the stored messages: nothing more is stored.
func (c *Compactor) turnsDue(ctx context.Context, t memory.Thread, s Settings) (bool, error) {
	if s.CompactEveryTurns <= 0 || t.Messages == 0 {
		return false, nil
	}
	from := int64(1)
	last, ok, err := c.Store.Compactions().LatestSettled(ctx, t.ID)
	if err != nil {
		return false, err
	}
	if ok {
		from = last.LastSeq + 1
	}
	if from > int64(t.Messages) {
		return false, nil
	}
	es, err := c.Store.Messages(ctx, t.ID, from, int64(t.Messages), memory.ReadOptions{Light: true})
	if err != nil {
		return false, err
	}
	n := 0
	for _, e := range es {
		if e.Message.Role == chat.RoleUser {
			n++
		}
	}
	return n >= s.CompactEveryTurns, nil
}
