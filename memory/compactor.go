package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/redact"
)

// Summarizer writes summaries: it runs a task against its providers, in order, until one
// succeeds. cascade.Cascade satisfies it.
type Summarizer interface {
	Run(ctx context.Context, compactionID int64, task llm.Task) (llm.Result, error)
}

// Errors of Compact.
var (
	// ErrConflict: another compaction of the thread was applied (or reverted) while this one
	// ran; this one was not applied.
	ErrConflict = errors.New("conflict")
	// ErrOverLimit: after compaction the active context is still over the token limit.
	ErrOverLimit = errors.New("active context still over the token limit")
	// ErrSummarize: no provider could write the summary; the originals are kept.
	ErrSummarize = errors.New("summarization failed")
	// ErrFactsLost: a summary about to be committed misses facts it does not report as
	// dropped; it is not committed (a defect of the compactor, never of a provider).
	ErrFactsLost = errors.New("facts check failed")
)

// Compactor keeps threads inside their model's context window.
type Compactor struct {
	Store      *Store
	Summarizer Summarizer
	Settings   Settings

	// Redact is applied to every text that leaves the machine (the summarizer's input, each
	// fact of the ledger) and to the summary and error text before they are stored.
	// NewCompactor sets it to the built-in secret patterns (package redact); nil turns
	// redaction off.
	Redact func(string) string
	// OnReport is called with the report of every compaction that reached a decision (not
	// dry runs). Its error or panic never fails the compaction; it goes to HookError.
	OnReport func(context.Context, Report) error
	// OnSummarized is called after a summary was applied, with the messages it replaced, for
	// hosts that keep long-term memory elsewhere. Its error or panic goes to HookError.
	OnSummarized func(context.Context, Span) error
	// HookError receives the errors of OnReport and OnSummarized (nil: dropped).
	HookError func(error)
	// Progress receives progress events (nil: none).
	Progress func(Progress)
}

// Span is what one pass of a compaction summarized.
type Span struct {
	Thread       string
	CompactionID int64
	// Messages are the entries the summary replaced (a previous summary among them has
	// CompactionID set).
	Messages []Entry
	Summary  string
	// Facts is the ledger of the facts of Messages (see package facts).
	Facts []facts.Fact
}

// Progress is a step of a running compaction.
type Progress struct {
	Thread   string
	Pass     int
	Provider string
	Chunk    int // 1-based chunk being summarized
	Chunks   int
	Message  string
}

// CompactOptions change one Compact call.
type CompactOptions struct {
	// Force compacts even under the trigger, and even when the last compaction saw no new
	// messages since.
	Force bool
	// DryRun returns the plan as a "planned" report: no provider is called, nothing is written.
	DryRun bool
	// Override are settings of this call only: those it sets win over the thread's.
	Override ThreadSettings
	// Emergency is for a caller that cannot send the active context as it is (it is over the
	// limit now): the compaction runs even under the trigger, like Force, and is recorded with
	// reason emergency.
	Emergency bool
}

// NewCompactor returns a Compactor with the given settings, redacting secrets with the
// built-in patterns of package redact.
func NewCompactor(store *Store, summarizer Summarizer, s Settings) *Compactor {
	return &Compactor{Store: store, Summarizer: summarizer, Settings: s, Redact: builtinRedact()}
}

// builtinRedact is the redaction of the built-in patterns, compiled once.
var builtinRedact = sync.OnceValue(func() func(string) string {
	r, err := redact.New(nil)
	if err != nil {
		panic(err) // no extra pattern: New cannot fail
	}
	return func(s string) string { out, _ := r.Redact(s); return out }
})

// ShouldCompact reports whether an unforced Compact of the thread would do anything: its
// active context is over L, or it is over L * trigger_ratio and the wait rule (see waiting)
// does not hold. It reads stored counts only, so it is cheap to call after every turn.
func (c *Compactor) ShouldCompact(ctx context.Context, thread string) (bool, error) {
	t, err := c.Store.Thread(ctx, thread)
	if err != nil {
		return false, err
	}
	s := c.effective(t.Settings, ThreadSettings{})
	if err := s.Validate(); err != nil {
		return false, fmt.Errorf("thread %q: settings: %w", thread, err)
	}
	why, err := c.notNeeded(ctx, t, t.ActiveTokens, s)
	return why == "", err
}

// effective returns the settings a compaction of a thread uses (see Effective).
func (c *Compactor) effective(thread, over ThreadSettings) Settings {
	return Effective(c.Settings, thread, over)
}

