package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"

	"github.com/memcascade/memcascade/db"
)

// The compaction rows, as the compactor writes them: inserted running (holding a lease) or
// ineffective, applied (a summary, a view, or both) in a transaction that checks no other
// compaction was applied meanwhile, then finished with the final figures.

// newCompaction is a compaction row as it starts.
type newCompaction struct {
	thread    string
	status    Status // running or ineffective
	reason    Reason
	strategy  string
	base      int64 // the compaction current when it was planned (0: none)
	lastSeq   int64
	settings  Settings
	rep       Report
	withLease bool
}

// insertCompaction records a compaction row and returns its id.
func (s *Store) insertCompaction(ctx context.Context, n newCompaction) (int64, error) {
	var id int64
	err := s.h.WithTx(ctx, func(q db.Querier) error {
		now := s.now()
		var err error
		id, err = q.InsertCompaction(ctx, db.InsertCompactionParams{
			ThreadID: n.thread, Status: string(n.status), Reason: string(n.reason), Strategy: n.strategy,
			BaseID:  sql.NullInt64{Int64: n.base, Valid: n.base != 0},
			LastSeq: n.lastSeq, TokenLimit: int64(n.settings.TokenLimit), ReserveTokens: int64(n.settings.ReserveTokens),
			TargetRatio: n.settings.TargetRatio, TriggerRatio: n.settings.TriggerRatio,
			TokensBefore: int64(n.rep.TokensBefore), TokensAfter: int64(n.rep.TokensAfter),
			MessagesBefore: int64(n.rep.MessagesBefore), MessagesAfter: int64(n.rep.MessagesAfter),
			KeptMessages: int64(n.rep.KeptMessages),
			OwnerHost:    owner(), OwnerPid: int64(os.Getpid()), LeaseUntil: now + s.lease().Milliseconds(),
			Error: n.rep.Error, Detail: n.rep.Detail, CreatedAt: now, UpdatedAt: now,
		})
		return err
	})
	return id, err
}

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
				return fmt.Errorf("%w: compaction %d, which this one builds on, was reverted meanwhile", ErrConflict, base)
			}
			return fmt.Errorf("%w: compaction %d of thread %q was applied meanwhile", ErrConflict, cur, thread)
		}
		n, err := apply(q)
		if err != nil {
			return err
		}
		if n == 0 {
			return fmt.Errorf("%w: compaction %d is no longer running (marked failed meanwhile)", ErrConflict, id)
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

// latestSettled returns the newest applied or ineffective compaction of a thread (ok false:
// none).
func (s *Store) latestSettled(ctx context.Context, thread string) (c db.Compaction, ok bool, err error) {
	c, err = s.h.Q().LatestSettledCompaction(ctx, thread)
	if errors.Is(err, sql.ErrNoRows) {
		return c, false, nil
	}
	return c, err == nil, err
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
	return s.applyCompaction(ctx, thread, id, base, func(q db.Querier) (int64, error) { return q.ApplyCompaction(ctx, p) },
		func(c db.Compaction) bool {
			return c.UpdatedAt == p.UpdatedAt && c.Summary == p.Summary && c.ToSeq == p.ToSeq && c.View == p.View && c.ViewSeq == p.ViewSeq
		})
}

// applyView commits a view of compaction id that no new summary made (see applyCompaction).
func (s *Store) applyView(ctx context.Context, thread string, id, base int64, p db.ApplyViewParams) error {
	p.ID, p.UpdatedAt = id, s.now()
	return s.applyCompaction(ctx, thread, id, base, func(q db.Querier) (int64, error) { return q.ApplyView(ctx, p) },
		func(c db.Compaction) bool {
			return c.UpdatedAt == p.UpdatedAt && c.ToSeq == p.ToSeq && c.View == p.View && c.ViewSeq == p.ViewSeq
		})
}
