package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/memcascade/memcascade/db"
)

// Pipelined transactions (db.Ops.Pipelined, db.Handle.AppendTx). An append made a round trip
// to the server for each statement: BEGIN, the thread's lock, each message, the thread's
// tail, its version read back, COMMIT; two appends a turn of memctl serve, 14 round trips, and
// the server's processes spent more CPU on them (1.8 ms a turn under 50 agents) than on
// pgbench's pair of single-row INSERT transactions (0.27 ms). Here the statements that return
// nothing the caller reads (InsertMessage, SetThreadTail, AddReplyUsage) are queued, and sent
// with the next statement that reads (as one pipeline: pgx's batch) or with the COMMIT; BEGIN
// goes with the first statement. The thread's version (ThreadVersion) is read with its lock,
// in the same pipeline, and the version an append reads back after its writes is that one
// with its queued tail applied (see LockThread): no round trip. An append is then two round
// trips: BEGIN with the lock and the version, and the writes with the COMMIT.
//
// What it changes for the caller: a queued statement's error is returned by the statement
// sent with it that reads, or by the commit, not by its own call; the transaction is rolled
// back all the same, and the error names the statement (its query name).

// pipelined runs fn in a READ COMMITTED transaction whose writes are pipelined (see above).
// It runs fn once: the caller retries (db.Handle.AppendTx).
func pipelined(ctx context.Context, sqldb *sql.DB, fn func(q db.Querier) error) (err error) {
	conn, err := sqldb.Conn(ctx)
	if err != nil {
		return err
	}
	// The driver's connection is used past Raw's callback: this function holds conn, which
	// database/sql gives no one else until it is closed, and uses it one call at a time.
	var pc *pgx.Conn
	if err := conn.Raw(func(dc any) error {
		c, ok := dc.(*stdlib.Conn)
		if !ok {
			return fmt.Errorf("pipelined transaction: a connection of %T, not pgx's", dc)
		}
		pc = c.Conn()
		return nil
	}); err != nil {
		conn.Close()
		return err
	}
	p := &pipe{pc: pc}
	// The queries not pipelined run on the same connection, in the transaction, once what is
	// queued before them is sent (flushing).
	p.Querier = queries(New(flushing{conn: conn, p: p}))
	p.queue("begin", "begin isolation level read committed", nil, nil)
	committed := false
	defer func() {
		if !committed { // an error, or a panic of fn: the transaction is not left open
			p.pending = p.pending[:0]
			if pc.PgConn().IsClosed() || IsConnLost(err) {
				// The connection is not given back to the pool.
				_ = conn.Raw(func(any) error { return driver.ErrBadConn })
			} else if pc.PgConn().TxStatus() != 'I' || err == nil {
				if _, rerr := pc.Exec(context.WithoutCancel(ctx), "rollback"); rerr != nil {
					_ = conn.Raw(func(any) error { return driver.ErrBadConn })
				}
			}
		}
		conn.Close()
	}()
	if err := fn(p); err != nil {
		if p.err != nil {
			return p.err // the first failure: what fn saw after it came of it
		}
		return err
	}
	if p.err != nil {
		return p.err
	}
	p.queue("commit", "commit", nil, nil)
	if err := p.flush(ctx); err != nil {
		var pe *pgconn.PgError
		if !errors.As(err, &pe) {
			return &db.CommitError{Err: err} // lost during the COMMIT: committed or not
		}
		return err
	}
	committed = true
	return nil
}

// pipe is the Querier of a pipelined transaction: the queries it names below are pipelined,
// the others are the package's (Querier), run once what is queued is sent.
type pipe struct {
	db.Querier
	pc      *pgx.Conn
	pending []queued
	err     error // the first error of what was sent: the transaction is aborted
	// locked is the version of the thread locked last (LockThread), read with its lock, with
	// the tail queued since applied; nil when none is known, or once a statement that is not
	// pipelined has run (it may have written what the version is made of).
	locked *lockedVersion
	sent   int // the pipelines sent (for the tests)
}

