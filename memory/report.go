package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/tokencount"
)

// Status is what became of a compaction, as stored in compactions.status. A compaction that
// did not run reports one of compact's statuses instead (compact.StatusNotNeeded, StatusPlanned,
// StatusSkipped, StatusHeld), which is never stored.
type Status string

// Compaction statuses as stored; allStatuses lists them all.
const (
	StatusApplied     Status = "applied"     // the summary replaced the middle in the active context
	StatusIneffective Status = "ineffective" // would save under 10%; recorded, no provider called
	StatusFailed      Status = "failed"      // no provider could summarize, or the commit lost a race
	StatusRunning     Status = "running"     // in progress (or interrupted, until the next Open)
	StatusReverted    Status = "reverted"    // was applied, then reverted
)

// allStatuses is every stored compaction status, the one list of them.
var allStatuses = []Status{StatusApplied, StatusIneffective, StatusFailed, StatusRunning, StatusReverted}

// Report says what a compaction did, or would do (dry run). Its JSON form is the one `memctl`
// prints.
type Report struct {
	ID                 int64     `json:"id"` // 0 before the report is stored; JSON null then
	Thread             string    `json:"thread"`
	Status             Status    `json:"status"`
	Reason             string    `json:"reason"` // why it ran: one of compact's Reason* (the policy's)
	TokenLimit         int       `json:"token_limit"`
	TokensBefore       int       `json:"tokens_before"`
	TokensAfter        int       `json:"tokens_after"`
	MessagesBefore     int       `json:"messages_before"`
	MessagesAfter      int       `json:"messages_after"`
	SummarizedMessages int       `json:"summarized_messages"`
	KeptMessages       int       `json:"kept_messages"`
	Passes             int       `json:"passes"`
	Chunks             int       `json:"chunks"`   // requests of the provider whose summary was used
	Requests           int       `json:"requests"` // requests sent to every provider
	Provider           string    `json:"provider"`
	Model              string    `json:"model"`
	SummaryTokens      int       `json:"summary_tokens"`
	DurationMs         int64     `json:"duration_ms"`
	Error              string    `json:"error"`
	CreatedAt          time.Time `json:"created_at"`
	// FromSeq and ToSeq are the messages the summary covers (or would cover: dry run).
	FromSeq int64 `json:"from_seq"`
	ToSeq   int64 `json:"to_seq"`
	// LastSeq is the newest message of the thread the compaction saw (a thread's chart marks
	// the compaction there); set by Store.Reports and Store.Report, not in the JSON.
	LastSeq int64 `json:"-"`
	// TokensAppended and MessagesAppended are the messages appended while the compaction ran:
	// they are in the active context beside what it made of the messages it saw (TokensAfter,
	// MessagesAfter), so the context it left holds TokensAfter + TokensAppended tokens. A
	// compaction that applied nothing reports no message summarized (SummarizedMessages 0).
	TokensAppended   int `json:"tokens_appended"`
	MessagesAppended int `json:"messages_appended"`
	// FactsTotal is the number of facts in the middle's ledger; FactsKept how many the
	// provider's summary held before the missing ones were appended.
	FactsTotal int `json:"facts_total"`
	FactsKept  int `json:"facts_kept"`
	// FactsDropped are the exact values of the ledger facts that are not in the active
	// context after the compaction: they did not fit within the limit. [] when none.
	FactsDropped []string `json:"facts_dropped"`
	// Strategy is how the compaction shrank the context: summarize, mask, hybrid or window.
	Strategy string `json:"strategy"`
	// View says what the compaction's view masks, leaves out or cuts beside its summary (mask,
	// window, hybrid, and a view fitted by on_failure fit); absent when it is a summary alone.
	View *ViewChanges `json:"view,omitempty"`
	// LeaseUntil is when a running compaction's lease ends unless renewed (running only).
	LeaseUntil *time.Time `json:"lease_until,omitempty"`
	// Superseded: an applied compaction whose summary a newer one folded in.
	Superseded bool `json:"superseded,omitempty"`
	// Detail explains the outcome in words (stored with the report).
	Detail string `json:"detail,omitempty"`
	// SummaryBudget is the planned maximum size of the summary (dry run).
	SummaryBudget int `json:"summary_budget,omitempty"`
	// CachePrefixTokens is, for an applied compaction, the tokens of the active context it was
	// planned on before the first entry it changed: the prompt prefix an upstream's cache still
	// holds after it. CacheInvalidatedTokens is TokensBefore less it: the prefix it invalidated,
	// which the next request pays for uncached. Both null when not applied, or applied before
	// they were recorded.
	CachePrefixTokens      *int `json:"cache_prefix_tokens"`
	CacheInvalidatedTokens *int `json:"cache_invalidated_tokens"`
	// Usage is what the compaction's provider requests cost, summed over its attempts.
	Usage Usage `json:"usage"`
	// Summary and Attempts are filled by compact.Compactor.Compact and Store.Report, not by Store.Reports.
	Summary  *string       `json:"summary,omitzero"`
	Attempts []AttemptView `json:"attempts,omitzero"`
}