// notNeeded returns why an unforced compaction of the thread would do nothing, "" when it is
// due. A context over L is always due: it compacts, or fails saying why it cannot.
func (c *Compactor) notNeeded(ctx context.Context, t Thread, tokens int, s Settings) (string, error) {
	if tokens > s.Budget() {
		return "", nil
	}
	if trigger := int(float64(s.Budget()) * s.TriggerRatio); tokens <= trigger {
		return fmt.Sprintf("%d tokens, under the trigger %d (%.2f of %d)", tokens, trigger, s.TriggerRatio, s.Budget()), nil
	}
	return c.waiting(ctx, t, s)
}

// waiting returns why automatic compaction waits: the latest applied or ineffective compaction
// of the thread ran with the same limit, reserve and ratios and saw every message there is, so
// another one would find the same. "" when it does not wait.
func (c *Compactor) waiting(ctx context.Context, t Thread, s Settings) (string, error) {
	last, err := c.Store.q.LatestSettledCompaction(ctx, t.ID)
	if errors.Is(err, sql.ErrNoRows) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	same := last.TokenLimit == int64(s.TokenLimit) && last.ReserveTokens == int64(s.ReserveTokens) &&
		last.TargetRatio == s.TargetRatio && last.TriggerRatio == s.TriggerRatio
	if last.LastSeq < int64(t.Messages) || !same {
		return "", nil
	}
	return fmt.Sprintf("compaction %d (%s) ran with the same settings and saw every message of the thread: automatic compaction waits for new messages", last.ID, last.Status), nil
}

// Compact compacts a thread's active context and returns the report. Unless forced, a thread
// under the trigger is left alone (status not_needed). On failure every message stays as it
// was, a failed report is recorded, and the error wraps each provider's cause.
func (c *Compactor) Compact(ctx context.Context, thread string, opt CompactOptions) (Report, error) {
	ts, err := c.Store.ThreadSettings(ctx, thread)
	if err != nil {
		return Report{}, fmt.Errorf("compact %q: %w", thread, err)
	}
	if err := opt.Override.Validate(); err != nil {
		return Report{}, fmt.Errorf("compact %q: override: %w", thread, err)
	}
	s := c.effective(ts, opt.Override)
	if err := s.Validate(); err != nil {
		return Report{}, fmt.Errorf("compact %q: settings: %w", thread, err)
	}
	// total_timeout bounds the summarizing; reading, planning and the commit of a summary that
	// came back in time (an offline rung answers even after it) use the caller's context.
	budget := ctx
	if s.TotalTimeout > 0 {
		var cancel context.CancelFunc
		budget, cancel = context.WithTimeout(ctx, s.TotalTimeout)
		defer cancel()
	}
	start := c.Store.Now()
	a, err := c.Store.activeLight(ctx, thread)
	if err != nil {
		return Report{}, fmt.Errorf("compact %q: %w", thread, err)
	}
	rep := Report{
		Thread: thread, Reason: ReasonThreshold, TokenLimit: s.TokenLimit,
		TokensBefore: a.Tokens, TokensAfter: a.Tokens, MessagesBefore: len(a.Entries), MessagesAfter: len(a.Entries),
		CreatedAt: start.UTC(), Strategy: StrategySummarize, FactsDropped: []string{},
	}
	switch {
	case opt.Emergency:
		rep.Reason = ReasonEmergency
	case opt.Force:
		rep.Reason = ReasonForced
	default:
		rep.Status = StatusNotNeeded
		if rep.Detail, err = c.notNeeded(ctx, a.Thread, a.Tokens, s); err != nil || rep.Detail != "" {
			return rep, err
		}
	}

	keep := int(float64(s.Budget()) * s.TargetRatio)
	plan := MakePlan(a.Entries, s, keep)
	rep.SummarizedMessages, rep.KeptMessages = plan.MiddleLen(), len(a.Entries)-plan.Kept
	rep.FromSeq, rep.ToSeq, rep.SummaryBudget = plan.FromSeq, plan.ToSeq, plan.SummaryBudget
	if opt.DryRun {
		rep.Status = StatusPlanned
		rep.Detail = plan.describe(a)
		if plan.Ineffective {
			rep.Detail = "ineffective: " + plan.Why
		}
		return rep, nil
	}
	if plan.Ineffective {
		rep.Status, rep.Detail = StatusIneffective, plan.Why
		rep.SummarizedMessages, rep.KeptMessages, rep.FromSeq, rep.ToSeq = 0, len(a.Entries)-plan.Pinned, 0, 0
		// Over the limit with nothing worth summarizing: the pinned messages and the newest
		// unit alone keep it there. Recorded, and an error for the caller.
		var over error
		if a.Tokens > s.Budget() {
			over = c.overLimit(a, plan, s, 0)
			rep.Error = errorText(over, c.Redact)
		}
		id, err := c.insert(ctx, a, rep, s)
		if err != nil {
			return rep, fmt.Errorf("compact %q: %w", thread, err)
		}
		rep.ID = &id
		c.report(ctx, rep)
		if over != nil {
			return rep, fmt.Errorf("compact %q: %w", thread, over)
		}
		return rep, nil
	}

	id, err := c.insert(ctx, a, rep, s)
	if err != nil {
		return rep, fmt.Errorf("compact %q: %w", thread, err)
	}
	rep.ID = &id
	rep.Status = StatusRunning
	stopLease := c.Store.holdLease(ctx, id)
	err = c.passes(ctx, budget, id, a, plan, keep, s, &rep)
	stopLease()
	rep.DurationMs = c.Store.Now().Sub(start).Milliseconds()
	if err != nil && rep.Status != StatusApplied {
		rep.Status = StatusFailed
	}
	rep.Error = errorText(err, c.Redact)
	// The report's final figures are written even when the caller's context ended.
	if ferr := c.finish(context.WithoutCancel(ctx), id, rep); ferr != nil && err == nil {
		err = ferr
	}
	if full, rerr := c.Store.Report(context.WithoutCancel(ctx), id); rerr == nil {
		rep = full
	}
	c.report(ctx, rep)
	if err != nil {
		return rep, fmt.Errorf("compact %q: %w", thread, err)
	}
	return rep, nil
}

