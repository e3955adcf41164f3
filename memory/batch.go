package memory

import (
	"context"
	"errors"
	"sync"

	"github.com/memcascade/memcascade/db"
)

// Group commit. On a database with one writer at a time (SQLite), the appends of concurrent
// callers (AppendLive: the turns of many agents at once through memctl serve) queue for the
// write lock, and each paid for a transaction of its own: its begin, its commit and the write
// of its pages to the log. They are made instead by one goroutine of the store, which takes
// every append waiting when it starts a transaction (up to maxBatch) and runs them in one,
// each within a savepoint: an append that fails (an invalid message, a stale version) has
// what it wrote rolled back, alone, and the others commit together. A caller learns its
// outcome once the transaction is committed. On PostgreSQL each append is its own
// transaction, as writers there do not queue.

// maxBatch bounds the appends of one transaction.
const maxBatch = 64

// batcher is the store's group commit (see above).
type batcher struct {
	once sync.Once
	jobs chan *batchJob
	quit chan struct{}
	stop sync.Once
}

// batchJob is an append waiting for its transaction: fn writes it through q, with the
// transaction's context (never its caller's, whose end would interrupt the transaction of
// every append in it).
type batchJob struct {
	ctx  context.Context
	fn   func(ctx context.Context, q db.Querier) error
	done chan error
}

// errStoreClosed is the error of an append after Close.
var errStoreClosed = errors.New("the store is closed")

// writeTx runs fn in a write transaction whose first statement locks the thread (LockedTx):
// with the appends of other callers in one transaction on a one-writer database (see above),
// in a transaction of its own elsewhere.
func (s *Store) writeTx(ctx context.Context, fn func(ctx context.Context, q db.Querier) error) error {
	if !s.h.OneWriter() {
		return s.h.LockedTx(ctx, func(q db.Querier) error { return fn(ctx, q) })
	}
	b := &s.batch
	b.once.Do(func() {
		b.jobs, b.quit = make(chan *batchJob, maxBatch), make(chan struct{})
		go s.writeBatches()
	})
	j := &batchJob{ctx: ctx, fn: fn, done: make(chan error, 1)}
	select {
	case b.jobs <- j:
	case <-b.quit:
		return errStoreClosed
	case <-ctx.Done():
		return ctx.Err()
	}
	return <-j.done // once queued it may be committed: its outcome is awaited
}

// writeBatches runs the queued appends, those waiting together in one transaction, until the
// store is closed.
func (s *Store) writeBatches() {
	b := &s.batch
	for {
		var batch []*batchJob
		select {
		case j := <-b.jobs:
			batch = append(batch, j)
		case <-b.quit:
			for {
				select {
				case j := <-b.jobs:
					j.done <- errStoreClosed
				default:
					return
				}
			}
		}
	more:
		for len(batch) < maxBatch {
			select {
			case j := <-b.jobs:
				batch = append(batch, j)
			default:
				break more
			}
		}
		var run []*batchJob
		for _, j := range batch {
			if err := j.ctx.Err(); err != nil {
				j.done <- err // its caller left before it was written
				continue
			}
			run = append(run, j)
		}
		if len(run) == 0 {
			continue
		}
		ctx := context.Background()
		fns := make([]func(db.Querier) error, len(run))
		for i, j := range run {
			fns[i] = func(q db.Querier) error { return j.fn(ctx, q) }
		}
		errs, err := s.h.Batch(ctx, fns)
		for i, j := range run {
			if err != nil {
				j.done <- err
			} else {
				j.done <- errs[i]
			}
		}
	}
}

// stopBatches ends the group commit's goroutine (Close).
func (s *Store) stopBatches() {
	b := &s.batch
	b.stop.Do(func() {
		b.once.Do(func() {}) // none started: none will
		if b.quit != nil {
			close(b.quit)
		}
	})
}
