package db

import (
	"context"
	"database/sql"
)

// SQLite indexes new messages for search after the commit that appends them (see schema.sql,
// fts_state): the Handle's indexer and its IndexPending run these.

// ftsBatch is the most messages one indexing transaction adds: a transaction holds the
// database's one write lock, so appends wait for it; each message's indexed text is at most
// 100,000 characters (messages_text).
const ftsBatch = 256

// sqlitePending returns the number of messages committed and not yet indexed (a range of
// rowids above the mark: what is pending is read, not the table).
func sqlitePending(ctx context.Context, sqldb *sql.DB) (int64, error) {
	var n int64
	err := sqldb.QueryRowContext(ctx,
		"SELECT count(*) FROM messages WHERE id > (SELECT indexed_id FROM fts_state)").Scan(&n)
	return n, err
}

// sqliteIndexBatch indexes, in tx, the first ftsBatch messages not yet indexed and moves the
// watermark past them. more: messages may be left.
func sqliteIndexBatch(ctx context.Context, tx *sql.Tx) (more bool, err error) {
	var from int64
	if err := tx.QueryRowContext(ctx, "SELECT indexed_id FROM fts_state").Scan(&from); err != nil {
		return false, err
	}
	var n int
	var to sql.NullInt64
	err = tx.QueryRowContext(ctx, "SELECT count(*), max(id) FROM (SELECT id FROM messages WHERE id > ? ORDER BY id LIMIT ?)",
		from, ftsBatch).Scan(&n, &to)
	if err != nil || n == 0 {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, "INSERT INTO messages_fts (rowid, body) SELECT id, body FROM messages_text WHERE id > ? AND id <= ?",
		from, to.Int64); err != nil {
		return false, err
	}
	if _, err := tx.ExecContext(ctx, "UPDATE fts_state SET indexed_id = ?", to.Int64); err != nil {
		return false, err
	}
	return n == ftsBatch, nil
}