// lockedVersion is the version of thread id read with its lock (pipe.locked).
type lockedVersion struct {
	id string
	v  db.ThreadVersionRow
}

// queued is a statement waiting to be sent: name names it in its error; read, when set, reads
// its row (the statement's own error, sql.ErrNoRows among them, is read's to return); usage,
// when set, is what an AddReplyUsage queued was called with (see SetThreadTail).
type queued struct {
	name, sql string
	args      []any
	read      func(pgx.Row) error
	usage     *db.AddReplyUsageParams
}

func (p *pipe) queue(name, sql string, args []any, read func(pgx.Row) error) {
	p.pending = append(p.pending, queued{name: name, sql: sql, args: args, read: read})
}

// flush sends what is queued as one pipeline and reads the results, in order. It returns the
// error of the first statement that failed, naming it; a statement that reads returns its own
// error (sql.ErrNoRows, not a failure, among them) to its caller through read.
func (p *pipe) flush(ctx context.Context) error {
	if p.err != nil {
		return p.err
	}
	if len(p.pending) == 0 {
		return nil
	}
	var b pgx.Batch
	for _, q := range p.pending {
		b.Queue(q.sql, q.args...)
	}
	sent := p.pending
	p.pending = p.pending[:0:0]
	br := p.pc.SendBatch(ctx, &b)
	p.sent++
	var readErr error
	for _, q := range sent {
		var err error
		if q.read != nil {
			err = q.read(br.QueryRow())
			if errors.Is(err, pgx.ErrNoRows) || errors.Is(err, sql.ErrNoRows) {
				readErr, err = sql.ErrNoRows, nil // found nothing: not a failure
			}
		} else {
			_, err = br.Exec()
		}
		if err != nil {
			p.err = fmt.Errorf("%s: %w", q.name, err)
			break
		}
	}
	if err := br.Close(); err != nil && p.err == nil {
		p.err = err
	}
	if p.err != nil {
		return p.err
	}
	return readErr
}

// flushing is the connection the queries that are not pipelined run on: what is queued is
// sent first, and the version read with the thread's lock is forgotten (the query may write).
type flushing struct {
	conn *sql.Conn
	p    *pipe
}

func (f flushing) ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error) {
	f.p.locked = nil
	if err := f.p.flush(ctx); err != nil {
		return nil, err
	}
	return f.conn.ExecContext(ctx, query, args...)
}

func (f flushing) PrepareContext(ctx context.Context, query string) (*sql.Stmt, error) {
	f.p.locked = nil
	if err := f.p.flush(ctx); err != nil {
		return nil, err
	}
	return f.conn.PrepareContext(ctx, query)
}

func (f flushing) QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error) {
	f.p.locked = nil
	if err := f.p.flush(ctx); err != nil {
		return nil, err
	}
	return f.conn.QueryContext(ctx, query, args...)
}

// QueryRowContext runs the query once what is queued is sent. When that failed, the query is
// run all the same, in the aborted transaction (a *sql.Row cannot be made with an error of
// one's own): it fails, and the transaction returns the first failure (pipelined).
func (f flushing) QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row {
	f.p.locked = nil
	_ = f.p.flush(ctx)
	return f.conn.QueryRowContext(ctx, query, args...)
}

// The pipelined queries.