// passes summarizes and commits until the context fits L or max_passes is reached.
func (c *Compactor) passes(ctx, budget context.Context, id int64, a Active, plan Plan, keep int, s Settings, rep *Report) error {
	base := a.Summary
	var lost []facts.Fact // facts left out of the active context so far
	for pass := 1; ; pass++ {
		sum, err := c.summarize(budget, id, pass, a, plan, s)
		if err != nil {
			return err
		}
		rep.Chunks += sum.chunks
		tokens := sum.tokens
		if err := c.apply(ctx, id, base, a, plan, sum, s, rep); err != nil {
			return err
		}
		rep.Passes, rep.Status = pass, StatusApplied
		rep.Provider, rep.Model, rep.SummaryTokens = sum.provider, sum.model, tokens
		rep.FactsTotal, rep.FactsKept = sum.factsTotal, sum.factsKept
		c.summarized(ctx, a, plan, id, sum)
		if a, err = c.after(ctx, id, a, plan, sum, s); err != nil {
			return err
		}
		rep.TokensAfter, rep.MessagesAfter = a.Tokens, len(a.Entries)
		// Facts an earlier pass could not fit may be back (a later message repeats them).
		lost = append(missingFacts(lost, nil, outsideText(a.Entries)), sum.dropped...)
		rep.FactsDropped = factTexts(lost)
		if a.Tokens <= s.Budget() {
			return nil
		}
		next := MakePlan(a.Entries, s, keep/2)
		if pass == s.MaxPasses || next.Ineffective {
			return c.overLimit(a, next, s, pass)
		}
		keep /= 2
		base, plan = id, next
		rep.SummarizedMessages += next.MiddleLen() - 1 // the summary of this pass is one of them
		rep.KeptMessages = len(a.Entries) - next.Kept
	}
}

// after returns the active context after a pass was applied. When nothing was appended
// meanwhile it is built from the one the pass was planned on, without reading the thread.
func (c *Compactor) after(ctx context.Context, id int64, a Active, plan Plan, sum summary, s Settings) (Active, error) {
	t, err := c.Store.q.GetThread(ctx, a.Thread.ID)
	if err != nil {
		return Active{}, err
	}
	if t.LastSeq != int64(a.Thread.Messages) {
		return c.Store.activeLight(ctx, a.Thread.ID)
	}
	next := a
	next.Entries = make([]Entry, 0, plan.Pinned+1+len(a.Entries)-plan.Kept)
	next.Entries = append(next.Entries, a.Entries[:plan.Pinned]...)
	next.Entries = append(next.Entries, Entry{Tokens: sum.tokens, Message: TextMessage(s.SummaryRole, sum.text), CompactionID: id,
		CoversFrom: plan.FromSeq, CoversTo: plan.ToSeq, text: sum.text, light: true})
	next.Entries = append(next.Entries, a.Entries[plan.Kept:]...)
	next.Tokens = a.Tokens - plan.MiddleTokens + sum.tokens
	next.Summary, next.FromSeq, next.ToSeq = id, plan.FromSeq, plan.ToSeq
	next.Thread.ActiveMessages, next.Thread.ActiveTokens = len(next.Entries), next.Tokens
	return next, nil
}

