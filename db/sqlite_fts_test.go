package db

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"
)

// TestMigrateV11IndexedFully: a database of schema version 11, whose messages were indexed
// by their appends, is brought to version 12 marked as indexed whole: nothing is indexed twice,
// a message appended after is indexed by IndexPending, and deleting every message brings the
// mark back down.
func TestMigrateV11IndexedFully(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	v11, err := openWithMigrations(ctx, path, sqliteMigrations[:11])
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO threads (id, model, encoding, created_at, updated_at) VALUES ('t', 'gpt-4o', 'o200k_base', 1, 1)`,
		`INSERT INTO messages (thread_id, seq, role, content, raw, tokens, created_at) VALUES
		 ('t', 1, 'user', 'alpha one', '{}', 1, 1), ('t', 2, 'assistant', 'alpha two', '{}', 1, 1), ('t', 3, 'user', 'beta', '{}', 1, 1)`,
		`INSERT INTO messages_fts (rowid, body) SELECT id, body FROM messages_text`,
	} {
		if _, err := v11.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	v11.Close()
	h, err := OpenHandle(ctx, path, Options{NoIndexer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mark := func() int64 {
		t.Helper()
		var n int64
		if err := h.DB.QueryRowContext(ctx, "SELECT indexed_id FROM fts_state").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	sound := func(when string) {
		t.Helper()
		if _, err := h.DB.ExecContext(ctx, "INSERT INTO messages_fts (messages_fts, rank) VALUES ('integrity-check', 1)"); err != nil {
			t.Fatalf("full-text index %s: %v", when, err)
		}
	}
	hits := func(word string) int {
		t.Helper()
		var n int
		if err := h.DB.QueryRowContext(ctx, "SELECT count(*) FROM messages_fts WHERE messages_fts MATCH ?", word).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if got := mark(); got != 3 {
		t.Fatalf("indexed_id after migrating: %d, want 3 (every message indexed)", got)
	}
	if err := h.IndexPending(ctx); err != nil {
		t.Fatal(err)
	}
	sound("after migrating")
	if n := hits("alpha"); n != 2 {
		t.Fatalf("alpha: %d hits, want 2", n)
	}
	err = h.WithTx(ctx, func(q Querier) error {
		return q.InsertMessage(ctx, InsertMessageParams{ThreadID: "t", Seq: 4, Role: "user", Content: sql.NullString{String: "alpha gamma", Valid: true}, Raw: "{}", Tokens: 1, CreatedAt: 2})
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := hits("gamma"); n != 0 {
		t.Fatalf("gamma indexed in the append's transaction: %d hits", n)
	}
	if err := h.IndexPending(ctx); err != nil {
		t.Fatal(err)
	}
	if n, m := hits("gamma"), mark(); n != 1 || m != 4 {
		t.Fatalf("after IndexPending: gamma %d hits, indexed_id %d; want 1, 4", n, m)
	}
	sound("after indexing")
	if _, err := h.DB.ExecContext(ctx, "DELETE FROM threads WHERE id = 't'"); err != nil {
		t.Fatal(err)
	}
	if m := mark(); m != 0 {
		t.Fatalf("indexed_id with no message left: %d, want 0", m)
	}
	sound("after deleting")
}

// TestIndexPendingBatches: messages more than a batch are indexed in several transactions, each
// moving the mark, none twice.
func TestIndexPendingBatches(t *testing.T) {
	ctx := context.Background()
	h, err := OpenHandle(ctx, filepath.Join(t.TempDir(), "m.db"), Options{NoIndexer: true})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	const n = 2*ftsBatch + 7
	err = h.WithTx(ctx, func(q Querier) error {
		if _, err := q.InsertThread(ctx, InsertThreadParams{ID: "t", Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}", Settings: "{}"}); err != nil {
			return err
		}
		for i := range n {
			if err := q.InsertMessage(ctx, InsertMessageParams{ThreadID: "t", Seq: int64(i + 1), Role: "user", Content: sql.NullString{String: "word", Valid: true}, Raw: "{}", Tokens: 1}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	tx, err := h.DB.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	more, err := sqliteIndexBatch(ctx, tx)
	if err != nil || !more {
		t.Fatalf("first batch: more %v, %v; want more", more, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var mark, hits int64
	if err := h.DB.QueryRowContext(ctx, "SELECT indexed_id, (SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'word') FROM fts_state").Scan(&mark, &hits); err != nil {
		t.Fatal(err)
	}
	if mark != ftsBatch || hits != ftsBatch {
		t.Fatalf("after one batch: indexed_id %d, %d hits; want %d, %d", mark, hits, ftsBatch, ftsBatch)
	}
	if err := h.IndexPending(ctx); err != nil {
		t.Fatal(err)
	}
	if err := h.DB.QueryRowContext(ctx, "SELECT indexed_id, (SELECT count(*) FROM messages_fts WHERE messages_fts MATCH 'word') FROM fts_state").Scan(&mark, &hits); err != nil {
		t.Fatal(err)
	}
	if mark != n || hits != n {
		t.Fatalf("after IndexPending: indexed_id %d, %d hits; want %d, %d", mark, hits, n, n)
	}
	if err := h.Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestIndexerAfterCommits: the handle's indexer indexes, at its open, what an earlier process
// committed and left unindexed (it ended first), then what is appended a while after the
// commits, the commits of a burst in one pass; Close stops it.
func TestIndexerAfterCommits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	crashed, err := OpenHandle(ctx, path, Options{NoIndexer: true})
	if err != nil {
		t.Fatal(err)
	}
	err = crashed.WithTx(ctx, func(q Querier) error {
		if _, err := q.InsertThread(ctx, InsertThreadParams{ID: "t", Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}", Settings: "{}"}); err != nil {
			return err
		}
		return q.InsertMessage(ctx, InsertMessageParams{ThreadID: "t", Seq: 1, Role: "user", Content: sql.NullString{String: "word", Valid: true}, Raw: "{}", Tokens: 1})
	})
	if err != nil {
		t.Fatal(err)
	}
	crashed.Close()
	sqldb, err := openSQLitePool(ctx, path, sqliteMigrations, Options{}, true)
	if err != nil {
		t.Fatal(err)
	}
	ticks := make(chan time.Time)
	waits := make(chan struct{}, 16)
	passes := make(chan error, 16)
	after := func(time.Duration) <-chan time.Time { waits <- struct{}{}; return ticks }
	h, err := newHandle(ctx, sqldb, "sqlite", path, sqliteOps, after, func(err error) { passes <- err })
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	mark := func() int64 {
		t.Helper()
		var n int64
		if err := h.DB.QueryRowContext(ctx, "SELECT indexed_id FROM fts_state").Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	// The pass of the open: what the earlier process left.
	<-waits
	if m := mark(); m != 0 {
		t.Fatalf("indexed_id %d at the open, want 0", m)
	}
	ticks <- time.Now()
	if err := <-passes; err != nil {
		t.Fatal(err)
	}
	if m := mark(); m != 1 {
		t.Fatalf("indexed_id %d after the open's pass, want 1", m)
	}
	for i := range 3 { // a burst: three commits
		err := h.WithTx(ctx, func(q Querier) error {
			return q.InsertMessage(ctx, InsertMessageParams{ThreadID: "t", Seq: int64(i + 2), Role: "user", Content: sql.NullString{String: "word", Valid: true}, Raw: "{}", Tokens: 1})
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	<-waits
	if m := mark(); m != 1 {
		t.Fatalf("indexed_id %d before the indexer's delay ended, want 1", m)
	}
	ticks <- time.Now()
	if err := <-passes; err != nil {
		t.Fatal(err)
	}
	if m := mark(); m != 4 {
		t.Fatalf("indexed_id %d after the indexer's pass, want 4", m)
	}
	// Its own commit does not wake it again: no pass waits.
	select {
	case <-waits:
		t.Fatal("the indexer's own commit woke it")
	default:
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}
