package memory

import (
	"context"
	"errors"
	"sync"

	"github.com/memcascade/memcascade/db"
)

// Group commit. On a database with one writer at a time (SQLite), the appends of concurrent
// callers (live appends, AppendOptions.Live: the turns of many agents at once through memctl
// serve) queue for the write lock, and each paid for a transaction of its own: its begin, its commit and the write
// of its pages to the log. They are made instead in batches: a caller that finds no batch
// running runs one itself, of every append waiting (up to maxBatch), in one transaction, each
// within a savepoint: an append that fails (an invalid message, a stale version) has what it
// wrote rolled back, alone, and the others commit together. The appends that came meanwhile
// are the next batch, run by a goroutine of its own. A caller learns its outcome once the
// transaction is committed; one that finds no other waits for nothing. On PostgreSQL each
// append is its own transaction, as writers there do not queue.

// maxBatch bounds the appends of one transaction.
const maxBatch = 64

// batcher is the store's group commit (see above).
type batcher struct {
	mu      sync.Mutex
	queue   []*batchJob
	running bool // a batch is running: what is queued will be run after it
	closed  bool
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
		// Its writes pipelined where the backend can (PostgreSQL: db.Handle.AppendTx).
		return s.h.AppendTx(ctx, func(q db.Querier) error { return fn(ctx, q) })
	}
	b := &s.batch
	j := &batchJob{ctx: ctx, fn: fn, done: make(chan error, 1)}
	b.mu.Lock()
	if b.closed {
		b.mu.Unlock()
		return errStoreClosed
	}
	b.queue = append(b.queue, j)
	lead := !b.running
	b.running = true
	b.mu.Unlock()
	if lead && s.runBatch() {
		go func() {
			for s.runBatch() {
			}
		}()
	}
	return <-j.done // once queued it may be committed: its outcome is awaited
}

// runBatch runs the appends queued (up to maxBatch) in one transaction and gives each its
// outcome. It reports whether more are queued, to run next; when none is, no batch runs.
func (s *Store) runBatch() (more bool) {
	b := &s.batch
	b.mu.Lock()
	batch := b.queue[:min(len(b.queue), maxBatch)]
	b.queue = b.queue[len(batch):]
	b.mu.Unlock()
	var run []*batchJob
	for _, j := range batch {
		if err := j.ctx.Err(); err != nil {
			j.done <- err // its caller left before it was written
			continue
		}
		run = append(run, j)
	}
	if len(run) > 0 {
		ctx := context.Background()
		fns := make([]func(db.Querier) error, len(run))
		for i, j := range run {
			fns[i] = func(q db.Querier) error { return j.fn(ctx, q) }
		}
		// What the appends wrote is indexed for search after the commit (db.Handle's indexer).
		errs, err := s.h.Batch(ctx, fns, nil)
		for i, j := range run {
			if err != nil {
				j.done <- err
			} else {
				j.done <- errs[i]
			}
		}
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if len(b.queue) == 0 {
		b.running = false
		return false
	}
	return true
}

// stopBatches refuses the appends that come after Close.
func (s *Store) stopBatches() {
	s.batch.mu.Lock()
	s.batch.closed = true
	s.batch.mu.Unlock()
}