// overLimit explains why the context stays over L: the next plan cannot help (the pinned
// messages and the newest unit alone are too large), or max_passes was reached.
func (c *Compactor) overLimit(a Active, next Plan, s Settings, passes int) error {
	if !next.Ineffective {
		return fmt.Errorf("%w: %d tokens after %d passes (max_passes), limit %d", ErrOverLimit, a.Tokens, passes, s.Budget())
	}
	return fmt.Errorf("%w: %d tokens, limit %d: the pinned messages (%d tokens) and the newest unit of messages (%d tokens) alone keep it there",
		ErrOverLimit, a.Tokens, s.Budget(), next.PinnedTokens, next.KeptTokens)
}

// insert records a compaction row: running (holding a lease), or ineffective when rep says
// so. The row records the settings it runs with: the wait rule compares them.
func (c *Compactor) insert(ctx context.Context, a Active, rep Report, s Settings) (int64, error) {
	status := StatusRunning
	if rep.Status == StatusIneffective {
		status = StatusIneffective
	}
	var id int64
	err := db.WithTx(ctx, c.Store.db, func(tx *sql.Tx) error {
		now := c.Store.now()
		var err error
		id, err = c.Store.q.WithTx(tx).InsertCompaction(ctx, db.InsertCompactionParams{
			ThreadID: a.Thread.ID, Status: status, Reason: rep.Reason, Strategy: StrategySummarize,
			BaseID:  sql.NullInt64{Int64: a.Summary, Valid: a.Summary != 0},
			LastSeq: int64(a.Thread.Messages), TokenLimit: int64(s.TokenLimit), ReserveTokens: int64(s.ReserveTokens),
			TargetRatio: s.TargetRatio, TriggerRatio: s.TriggerRatio,
			TokensBefore: int64(rep.TokensBefore), TokensAfter: int64(rep.TokensAfter),
			MessagesBefore: int64(rep.MessagesBefore), MessagesAfter: int64(rep.MessagesAfter),
			KeptMessages: int64(rep.KeptMessages),
			OwnerHost:    owner(), OwnerPid: int64(os.Getpid()), LeaseUntil: now + c.Store.lease().Milliseconds(),
			Error: rep.Error, Detail: rep.Detail, CreatedAt: now, UpdatedAt: now,
		})
		return err
	})
	return id, err
}

// apply commits one pass: in one transaction, checks that the thread's current compaction is
// still the one the pass was planned on, and records the summary and the range it covers. It
// is where the facts guarantee is enforced: the summary commits only when every fact of the
// ledger of what it replaces is in the resulting active context or named as dropped.
func (c *Compactor) apply(ctx context.Context, id, base int64, a Active, plan Plan, sum summary, s Settings, rep *Report) error {
	missing := factTexts(missingFacts(sum.facts, sum.outside, sum.text))
	dropped := factTexts(sum.dropped)
	if !slices.Equal(missing, dropped) {
		return fmt.Errorf("%w: the summary misses facts %q but reports %q as dropped", ErrFactsLost, missing, dropped)
	}
	allDropped, err := json.Marshal(append(slices.Clone(rep.FactsDropped), dropped...))
	if err != nil {
		return err
	}
	return db.WithTx(ctx, c.Store.db, func(tx *sql.Tx) error {
		q := c.Store.q.WithTx(tx)
		cur, err := currentID(ctx, q, a.Thread.ID)
		if err != nil {
			return err
		}
		if cur != base {
			if cur == 0 {
				return fmt.Errorf("%w: compaction %d, which this one folds in, was reverted meanwhile", ErrConflict, base)
			}
			return fmt.Errorf("%w: compaction %d of thread %q was applied meanwhile", ErrConflict, cur, a.Thread.ID)
		}
		n, err := q.ApplyCompaction(ctx, db.ApplyCompactionParams{
			FromSeq: sql.NullInt64{Int64: plan.FromSeq, Valid: true}, ToSeq: sql.NullInt64{Int64: plan.ToSeq, Valid: true},
			Summary: sql.NullString{String: sum.text, Valid: true}, SummaryRole: sql.NullString{String: s.SummaryRole, Valid: true},
			SummaryTokens: int64(sum.tokens), Passes: int64(rep.Passes + 1), Chunks: int64(rep.Chunks),
			TokensAfter:        int64(a.Tokens - plan.MiddleTokens + sum.tokens),
			MessagesAfter:      int64(len(a.Entries) - plan.MiddleLen() + 1),
			SummarizedMessages: int64(rep.SummarizedMessages), KeptMessages: int64(rep.KeptMessages),
			FactsTotal: int64(sum.factsTotal), FactsKept: int64(sum.factsKept), FactsDropped: string(allDropped),
			Provider: sum.provider, Model: sum.model, UpdatedAt: c.Store.now(), ID: id,
			DurationMs: c.Store.Now().Sub(rep.CreatedAt).Milliseconds(),
		})
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: compaction %d is no longer running (marked failed meanwhile)", ErrConflict, id)
		}
		return nil
	})
}

