package db

import (
	"context"
	"database/sql"
	"errors"
)

// Prewarm opens n connections of the pool at once and runs on each, in a read-only
// transaction, the reads a thread's first turn through memctl serve makes (of a thread id
// that names nothing), then gives them all back to the pool, which keeps them idle (up to its
// bound of idle connections, until they have been idle for its idle time). What the first
// requests of a burst would each pay, one after another (on SQLite: about 1.3 ms of CPU a
// connection, its pragmas, the schema parsed and the queries prepared on it), is paid once,
// before serving. A connection that fails to open or read is reported; the others are kept.
func (h *Handle) Prewarm(ctx context.Context, n int) error {
	conns := make([]*sql.Conn, 0, n)
	defer func() {
		for _, c := range conns {
			c.Close() // back to the pool, idle
		}
	}()
	var errs []error
	// Each connection is held until all are open: one given back would be taken again.
	for range n {
		c, err := h.DB.Conn(ctx)
		if err != nil {
			errs = append(errs, err)
			break
		}
		conns = append(conns, c)
	}
	for _, c := range conns {
		errs = append(errs, h.warm(ctx, c))
	}
	return errors.Join(errs...)
}

// warm runs the first turn's reads on connection c (see Prewarm).
func (h *Handle) warm(ctx context.Context, c *sql.Conn) error {
	tx, err := c.BeginTx(ctx, h.ops.Read)
	if err != nil {
		return err
	}
	defer tx.Rollback()
	q := h.ops.Bind(h.q, tx)
	const none = "" // never a thread's id
	if _, err := q.ThreadVersion(ctx, none); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if _, err := q.GetThread(ctx, none); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if _, err := q.CurrentCompaction(ctx, none); err != nil && !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	if _, err := q.ListMessages(ctx, none); err != nil {
		return err
	}
	if _, err := q.ListPins(ctx, none); err != nil {
		return err
	}
	return tx.Commit()
}
