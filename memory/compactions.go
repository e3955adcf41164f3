package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"runtime"
	"sync"

	"github.com/memcascade/memcascade/db"
)

// The compaction rows, as the compactor writes them: inserted running (holding a lease) or
// ineffective, applied (a summary, a view, or both) in a transaction that checks no other
// compaction was applied meanwhile, then finished with the final figures.

// Compactions writes the store's compaction rows for the compaction engine. A row is inserted
// running (holding a lease) or ineffective, each pass or view is applied in a transaction that
// checks no other compaction was applied meanwhile, and then the final figures are written.
// Hosts read the rows as Reports.
type Compactions struct{ s *Store }

// Compactions returns the writer of the store's compaction rows.
func (s *Store) Compactions() Compactions { return Compactions{s} }

// errConflict: another compaction of the thread was applied (or reverted) while this one ran;
// this one was not applied.
var errConflict = errors.New("conflict")

// NewCompaction is a compaction row as it starts.
type NewCompaction struct {
	// Report holds the row's first figures: Thread, Status (running or ineffective), Reason,
	// Strategy, TokensBefore, TokensAfter, MessagesBefore, MessagesAfter, KeptMessages, Error
	// and Detail.
	Report Report
	// Limits are the limit, reserve and ratios the compaction runs with (LatestSettled gives
	// them back).
	Limits Limits
	// Base is Active.Current of the context it was planned on; LastSeq the newest message it saw.
	Base, LastSeq int64
}

// Insert records the row of a compaction, with a lease until Store.Now + Options.Lease, and
// returns its id.
func (c Compactions) Insert(ctx context.Context, n NewCompaction) (int64, error) {
	s, r := c.s, n.Report
	var id int64
	err := s.h.WithTx(ctx, func(q db.Querier) error {
		now := s.now()
		var err error
		id, err = q.InsertCompaction(ctx, db.InsertCompactionParams{
			ThreadID: r.Thread, Status: string(r.Status), Reason: r.Reason, Strategy: r.Strategy,
			BaseID:  nullInt(n.Base),
			LastSeq: n.LastSeq, TokenLimit: int64(n.Limits.TokenLimit), ReserveTokens: int64(n.Limits.ReserveTokens),
			TargetRatio: n.Limits.TargetRatio, TriggerRatio: n.Limits.TriggerRatio,
			TokensBefore: int64(r.TokensBefore), TokensAfter: int64(r.TokensAfter),
			MessagesBefore: int64(r.MessagesBefore), MessagesAfter: int64(r.MessagesAfter),
			KeptMessages: int64(r.KeptMessages),
			OwnerHost:    owner(), OwnerPid: int64(os.Getpid()), LeaseUntil: now + s.lease().Milliseconds(),
			Error: r.Error, Detail: r.Detail, CreatedAt: now, UpdatedAt: now,
		})
		return err
	})
	return id, err
}

// Commit is what a pass or a view of a compaction applies.
type Commit struct {
	Thread string
	// ID is the compaction; Base is Active.Current of the context it was planned on.
	ID, Base int64
	// Entries are the active context the commit leaves over the messages 1..ViewSeq: the view
	// stored is derived from them.
	Entries []Entry
	ViewSeq int64
	// Report holds the figures so far: TokensAfter, MessagesAfter, SummarizedMessages,
	// KeptMessages, FactsTotal, FactsKept, FactsDropped (stored as given: nil is null) and
	// CachePrefixTokens. A pass
	// adds Summary, SummaryTokens, Passes, Chunks, Provider, Model, DurationMs, FromSeq and ToSeq.
	Report Report
	// SummaryRole, Ledger and LedgerBase are ApplySummary's only: the summary message's role,
	// and the facts ledger as the engine encodes it (the store keeps it as opaque text), written
	// as the difference from the ledger of compaction LedgerBase, an older one of the thread (0:
	// whole).
	SummaryRole string
	Ledger      string
	LedgerBase  int64
}

