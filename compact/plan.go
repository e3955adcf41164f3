package compact

import (
	"fmt"
	"math"
	"slices"

	"github.com/memcascade/memcascade/internal/english"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// minSummaryTokens is the smallest summary budget worth a provider call.
const minSummaryTokens = 32

// Plan is what one compaction pass does to an active context: entries [0, Pinned) stay, the
// middle [Pinned, Kept) is replaced by one summary, entries [Kept, len) stay. It refers to
// entries by index.
type Plan struct {
	Pinned int // number of leading pinned entries (system/developer messages)
	Kept   int // index of the first kept entry; len(entries) when nothing is kept

	PinnedTokens, MiddleTokens, KeptTokens int
	// Hold is set when the newest user message would fall into the middle (the units after it
	// fill the kept budget): it stays in the active context as it is, after the pinned messages
	// and before the summary, its HeldTokens counted in the budget as a pinned message's are,
	// and the summary is of the rest of the middle. HeldAt is its index. A later compaction
	// finds it there, and summarizes it with its middle once a newer user message holds its
	// place.
	Hold               bool
	HeldAt, HeldTokens int
	// Stay are the indexes of the summary entries in [Pinned, Kept) that stay as they are, each
	// a block of its own before the new summary (a strategy that keeps earlier summaries, as
	// queue does), ascending; StayTokens their tokens. They are not in the middle, and the new
	// summary's range never overlaps theirs.
	Stay       []int
	StayTokens int
	// SummaryBudget is the most tokens the summary message may take as planned; RoomBudget is
	// the most the limit and the 10% saving allow whatever summary_max_tokens says: the facts a
	// provider left out may take the summary up to it (see factFit). PacedBudget is RoomBudget
	// for a thread that compacts too often (see Compactor.outpaced): what leaves a quarter of
	// L below the trigger.
	SummaryBudget, RoomBudget, PacedBudget int
	// FromSeq and ToSeq are the range of messages the summary will cover (a previous summary in
	// the middle extends it back to the range that summary covered).
	FromSeq, ToSeq int64
	// Deep is set when the pinned messages and the newest unit leave no room for a summary
	// within the target (L * target_ratio, or the kept budget of a later pass): the summary is
	// then kept small, to leave what room there is below the trigger for the next turns.
	Deep bool
	// Ineffective is set, with Why, when the pass cannot save enough to be worth a provider call.
	Ineffective bool
	Why         string
}

// MiddleLen is the number of entries the summary replaces.
func (p Plan) MiddleLen() int {
	if p.Hold {
		return p.Kept - p.Pinned - 1 - len(p.Stay)
	}
	return p.Kept - p.Pinned - len(p.Stay)
}

// pinnedWords names what stays beside the summary before it, with its tokens.
func (p Plan) pinnedWords() string {
	w := fmt.Sprintf("the pinned messages (%d tokens)", p.PinnedTokens)
	if len(p.Stay) > 0 {
		w += fmt.Sprintf(", %s kept (%d tokens)", english.Count(len(p.Stay), "summary", "summaries"), p.StayTokens)
	}
	if p.Hold {
		w += fmt.Sprintf(", the newest user message (%d tokens)", p.HeldTokens)
	}
	return w
}

// keptLen is the number of entries of a context of n that stay beside the summary, the held
// one and those of Stay included, the pinned ones not.
func (p Plan) keptLen(n int) int {
	if p.Hold {
		return n - p.Kept + 1 + len(p.Stay)
	}
	return n - p.Kept + len(p.Stay)
}

// middle returns the entries the summary replaces: entries[Pinned:Kept] but the held one and
// those of Stay.
func (p Plan) middle(entries []memory.Entry) []memory.Entry {
	m := entries[p.Pinned:p.Kept]
	if !p.Hold && len(p.Stay) == 0 {
		return m
	}
	out := make([]memory.Entry, 0, len(m))
	for i, e := range m {
		if at := p.Pinned + i; !(p.Hold && at == p.HeldAt) && !slices.Contains(p.Stay, at) {
			out = append(out, e)
		}
	}
	return out
}

// result returns the entries that stay beside the summary, in order: the pinned messages, the
// summaries of Stay, the held newest user message, the kept ones; before is where the summary
// goes.
func (p Plan) result(entries []memory.Entry) (before, after []memory.Entry) {
	before = entries[:p.Pinned:p.Pinned]
	for _, i := range p.Stay {
		before = append(before, entries[i])
	}
	if p.Hold {
		before = append(before, entries[p.HeldAt])
	}
	return before, entries[p.Kept:]
}

// MakePlan plans one compaction pass over an active context. It is a pure function of
// filled settings (Compactor.SettingsFor, Resolve, Effective or Settings.WithDefaults): it fills
// no default.
//
//   - The leading system/developer messages are pinned, and so are the pinned messages
//     (memory.Store.Pin) that follow them (the compactor reads every pinned message there);
//     instructions a later pinned system message superseded (memory.Entry.Superseded) are
//     not, and belong to the middle. A
//     summary entry (CompactionID != 0) is never pinned, whatever its role: it belongs to the
//     middle, so the new summary folds it in.
//   - The rest is cut only between units (see memory.Cuts): no cut separates a call from its
//     result, and the kept part never starts with a tool result. A call still waiting for its
//     result stays in the kept part with its unit, even when other messages followed it.
//   - keepBudget is the target of the pass (L * target_ratio for the first). The summary's
//     share of it is half of what the pinned messages leave, at most SummaryMaxTokens. Walking
//     back from the newest, whole units are kept while pinned + kept + share fits in
//     keepBudget; the newest unit is always kept.
//   - The summary may take min(SummaryMaxTokens, keepBudget - pinned - kept - 3,
//     middle - minSave) tokens (3: the reply priming), where minSave is 10% of the active
//     context: a summary within budget always saves 10%, and leaves the context within its
//     target. The facts a provider left out may take it further (RoomBudget), up to L; in a
//     thread that compacts more often than every quarter of L of appended messages, only up
//     to what leaves a quarter of L below the trigger (PacedBudget). When
//     the pinned messages and the newest unit leave the target out of reach the plan is Deep:
//     the summary gets half of what is left below the trigger (at least
//     Settings.MinSummaryTokens), and
//     its facts may take it up to the trigger. Never beyond L; when that budget is under a
//     useful minimum the plan is Ineffective and no provider is called.
//   - The newest user message is never out of the active context: when the units after it fill
//     the kept budget, it is held (see Plan.Hold), and the kept units are those that fit beside
//     it.
//   - A middle that is the current summary alone is Ineffective while the context is within
//     the limit: a summary is only ever updated with new messages, never shrunk for its own
//     sake (each such pass would drop facts it holds).
func MakePlan(entries []memory.Entry, s Settings, keepBudget int) Plan {
	return makePlan(entries, s, keepBudget, -1, nil)
}

// MakePlanKeeping is MakePlan for a strategy that keeps the summary entries stay (indexes of
// entries after the pinned ones, ascending) as they are, each a block of its own before the new
// summary: their tokens count with the pinned messages', the kept part starts after the last of
// them, and the new summary is of what else lies before it. A summary of stay whose range
// holds a message the new summary would cover (the newest user message it held, now to be
// summarized) does not stay: it is folded into the new one, so that no two summaries cover
// the same message.
func MakePlanKeeping(entries []memory.Entry, s Settings, keepBudget int, stay []int) Plan {
	stay = slices.Clone(stay)
	for {
		p := makePlan(entries, s, keepBudget, -1, stay)
		if len(p.Stay) == 0 || p.MiddleLen() == 0 {
			return p
		}
		k := slices.IndexFunc(p.Stay, func(i int) bool { return overlaps(entries[i], p.FromSeq, p.ToSeq) })
		if k < 0 {
			return p
		}
		stay = slices.Delete(stay, k, len(stay)) // it and the newer ones fold in
	}
}

// overlaps reports whether summary entry e's range meets from..to.
func overlaps(e memory.Entry, from, to int64) bool { return e.CoversFrom <= to && from <= e.CoversTo }

// makePlan is MakePlan with the summary's share of the target set aside for it (-1: half of
// what the pinned messages leave of the target, at most SummaryMaxTokens), and the summaries
// of stay kept as they are (see MakePlanKeeping).
func makePlan(entries []memory.Entry, s Settings, keepBudget, share int, stay []int) Plan {
	n := len(entries)
	p := Plan{Kept: n}
	p.Pinned = memory.PinnedLen(entries)
	p.PinnedTokens = memory.EntryTokens(entries[:p.Pinned])
	cuts := memory.Cuts(entries, p.Pinned)
	if len(stay) > 0 {
		p.Stay = stay
		for _, i := range stay {
			p.StayTokens += entries[i].Tokens
		}
		last := stay[len(stay)-1]
		cuts = slices.DeleteFunc(slices.Clone(cuts), func(c int) bool { return c <= last })
	}
	// cuts are ascending indexes i (Pinned < i < n) where kept may start.
	if len(cuts) == 0 {
		p.Ineffective, p.Why = true, "nothing to summarize: the context is pinned messages and one unit"
		if len(stay) > 0 {
			p.Why = "nothing to summarize: the context is pinned messages, summaries kept as they are and one unit"
		}
		p.KeptTokens = memory.EntryTokens(entries[p.Pinned:]) - p.StayTokens
		return p
	}
	fixed := p.PinnedTokens + p.StayTokens // what stays before the summary, held message aside
	// The summary's share of the target: half of what the pinned messages leave of it, at most
	// summary_max_tokens. The kept messages take the rest.
	if share < 0 {
		share = min(s.SummaryMaxTokens, max(keepBudget-fixed-tokencount.ReplyPriming, 0)/2)
	}
	p.Kept, p.KeptTokens = keptFrom(entries, cuts, keepBudget-fixed-share)
	p.Kept, p.KeptTokens = keepTurns(entries, cuts, p.Kept, p.KeptTokens, s, p.Pinned, turnsBudget(s, keepBudget, fixed))
	if u := lastUser(entries); u >= p.Pinned && u < p.Kept {
		p.Hold, p.HeldAt, p.HeldTokens = true, u, entries[u].Tokens
		p.Kept, p.KeptTokens = keptFrom(entries, cuts, keepBudget-fixed-share-p.HeldTokens)
	}
	p.MiddleTokens = memory.EntryTokens(p.middle(entries))
	p.FromSeq, p.ToSeq = middleRange(p.middle(entries))

	active := fixed + p.HeldTokens + p.MiddleTokens + p.KeptTokens + tokencount.ReplyPriming
	minSave := int(math.Ceil(0.1 * float64(active)))
	base := fixed + p.HeldTokens + p.KeptTokens + tokencount.ReplyPriming
	trigger := int(float64(s.Budget()) * s.TriggerRatio)
	// The summary's prose fits in what the target leaves; the facts a provider left out may
	// take it further (see factFit), up to L.
	prose, room := keepBudget-base, s.Budget()-base
	if prose < 2*minSummaryTokens {
		// Deep: the pinned messages and the newest unit leave the target out of reach. The
		// prose is small, and the facts may take the summary up to the trigger, not beyond,
		// so that the next turn has what room there is.
		p.Deep = true
		prose = max(DeepSummaryTokens, (trigger-base)/2)
		room = max(prose, trigger-base)
	}
	p.RoomBudget = min(room, s.Budget()-base, p.MiddleTokens-minSave)
	p.PacedBudget = p.RoomBudget
	if !p.Deep {
		// Hysteresis for a thread that compacts faster than a quarter of L of appended
		// messages apart (see Compactor.outpaced): the facts may take the summary up to what
		// leaves a quarter of L below the trigger, no further (never below the prose's
		// budget, nor below a deep summary's at a tiny limit), so that the next compaction is
		// due a quarter of L later, not a turn later: the ledger of a long life grows with
		// each compaction, and a summary holding all of it up to L left the context near the
		// trigger after each.
		p.PacedBudget = min(p.RoomBudget, max(prose, trigger-s.Budget()/4-base, DeepSummaryTokens))
	}
	p.SummaryBudget = min(s.SummaryMaxTokens, prose, p.RoomBudget)
	switch {
	case p.MiddleLen() == 0:
		p.Ineffective = true
		p.Why = "nothing to summarize: the middle is the newest user message alone, which stays in the active context"
	case p.MiddleLen() == 1 && p.middle(entries)[0].CompactionID != 0 && active <= s.Budget():
		// Summarizing the summary again, with nothing new to fold in, could only make it lose
		// what it holds; within the limit there is no need to.
		p.Ineffective = true
		p.Why = "nothing new to summarize: the middle is the current summary alone, and the context is within the limit"
	case p.Deep && p.SummaryBudget < s.MinSummaryTokens():
		p.Ineffective = true
		p.Why = fmt.Sprintf("%s and the newest unit of messages (%d tokens) leave room for a summary of %d tokens, under the %d a summary's header and a few lines take",
			p.pinnedWords(), p.KeptTokens, max(p.SummaryBudget, 0), DeepSummaryTokens)
	case p.SummaryBudget >= minSummaryTokens:
	case s.Budget()-base < minSummaryTokens:
		p.Ineffective = true
		p.Why = fmt.Sprintf("%s and the newest unit of messages (%d tokens) leave no room for a summary within the limit %d",
			p.pinnedWords(), p.KeptTokens, s.Budget())
	default:
		p.Ineffective = true
		p.Why = fmt.Sprintf("the middle (%s, %d tokens) cannot save 10%% of %d tokens with a summary of at least %d tokens",
			english.Count(p.MiddleLen(), "message", "messages"), p.MiddleTokens, active, minSummaryTokens)
	}
	return p
}

// keptFrom returns where the kept part starts among the cuts (ascending, not empty), and its
// tokens: the newest unit, then whole units while they fit in budget.
func keptFrom(entries []memory.Entry, cuts []int, budget int) (start, tokens int) {
	k := len(cuts) - 1
	kept := memory.EntryTokens(entries[cuts[k]:])
	for k > 0 {
		more := memory.EntryTokens(entries[cuts[k-1]:cuts[k]])
		if kept+more > budget {
			break
		}
		kept += more
		k--
	}
	return cuts[k], kept
}

// middleRange returns the seq range a summary of middle covers: a previous summary in it
// contributes the range it covered (a message held beside it lies within that range).
func middleRange(middle []memory.Entry) (from, to int64) {
	for _, e := range middle {
		lo, hi := e.Seq, e.Seq
		if e.CompactionID != 0 {
			lo, hi = e.CoversFrom, e.CoversTo
		}
		if from == 0 || lo < from {
			from = lo
		}
		to = max(to, hi)
	}
	return from, to
}