// finish records the final figures and status of a compaction. A compaction that applied
// nothing reports the context as it was: tokens_after = tokens_before.
func (c *Compactor) finish(ctx context.Context, id int64, rep Report) error {
	if rep.Status != StatusApplied {
		rep.TokensAfter, rep.MessagesAfter = rep.TokensBefore, rep.MessagesBefore
	}
	dropped, err := json.Marshal(rep.FactsDropped)
	if err != nil {
		return err
	}
	return db.WithTx(ctx, c.Store.db, func(tx *sql.Tx) error {
		q := c.Store.q.WithTx(tx)
		requests, err := q.CompactionRequests(ctx, sql.NullInt64{Int64: id, Valid: true})
		if err != nil {
			return err
		}
		_, err = q.FinishCompaction(ctx, db.FinishCompactionParams{
			Status: rep.Status, TokensAfter: int64(rep.TokensAfter), MessagesAfter: int64(rep.MessagesAfter),
			SummarizedMessages: int64(rep.SummarizedMessages), KeptMessages: int64(rep.KeptMessages),
			Passes: int64(rep.Passes), Chunks: int64(rep.Chunks), Requests: requests, Provider: rep.Provider, Model: rep.Model,
			DurationMs: rep.DurationMs, Error: rep.Error, Detail: rep.Detail, FactsDropped: string(dropped),
			UpdatedAt: c.Store.now(), ID: id,
		})
		return err
	})
}

func errorText(err error, redact func(string) string) string {
	if err == nil {
		return ""
	}
	if redact != nil {
		return redact(err.Error())
	}
	return err.Error()
}

func (c *Compactor) report(ctx context.Context, rep Report) {
	if c.OnReport != nil {
		c.hook(func() error { return c.OnReport(ctx, rep) })
	}
}

// summarized calls OnSummarized with the messages a pass replaced, read whole.
func (c *Compactor) summarized(ctx context.Context, a Active, plan Plan, id int64, sum summary) {
	if c.OnSummarized == nil {
		return
	}
	c.hook(func() error {
		middle := a.Entries[plan.Pinned:plan.Kept]
		msgs := make([]Entry, 0, len(middle))
		if len(middle) > 0 && middle[0].CompactionID != 0 {
			msgs = append(msgs, middle[0]) // the earlier summary
			middle = middle[1:]
		}
		if len(middle) > 0 {
			rows, err := c.Store.q.ListMessagesBetween(ctx, db.ListMessagesBetweenParams{
				ThreadID: a.Thread.ID, FromSeq: middle[0].Seq, ToSeq: middle[len(middle)-1].Seq})
			if err != nil {
				return err
			}
			full, err := entries(rows)
			if err != nil {
				return err
			}
			msgs = append(msgs, full...)
		}
		return c.OnSummarized(ctx, Span{Thread: a.Thread.ID, CompactionID: id, Messages: msgs, Summary: sum.text, Facts: sum.facts})
	})
}

// hook runs a host's hook: its error or panic goes to HookError and never further.
func (c *Compactor) hook(f func() error) {
	err := func() (err error) {
		defer func() {
			if p := recover(); p != nil {
				err = fmt.Errorf("hook panicked: %v", p)
			}
		}()
		return f()
	}()
	if err != nil && c.HookError != nil {
		c.HookError(err)
	}
}

func (c *Compactor) progress(p Progress) {
	if c.Progress != nil {
		c.Progress(p)
	}
}

// describe explains a plan for a dry run.
func (p Plan) describe(a Active) string {
	return fmt.Sprintf("keep %d pinned (%d tokens); summarize %d messages, seq %d-%d (%d tokens) into at most %d tokens; keep the newest %d (%d tokens)",
		p.Pinned, p.PinnedTokens, p.MiddleLen(), p.FromSeq, p.ToSeq, p.MiddleTokens, p.SummaryBudget, len(a.Entries)-p.Kept, p.KeptTokens)
}