// ApplySummary commits a summary pass of compaction cm.ID, unless the thread's current
// compaction is no longer cm.Base or cm.ID (errConflict; nothing written). When the connection
// is lost during the COMMIT, the row is read again (see applyCompaction).
func (c Compactions) ApplySummary(ctx context.Context, cm Commit) error {
	r := cm.Report
	dropped, err := json.Marshal(r.FactsDropped)
	if err != nil {
		return err
	}
	var summary string
	if r.Summary != nil {
		summary = *r.Summary
	}
	view, _, _ := viewOf(cm.Entries, cm.ViewSeq, cm.ID)
	return c.s.applySummary(ctx, cm.Thread, cm.ID, cm.Base, db.ApplyCompactionParams{
		FromSeq: nullInt(r.FromSeq), ToSeq: nullInt(r.ToSeq),
		Summary: sqlString(summary), SummaryRole: sqlString(cm.SummaryRole),
		SummaryTokens: int64(r.SummaryTokens), Passes: int64(r.Passes), Chunks: int64(r.Chunks),
		TokensAfter: int64(r.TokensAfter), MessagesAfter: int64(r.MessagesAfter),
		SummarizedMessages: int64(r.SummarizedMessages), KeptMessages: int64(r.KeptMessages),
		FactsTotal: int64(r.FactsTotal), FactsKept: int64(r.FactsKept), FactsDropped: string(dropped),
		Provider: r.Provider, Model: r.Model, DurationMs: r.DurationMs,
		View: view, ViewSeq: cm.ViewSeq, ViewTokens: int64(EntryTokens(cm.Entries)), ViewMessages: int64(len(cm.Entries)),
		Ledger: cm.Ledger, LedgerBase: nullInt(cm.LedgerBase), CachePrefixTokens: cachePrefix(r),
	})
}

// ApplyView commits a view of compaction cm.ID that no new summary made (mask, window, a view
// fitted after summarizing failed), as ApplySummary does. Its FromSeq and ToSeq are the range of
// the summary in the view, not cm.Report's.
func (c Compactions) ApplyView(ctx context.Context, cm Commit) error {
	r := cm.Report
	view, from, to := viewOf(cm.Entries, cm.ViewSeq, cm.ID)
	dropped, err := json.Marshal(r.FactsDropped)
	if err != nil {
		return err
	}
	return c.s.applyView(ctx, cm.Thread, cm.ID, cm.Base, db.ApplyViewParams{
		FromSeq: nullInt(from), ToSeq: nullInt(to), View: view, ViewSeq: cm.ViewSeq,
		ViewTokens: int64(EntryTokens(cm.Entries)), ViewMessages: int64(len(cm.Entries)),
		TokensAfter: int64(r.TokensAfter), MessagesAfter: int64(r.MessagesAfter),
		SummarizedMessages: int64(r.SummarizedMessages), KeptMessages: int64(r.KeptMessages),
		FactsTotal: int64(r.FactsTotal), FactsKept: int64(r.FactsKept), FactsDropped: string(dropped),
		CachePrefixTokens: cachePrefix(r),
	})
}

// cachePrefix is r's CachePrefixTokens as its column holds it (NULL: not known).
func cachePrefix(r Report) sql.NullInt64 {
	if r.CachePrefixTokens == nil {
		return sql.NullInt64{}
	}
	return sql.NullInt64{Int64: int64(*r.CachePrefixTokens), Valid: true}
}

// Finish records the final status and figures of compaction id (Status, TokensAfter,
// MessagesAfter, SummarizedMessages, KeptMessages, Passes, Chunks, Provider, Model, DurationMs,
// Error, Detail and FactsDropped of final), and the requests its providers were sent, as the
// attempt log holds them.
func (c Compactions) Finish(ctx context.Context, id int64, final Report) error {
	dropped, err := json.Marshal(final.FactsDropped)
	if err != nil {
		return err
	}
	return c.s.finishCompaction(ctx, id, db.FinishCompactionParams{
		Status: string(final.Status), TokensAfter: int64(final.TokensAfter), MessagesAfter: int64(final.MessagesAfter),
		SummarizedMessages: int64(final.SummarizedMessages), KeptMessages: int64(final.KeptMessages),
		Passes: int64(final.Passes), Chunks: int64(final.Chunks), Provider: final.Provider, Model: final.Model,
		DurationMs: final.DurationMs, Error: final.Error, Detail: final.Detail, FactsDropped: string(dropped),
	})
}

// Limits are the limit, reserve and ratios a compaction ran with, stored on its row: the wait
// rule compares them with the thread's settings now (compact.Compactor.ShouldCompact).
type Limits struct {
	TokenLimit, ReserveTokens int
	TargetRatio, TriggerRatio float64
}

// LatestSettled returns the newest applied or ineffective compaction of a thread (ok false:
// none).
func (c Compactions) LatestSettled(ctx context.Context, thread string) (Outcome, bool, error) {
	r, err := c.s.h.Q().LatestSettledCompaction(ctx, thread)
	if errors.Is(err, sql.ErrNoRows) {
		return Outcome{}, false, nil
	}
	if err != nil {
		return Outcome{}, false, err
	}
	return outcomeOf(r), true, nil
}

