package compact

import (
	"context"
	"fmt"
	"slices"

	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/english"
	"github.com/memcascade/memcascade/memory"
)

// passes summarizes and commits until the context fits L or max_passes is reached; each pass
// after the first halves the kept budget.
func (j *job) passes(ctx, budget context.Context, a memory.Active, plan Plan) error {
	rep, keep := j.rep, j.keep
	for pass := 1; ; pass++ {
		sum, err := j.c.summarize(budget, j.id, pass, a, plan, j.s, j.carried, j.hookInput(pass))
		if err != nil {
			return err
		}
		rep.Chunks += sum.chunks
		next := passResult(a, plan, sum, j.id, j.s)
		if err := j.applySummary(ctx, a, plan, sum, next); err != nil {
			return err
		}
		rep.Passes, rep.Status = pass, memory.StatusApplied
		rep.Provider, rep.Model, rep.SummaryTokens = sum.provider, sum.model, sum.tokens
		rep.FactsTotal, rep.FactsKept = sum.factsTotal, sum.factsKept
		j.c.summarized(ctx, a, plan, j.id, sum)
		if a, err = j.c.after(ctx, a, next); err != nil {
			return err
		}
		rep.TokensAfter, rep.MessagesAfter = a.Tokens, len(a.Entries)
		rep.FactsDropped = nonNil(factTexts(j.lost))
		if a.Tokens <= j.s.Budget() {
			return nil
		}
		more := MakePlan(a.Entries, j.s, keep/2)
		if pass == j.s.MaxPasses || more.Ineffective {
			return j.c.overLimit(a, more, j.s, pass)
		}
		keep /= 2
		plan = more
		rep.SummarizedMessages += more.MiddleLen() - 1 // the summary of this pass is one of them
		rep.KeptMessages = more.keptLen(len(a.Entries))
	}
}

// passResult is the active context a pass makes of a: the middle replaced by the summary of
// compaction id.
func passResult(a memory.Active, plan Plan, sum summary, id int64, s Settings) memory.Active {
	next := a
	before, after := plan.result(a.Entries)
	next.Entries = make([]memory.Entry, 0, len(before)+1+len(after))
	next.Entries = append(next.Entries, before...)
	next.Entries = append(next.Entries, memory.SummaryEntry(id, s.SummaryRole, sum.text, sum.tokens, plan.FromSeq, plan.ToSeq))
	next.Entries = append(next.Entries, after...)
	next.Tokens = a.Tokens - plan.MiddleTokens + sum.tokens
	next.Summary, next.FromSeq, next.ToSeq, next.Current = id, plan.FromSeq, plan.ToSeq, id
	next.Thread.ActiveMessages, next.Thread.ActiveTokens = len(next.Entries), next.Tokens
	return next
}

// after returns the active context after a pass was applied: next, unless messages were
// appended meanwhile (then it is read again).
func (c *Compactor) after(ctx context.Context, a, next memory.Active) (memory.Active, error) {
	v, err := c.Store.Version(ctx, a.Thread.ID)
	if err != nil {
		return memory.Active{}, err
	}
	if v.LastSeq != int64(a.Thread.Messages) {
		return c.Store.Active(ctx, a.Thread.ID, memory.ReadOptions{Light: true})
	}
	return next, nil
}

// overLimit explains why the context stays over L: the next plan cannot help (the pinned
// messages and the newest unit alone are too large), or max_passes was reached.
func (c *Compactor) overLimit(a memory.Active, next Plan, s Settings, passes int) error {
	if !next.Ineffective {
		return fmt.Errorf("%w: %d tokens after %s (max_passes), limit %d", ErrOverLimit, a.Tokens, english.Count(passes, "pass", "passes"), s.Budget())
	}
	return fmt.Errorf("%w: %d tokens, limit %d: the pinned messages (%d tokens) and the newest unit of messages (%d tokens) alone keep it there",
		ErrOverLimit, a.Tokens, s.Budget(), next.PinnedTokens, next.KeptTokens)
}

// applySummary commits one pass (planned on a, making next). It is where the facts guarantee
// is enforced: the summary commits only when every fact of the ledger of what it replaces is
// in the resulting active context or named as dropped.
//
// The facts the compaction left out so far (j.lost: what hybrid's mask or an earlier pass left
// out) are named with the summary's own, and marked dropped in its ledger, unless next holds
// them again (the summary's text shows one, say): those the ledger keeps as facts still needed,
// so that the compaction that folds the summary in checks them again. So the ledger marks
// dropped only facts some report names, and a fact back in the context is not left to the text
// that holds it, which a later ledger may not read as that fact. Messages appended while the
// compaction ran are not read: it names what it left out of the messages it saw.
func (j *job) applySummary(ctx context.Context, a memory.Active, plan Plan, sum summary, next memory.Active) error {
	// The check runs beside the making of the row's ledger, which does not depend on it; the
	// row is written only once it passed.
	checked := make(chan error, 1)
	go func() {
		missing := factTexts(checkedMissing(sum.checker, sum.facts, sum.outside, summaryBody(sum.text)))
		if dropped := factTexts(sum.dropped); !slices.Equal(missing, dropped) {
			checked <- fmt.Errorf("%w: the summary misses facts %q but reports %q as dropped", ErrFactsLost, missing, dropped)
		}
		close(checked)
	}()
	var lost, back []facts.Fact
	if len(j.lost) > 0 {
		for i, held := range facts.Kept(j.lost, outsideText(next.Entries)) {
			if held {
				back = append(back, j.lost[i])
			} else {
				lost = append(lost, j.lost[i])
			}
		}
	}
	lost = append(lost, sum.dropped...)
	allDropped := nonNil(factTexts(lost))
	ledger, ledgerBase := encodeStored(storedLedger(facts.Merge(sum.facts, back), sum.named, lost), sum.base, j.id)
	if cerr := <-checked; cerr != nil {
		return cerr
	}
	rep := j.rep
	commit := *rep
	commit.FromSeq, commit.ToSeq, commit.Summary, commit.SummaryTokens = plan.FromSeq, plan.ToSeq, &sum.text, sum.tokens
	commit.Passes, commit.TokensAfter, commit.MessagesAfter = rep.Passes+1, next.Tokens, len(next.Entries)
	commit.FactsTotal, commit.FactsKept, commit.FactsDropped = sum.factsTotal, sum.factsKept, allDropped
	commit.Provider, commit.Model, commit.DurationMs = sum.provider, sum.model, j.c.Store.Now().Sub(rep.CreatedAt).Milliseconds()
	setCachePrefix(&commit, j.a.Entries, next.Entries)
	err := j.c.Store.Compactions().ApplySummary(ctx, memory.Commit{Thread: a.Thread.ID, ID: j.id, Base: a.Current,
		Entries: next.Entries, ViewSeq: int64(a.Thread.Messages), Report: commit, SummaryRole: j.s.SummaryRole, Ledger: ledger, LedgerBase: ledgerBase})
	if err != nil {
		return err
	}
	j.lost = lost
	rep.CachePrefixTokens, rep.CacheInvalidatedTokens = commit.CachePrefixTokens, commit.CacheInvalidatedTokens
	return nil
}