// MarshalJSON writes the report with "id": null before it is stored (ID 0), the JSON form
// docs/json.md shows for a dry run or a compaction that was not needed.
func (r Report) MarshalJSON() ([]byte, error) {
	type fields Report // without this method
	var id *int64
	if r.ID != 0 {
		id = &r.ID
	}
	return json.Marshal(struct {
		ID *int64 `json:"id"`
		fields
	}{id, fields(r)})
}

func reportFromRow(c db.Compaction, current int64) Report {
	r := Report{
		ID: c.ID, Thread: c.ThreadID, Status: Status(c.Status), Reason: c.Reason,
		TokenLimit: int(c.TokenLimit), TokensBefore: int(c.TokensBefore), TokensAfter: int(c.TokensAfter),
		MessagesBefore: int(c.MessagesBefore), MessagesAfter: int(c.MessagesAfter),
		SummarizedMessages: int(c.SummarizedMessages), KeptMessages: int(c.KeptMessages),
		Passes: int(c.Passes), Chunks: int(c.Chunks), Provider: c.Provider, Model: c.Model,
		SummaryTokens: int(c.SummaryTokens), DurationMs: c.DurationMs, Error: c.Error,
		CreatedAt: time.UnixMilli(c.CreatedAt).UTC(), FromSeq: c.FromSeq.Int64, ToSeq: c.ToSeq.Int64, LastSeq: c.LastSeq,
		FactsTotal: int(c.FactsTotal), FactsKept: int(c.FactsKept), FactsDropped: []string{},
		Requests: int(c.Requests), Strategy: c.Strategy, Detail: c.Detail,
	}
	if err := json.Unmarshal([]byte(c.FactsDropped), &r.FactsDropped); err != nil || r.FactsDropped == nil {
		r.FactsDropped = []string{} // a row written by hand; the column's default is "[]"
	}
	r.View = viewChanges(c.View)
	if st := Status(c.Status); c.CachePrefixTokens.Valid && (st == StatusApplied || st == StatusReverted) {
		r.setCachePrefix(int(c.CachePrefixTokens.Int64))
	}
	r.split(c)
	r.Superseded = r.Status == StatusApplied && c.ID != current
	if r.Status == StatusRunning {
		lease := time.UnixMilli(c.LeaseUntil).UTC()
		r.LeaseUntil = &lease
	}
	return r
}

// setCachePrefix records that the compaction kept the first prefix tokens of the context it was
// planned on (CachePrefixTokens), and so invalidated the rest of TokensBefore.
func (r *Report) setCachePrefix(prefix int) {
	inv := max(r.TokensBefore-prefix, 0)
	r.CachePrefixTokens, r.CacheInvalidatedTokens = &prefix, &inv
}

// split parts the active context an applied compaction left (the row's tokens_after and
// messages_after, read when it ended) into what it made of the messages it saw (its view, up to
// view_seq) and the messages appended while it ran. One that applied nothing summarized nothing.
func (r *Report) split(c db.Compaction) {
	switch Status(c.Status) {
	case StatusApplied, StatusReverted:
		if c.ViewMessages == 0 {
			return // a row written before views were stored
		}
		if own := int(c.ViewTokens) + tokencount.ReplyPriming; r.TokensAfter > own {
			r.TokensAfter, r.TokensAppended = own, r.TokensAfter-own
		}
		if own := int(c.ViewMessages); r.MessagesAfter > own {
			r.MessagesAfter, r.MessagesAppended = own, r.MessagesAfter-own
		}
	case StatusFailed, StatusIneffective:
		r.SummarizedMessages = 0
	}
}

// Reports lists compaction reports newest first (thread "" = every thread; limit 0 = 100),
// without summaries and attempts.
func (s *Store) Reports(ctx context.Context, thread string, limit int) ([]Report, error) {
	if limit <= 0 {
		limit = 100
	}
	out := []Report{}
	err := s.h.ReadTx(ctx, func(q db.Querier) error {
		if thread != "" {
			if _, err := q.GetThread(ctx, thread); errors.Is(err, sql.ErrNoRows) {
				return fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
			}
		}
		rows, err := q.ListCompactions(ctx, db.ListCompactionsParams{ThreadID: thread, MaxRows: int64(limit)})
		if err != nil {
			return err
		}
		current := map[string]int64{}
		for _, c := range rows {
			cur, ok := current[c.ThreadID]
			if !ok {
				if cur, err = currentID(ctx, q, c.ThreadID); err != nil {
					return err
				}
				current[c.ThreadID] = cur
			}
			r := reportFromRow(c, cur)
			if r.Usage, err = usageOf(ctx, q, c.ID); err != nil {
				return err
			}
			out = append(out, r)
		}
		return nil
	})
	return out, err
}