// Ledger returns the facts ledger stored with compaction id, as the engine encoded it (""
// for a summary applied before ledgers were stored), and the compaction whose ledger it is the
// difference from (0: it is whole).
func (c Compactions) Ledger(ctx context.Context, id int64) (text string, base int64, err error) {
	r, err := c.s.h.Q().CompactionLedger(ctx, id)
	return r.Ledger, r.LedgerBase.Int64, err
}

func nullInt(v int64) sql.NullInt64 { return sql.NullInt64{Int64: v, Valid: v != 0} }

func sqlString(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }

// applyCompaction commits compaction id in one transaction, after checking that the thread's
// current compaction is still base, the one it was planned on. apply writes the row.
//
// When the connection to the server is lost during the COMMIT, the row is read again: a
// commit that reached the server is the compaction applied (finishing it as failed would leave
// a failed row holding an applied summary, and the summary lost).
// committed tells, from the row read again, whether this commit is the one it holds (an
// earlier pass of the same compaction may have been applied).
func (s *Store) applyCompaction(ctx context.Context, thread string, id, base int64, apply func(q db.Querier) (int64, error), committed func(c db.Compaction) bool) error {
	err := s.applyTx(ctx, thread, id, base, apply)
	if err != nil && db.CommitUnknown(err) {
		// The lost transaction holds the thread's row lock until the server has committed it
		// or rolled it back: taking that lock first, the row is read as that ending left it,
		// never as it was before a commit the server was still making.
		var c db.Compaction
		rerr := s.h.LockedTx(ctx, func(q db.Querier) error {
			if _, err := q.LockThread(ctx, thread); err != nil {
				return err
			}
			var err error
			c, err = q.GetCompaction(ctx, id)
			return err
		})
		if rerr != nil {
			return errors.Join(err, fmt.Errorf("read compaction %d again: %w", id, rerr))
		}
		if Status(c.Status) == StatusApplied && committed(c) {
			return nil
		}
	}
	return err
}

func (s *Store) applyTx(ctx context.Context, thread string, id, base int64, apply func(q db.Querier) (int64, error)) error {
	return s.h.WithTx(ctx, func(q db.Querier) error {
		// The thread's row is locked first: a reader after a lost COMMIT waits on it (see
		// applyCompaction), as appends to the thread do.
		if _, err := q.LockThread(ctx, thread); err != nil {
			return err
		}
		cur, err := currentID(ctx, q, thread)
		if err != nil {
			return err
		}
		if cur != base && cur != id {
			if cur == 0 {
				return fmt.Errorf("%w: compaction %d, which this one builds on, was reverted meanwhile", errConflict, base)
			}
			return fmt.Errorf("%w: compaction %d of thread %q was applied meanwhile", errConflict, cur, thread)
		}
		n, err := apply(q)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: compaction %d is no longer running (marked failed meanwhile)", errConflict, id)
		}
		return nil
	})
}

// finishCompaction records the final figures and status of compaction id, and the requests
// its providers were sent.
func (s *Store) finishCompaction(ctx context.Context, id int64, p db.FinishCompactionParams) error {
	return s.h.WithTx(ctx, func(q db.Querier) error {
		usage, err := q.CompactionUsage(ctx, sql.NullInt64{Int64: id, Valid: true})
		if err != nil {
			return err
		}
		p.Requests, p.UpdatedAt, p.ID = usage.Requests, s.now(), id
		_, err = q.FinishCompaction(ctx, p)
		return err
	})
}

// messagesBetween reads the messages from..to of a thread, whole or light.
func (s *Store) messagesBetween(ctx context.Context, q db.Querier, thread string, from, to int64, light bool) ([]Entry, error) {
	if !light {
		rows, err := q.ListMessagesBetween(ctx, db.ListMessagesBetweenParams{ThreadID: thread, FromSeq: from, ToSeq: to})
		if err != nil {
			return nil, err
		}
		return entries(rows)
	}
	rows, err := q.ListMessageColumnsBetween(ctx, db.ListMessageColumnsBetweenParams{ThreadID: thread, FromSeq: from, ToSeq: to})
	if err != nil {
		return nil, err
	}
	return lightEntries(thread, rows)
}

// applySummary commits a summary pass of compaction id (see applyCompaction).
func (s *Store) applySummary(ctx context.Context, thread string, id, base int64, p db.ApplyCompactionParams) error {
	p.ID, p.UpdatedAt = id, s.now()
	return s.applyCompaction(ctx, thread, id, base, func(q db.Querier) (int64, error) {
		n, err := q.ApplyCompaction(ctx, p)
		return withTokens(ctx, q, id, n, err)
	},
		func(c db.Compaction) bool {
			return c.UpdatedAt == p.UpdatedAt && c.Summary == p.Summary && c.ToSeq == p.ToSeq && c.View == p.View && c.ViewSeq == p.ViewSeq
		})
}