// LockThread is sent at once, with what is queued (BEGIN, in an append), and with the thread's
// version (ThreadVersion), read once the row is locked and kept for ThreadVersion until a
// statement that is not pipelined runs. While the row is locked, the writers that lock it
// first (appends, a compaction applied, the thread's settings), and a pin (its foreign key
// locks the row), cannot change the version; the others (a revert, an unpin, a compaction's final
// figures) may commit before this transaction does, unseen, as they could between a read after
// the writes and the COMMIT: the next append finds its version stale.
func (p *pipe) LockThread(ctx context.Context, id string) (db.Thread, error) {
	var t db.Thread
	p.locked = nil
	if !db.Storable(id) {
		return t, sql.ErrNoRows // no row has such an id (storable)
	}
	p.queue("LockThread", lockThread, []any{id}, func(row pgx.Row) error {
		return row.Scan(&t.ID, &t.Model, &t.Encoding, &t.Metadata, &t.LastSeq, &t.OpenCalls, &t.CreatedAt, &t.UpdatedAt,
			&t.Settings, &t.Replies, &t.PromptTokens, &t.CachedTokens, &t.UpstreamCostMicros, &t.MessageTokens)
	})
	var v db.ThreadVersionRow
	found := false
	p.queue("ThreadVersion", threadVersion, []any{id}, func(row pgx.Row) error {
		err := scanVersion(row, &v)
		if errors.Is(err, pgx.ErrNoRows) {
			return nil // no thread: LockThread says so
		}
		found = err == nil
		return err
	})
	if err := p.flush(ctx); err != nil {
		return t, err
	}
	if found {
		p.locked = &lockedVersion{id: id, v: v}
	}
	return t, nil
}

// ThreadVersion returns the version read with the thread's lock when it is known (see
// LockThread), the tail queued since applied; else it is sent at once, with what is queued.
func (p *pipe) ThreadVersion(ctx context.Context, id string) (db.ThreadVersionRow, error) {
	var v db.ThreadVersionRow
	if p.err != nil {
		return v, p.err
	}
	if p.locked != nil && p.locked.id == id {
		return p.locked.v, nil
	}
	if !db.Storable(id) {
		return v, sql.ErrNoRows
	}
	p.queue("ThreadVersion", threadVersion, []any{id}, func(row pgx.Row) error { return scanVersion(row, &v) })
	return v, p.flush(ctx)
}

func scanVersion(row pgx.Row, v *db.ThreadVersionRow) error {
	return row.Scan(&v.CreatedAt, &v.UpdatedAt, &v.LastSeq, &v.Settings, &v.CompactionID, &v.CompactionUpdatedAt, &v.Pins)
}

// InsertMessage is queued.
func (p *pipe) InsertMessage(_ context.Context, arg db.InsertMessageParams) error {
	p.queue("InsertMessage", insertMessage, []any{arg.ThreadID, arg.Seq, arg.Role, arg.Content, arg.Name, arg.ToolCalls,
		arg.ToolCallID, arg.Raw, arg.Tokens, arg.CreatedAt}, nil)
	return nil
}

// SetThreadTail is queued; the version read with the thread's lock gets its tail. Queued right
// after an AddReplyUsage of the same thread (an append that stores a reply), it takes that
// statement's place: both are sent as one UPDATE (SetThreadTailAndUsage), which saves the
// server a statement and a version of the row (a statement costs a backend about 12 us of CPU
// whatever it does, see docs/postgres.md).
func (p *pipe) SetThreadTail(_ context.Context, arg db.SetThreadTailParams) error {
	if n := len(p.pending); n > 0 && p.pending[n-1].usage != nil && p.pending[n-1].usage.ID == arg.ID {
		u := p.pending[n-1].usage
		p.pending[n-1] = queued{name: "AddReplyUsage and SetThreadTail", sql: setThreadTailAndUsage,
			args: []any{arg.LastSeq, arg.OpenCalls, arg.UpdatedAt, u.PromptTokens, u.CachedTokens, u.CostMicros, arg.ID}}
	} else {
		p.queue("SetThreadTail", setThreadTail, []any{arg.LastSeq, arg.OpenCalls, arg.UpdatedAt, arg.ID}, nil)
	}
	if p.locked != nil && p.locked.id == arg.ID {
		p.locked.v.LastSeq, p.locked.v.UpdatedAt = arg.LastSeq, arg.UpdatedAt
	}
	return nil
}

// AddReplyUsage is queued (and sent with the SetThreadTail queued next, if any: see there).
func (p *pipe) AddReplyUsage(_ context.Context, arg db.AddReplyUsageParams) error {
	p.queue("AddReplyUsage", addReplyUsage, []any{arg.PromptTokens, arg.CachedTokens, arg.CostMicros, arg.ID}, nil)
	p.pending[len(p.pending)-1].usage = &arg
	return nil
}