// Report returns one compaction report with its summary and every provider attempt.
func (s *Store) Report(ctx context.Context, id int64) (Report, error) {
	return readTx(ctx, s, func(q db.Querier) (Report, error) { return s.report(ctx, q, id) })
}

// compactionAndCurrent reads compaction id and the id of its thread's current compaction.
func compactionAndCurrent(ctx context.Context, q db.Querier, id int64) (db.Compaction, int64, error) {
	c, err := q.GetCompaction(ctx, id)
	if errors.Is(err, sql.ErrNoRows) {
		return c, 0, fmt.Errorf("%w: %d", ErrCompactionNotFound, id)
	}
	if err != nil {
		return c, 0, err
	}
	cur, err := currentID(ctx, q, c.ThreadID)
	return c, cur, err
}

func (s *Store) report(ctx context.Context, q db.Querier, id int64) (Report, error) {
	c, cur, err := compactionAndCurrent(ctx, q, id)
	if err != nil {
		return Report{}, err
	}
	r := reportFromRow(c, cur)
	if r.Usage, err = usageOf(ctx, q, id); err != nil {
		return Report{}, err
	}
	summary := c.Summary.String
	r.Summary = &summary
	rows, err := q.ListCompactionAttempts(ctx, sql.NullInt64{Int64: id, Valid: true})
	if err != nil {
		return Report{}, err
	}
	all := attemptsOf(rows)
	r.Attempts = make([]AttemptView, len(all))
	for i, a := range all {
		r.Attempts[i] = a.view()
	}
	return r, nil
}

// currentID is the id of the thread's current (newest applied) compaction, 0 when none.
func currentID(ctx context.Context, q db.Querier, thread string) (int64, error) {
	c, err := q.CurrentCompaction(ctx, thread)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil
	}
	return c.ID, err
}

// Revert undoes compaction id, which must be the latest applied compaction of its thread: the
// messages it covered are active again, with everything appended since; the summary it
// folded in (if any) is current again. Reverting any other compaction is refused
// (errNotLatest). With id 0 it undoes the latest applied compaction of thread (a thread with
// none is ErrCompactionNotFound); with an id, thread is "" or the compaction's thread.
func (s *Store) Revert(ctx context.Context, thread string, id int64) (Report, error) {
	var r Report
	err := s.h.WithTx(ctx, func(q db.Querier) (err error) {
		if id != 0 {
			if r, err = s.revert(ctx, q, id); err == nil && thread != "" && r.Thread != thread {
				return fmt.Errorf("%w: %d is not a compaction of thread %q", ErrCompactionNotFound, id, thread)
			}
			return err
		}
		if _, err := q.GetThread(ctx, thread); errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
		} else if err != nil {
			return err
		}
		id, err := currentID(ctx, q, thread)
		if err != nil {
			return err
		}
		if id == 0 {
			return fmt.Errorf("%w: thread %q has no applied compaction to revert", ErrCompactionNotFound, thread)
		}
		r, err = s.revert(ctx, q, id)
		return err
	})
	return r, err
}

func (s *Store) revert(ctx context.Context, q db.Querier, id int64) (Report, error) {
	c, cur, err := compactionAndCurrent(ctx, q, id)
	if err != nil {
		return Report{}, err
	}
	if Status(c.Status) != StatusApplied || cur != id {
		why := fmt.Sprintf("it is %s", c.Status)
		if Status(c.Status) == StatusApplied {
			why = fmt.Sprintf("compaction %d is the latest applied one of thread %q", cur, c.ThreadID)
		}
		return Report{}, fmt.Errorf("%w: compaction %d: %s", errNotLatest, id, why)
	}
	if _, err := q.SetCompactionStatus(ctx, db.SetCompactionStatusParams{
		NewStatus: string(StatusReverted), Error: c.Error, UpdatedAt: s.now(), ID: id, OldStatus: string(StatusApplied),
	}); err != nil {
		return Report{}, err
	}
	return s.report(ctx, q, id)
}

// errNotLatest: only the latest applied compaction of a thread can be reverted.
var errNotLatest = errors.New("revert refused: only the latest applied compaction of a thread can be reverted")
