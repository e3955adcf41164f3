package compact

import (
	"math"

	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// StrategyQueue keeps the newest queue_size summaries in the active context, each a block of
// its own covering its own messages, oldest first: a compaction summarizes only the messages
// after the newest summary and leaves the earlier ones as they are. One that finds the queue
// full first folds the two oldest summaries into one (a provider call whose facts are
// checked against both summaries' ledgers), then summarizes the new messages in a second
// compaction (Decision.Again).
const StrategyQueue = "queue"

type queueStrategy struct{}

func (queueStrategy) Name() string { return StrategyQueue }

func (queueStrategy) Decide(in StrategyInput) Decision {
	var sums []int // the summary entries, oldest first
	for i, e := range in.Entries {
		if e.CompactionID != 0 {
			sums = append(sums, i)
		}
	}
	all := MakePlan(in.Entries, in.Settings, in.Keep) // every summary folded into the new one
	if in.Settings.QueueSize <= 1 {
		return summaryDecision(all)
	}
	if len(sums) == 0 {
		return summaryDecision(queuePlan(in, nil))
	}
	add := queuePlan(in, sums)
	// The summaries kept are what leave the new one no room (or too little) within the target.
	crowded := add.Ineffective && !all.Ineffective || add.Deep && !all.Deep
	// Fold the two oldest first when the queue is full or crowded; not when there is nothing
	// new to summarize, nor when the plan folds some summaries in already.
	if (len(sums) >= in.Settings.QueueSize || crowded) && len(sums) >= 2 && add.MiddleLen() > 0 && len(add.Stay) == len(sums) {
		if fold := foldPlan(in.Entries, in.Settings, sums[1]); !fold.Ineffective {
			return Decision{Plan: fold, Summarize: true, Again: true}
		}
		return summaryDecision(all) // no room to fold two: fold them all
	}
	if crowded && add.Ineffective {
		return summaryDecision(all) // one summary left, and no room beside it
	}
	return summaryDecision(add)
}

// queuePlan plans the summary of the new messages, the summaries of stay kept as they are. The
// queue's blocks share the summary's part of the target: each gets queue_size-th of it (at
// most summary_max_tokens), and the facts a provider left out may take it to twice that, so
// that queue_size blocks fit beside the newest messages.
func queuePlan(in StrategyInput, stay []int) Plan {
	pinned := memory.EntryTokens(in.Entries[:memory.PinnedLen(in.Entries)])
	share := min(in.Settings.SummaryMaxTokens, max(in.Keep-pinned-tokencount.ReplyPriming, 0)/2)
	per := max(share/in.Settings.QueueSize, 2*minSummaryTokens)
	s := in.Settings
	s.SummaryMaxTokens = min(s.SummaryMaxTokens, per)
	p := MakePlanKeeping(in.Entries, s, in.Keep, stay)
	if !p.Deep {
		p.RoomBudget = max(min(p.RoomBudget, 2*per), p.SummaryBudget)
	}
	return p
}

// summaryDecision is the decision to summarize as p plans.
func summaryDecision(p Plan) Decision {
	return Decision{Plan: p, Summarize: true, Ineffective: p.Ineffective, Why: p.Why}
}

// foldPlan plans the summary of what lies between the pinned messages and entries[last], the
// second oldest summary, included: the two oldest summaries (and what a view shows between
// them, but the newest user message it holds) become one, everything after stays. Its summary
// may take what the two took less a tenth, at most summary_max_tokens for its prose.
func foldPlan(entries []memory.Entry, s Settings, last int) Plan {
	p := Plan{Pinned: memory.PinnedLen(entries), Kept: last + 1}
	p.PinnedTokens = memory.EntryTokens(entries[:p.Pinned])
	if u := lastUser(entries); u >= p.Pinned && u < p.Kept {
		p.Hold, p.HeldAt, p.HeldTokens = true, u, entries[u].Tokens
	}
	middle := p.middle(entries)
	p.MiddleTokens = memory.EntryTokens(middle)
	p.KeptTokens = memory.EntryTokens(entries[p.Kept:])
	p.FromSeq, p.ToSeq = middleRange(middle)
	base := p.PinnedTokens + p.HeldTokens + p.KeptTokens + tokencount.ReplyPriming
	p.RoomBudget = min(p.MiddleTokens-int(math.Ceil(0.1*float64(p.MiddleTokens))), s.Budget()-base)
	p.SummaryBudget = min(s.SummaryMaxTokens, p.RoomBudget)
	if p.SummaryBudget < minSummaryTokens {
		p.Ineffective, p.Why = true, "the two oldest summaries leave no room for a summary of both"
	}
	return p
}