// applyView commits a view of compaction id that no new summary made (see applyCompaction).
func (s *Store) applyView(ctx context.Context, thread string, id, base int64, p db.ApplyViewParams) error {
	p.ID, p.UpdatedAt = id, s.now()
	return s.applyCompaction(ctx, thread, id, base, func(q db.Querier) (int64, error) {
		n, err := q.ApplyView(ctx, p)
		return withTokens(ctx, q, id, n, err)
	},
		func(c db.Compaction) bool {
			return c.UpdatedAt == p.UpdatedAt && c.ToSeq == p.ToSeq && c.View == p.View && c.ViewSeq == p.ViewSeq
		})
}

// withTokens is n and err of the query that applied compaction id, after recording, when it did,
// the tokens its summary covers and those up to its view_seq (the listing of threads reads them).
func withTokens(ctx context.Context, q db.Querier, id int64, n int64, err error) (int64, error) {
	if err != nil || n == 0 {
		return n, err
	}
	return n, q.SetCompactionTokens(ctx, id)
}

// parallelReadMin is the number of messages from which a light read of a range is split into
// parts read at once, one per CPU (see readRange).
const parallelReadMin = 2048

// readChunk is how many rows a part of a long light read reads in one query (see readRange).
const readChunk = 512

// readRange reads the messages from..to of thread t, whole or light, in q's transaction. A
// long range read light (as the compactor reads) is read in parts at once: the first in q's transaction, each other one in a read
// transaction of its own, on a connection of its own. That reads the same rows as one
// snapshot would: a message never changes once appended (history is append-only), and every
// seq of from..to is at or below t's last seq as q's snapshot saw it; each part checks that
// its snapshot still holds that thread (created at the same instant, with a last seq at or
// past to), so a thread deleted, or deleted and made again, meanwhile is an error, never a mix.
func (s *Store) readRange(ctx context.Context, q db.Querier, t Thread, from, to int64, light bool) ([]Entry, error) {
	n := to - from + 1
	parts := min(int64(runtime.GOMAXPROCS(0)), n/parallelReadMin)
	if !light || parts <= 1 {
		return s.messagesBetween(ctx, q, t.ID, from, to, light)
	}
	// Each part is read into its own stretch of out, a chunk of rows at a time, each row decoded
	// as soon as it is read (db.EachMessageColumnsBetween): no slice of rows is made (sqlc's,
	// which grows by copies, allocated twice the size of the rows it held, five times for a
	// part read whole).
	out := make([]Entry, n)
	got := make([]int64, parts) // the rows part p read (as many as its seqs: a thread's seqs have no gaps)
	errs := make([]error, parts)
	read := func(q db.Querier, p int64) error {
		lo, hi := from+p*n/parts, from+(p+1)*n/parts-1
		dst := out[lo-from : hi-from+1]
		for c := lo; c <= hi; c += readChunk {
			err := db.EachMessageColumnsBetween(ctx, q, db.ListMessageColumnsBetweenParams{
				ThreadID: t.ID, FromSeq: c, ToSeq: min(c+readChunk-1, hi)}, func(r db.ListMessageColumnsBetweenRow) error {
				if got[p] >= int64(len(dst)) {
					return fmt.Errorf("thread %q: more messages than seqs from %d to %d", t.ID, lo, hi)
				}
				e, err := lightEntry(db.ListMessageColumnsAfterRow(r))
				if err != nil {
					return fmt.Errorf("thread %q: %w", t.ID, err)
				}
				dst[got[p]] = e
				got[p]++
				return nil
			})
			if err != nil {
				return err
			}
		}
		return nil
	}
	var wg sync.WaitGroup
	for p := int64(1); p < parts; p++ { // the first part is read below, in q's transaction
		wg.Go(func() {
			errs[p] = s.h.ReadTx(ctx, func(q db.Querier) error {
				r, err := q.GetThread(ctx, t.ID)
				if err == nil && (r.CreatedAt != t.CreatedAt.UnixMilli() || r.LastSeq < from+(p+1)*n/parts-1) {
					err = sql.ErrNoRows
				}
				if errors.Is(err, sql.ErrNoRows) {
					return fmt.Errorf("%w: %q changed while its messages were read", ErrThreadNotFound, t.ID)
				}
				if err != nil {
					return err
				}
				return read(q, p)
			})
		})
	}
	errs[0] = read(q, 0)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	// Were a part short of its seqs, the parts close up.
	at := got[0]
	for p := int64(1); p < parts; p++ {
		start := p * n / parts
		at += int64(copy(out[at:], out[start:start+got[p]]))
	}
	return out[:at], nil
}
