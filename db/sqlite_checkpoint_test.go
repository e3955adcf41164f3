package db

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"
)

// TestCheckpointAfterCommits: the commits' pages reach the database file by the handle's
// checkpointer while it is open (SQLite's own checkpoint at 1,000 pages is off, and 2 MB
// written is under it anyway), and the handle closes with the checkpointer stopped.
func TestCheckpointAfterCommits(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "c.db")
	h, err := openSQLite(ctx, path, Options{})
	if err != nil {
		t.Fatal(err)
	}
	size := func() int64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	before := size()
	text := strings.Repeat("a checkpointed word ", 1000) // 20 KB a message
	for tx := range 10 {
		err := h.WithTx(ctx, func(q Querier) error {
			if tx == 0 {
				if _, err := q.InsertThread(ctx, InsertThreadParams{ID: "t", Model: "m", Encoding: "o200k_base", Metadata: "{}", Settings: "{}", CreatedAt: 1, UpdatedAt: 1}); err != nil {
					return err
				}
			}
			for i := range 10 {
				seq := int64(tx*10 + i + 1)
				if err := q.InsertMessage(ctx, InsertMessageParams{ThreadID: "t", Seq: seq, Role: "user",
					Content: sql.NullString{String: text, Valid: true}, Raw: fmt.Sprintf(`{"role":"user","content":%q}`, text), Tokens: 1, CreatedAt: seq}); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for size() < before+1<<20 {
		if time.Now().After(deadline) {
			t.Fatalf("the database file is %d bytes 10 s after 2 MB were committed (%d before): nothing was checkpointed", size(), before)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err := h.Close(); err != nil {
		t.Fatal(err)
	}
}

// TestHandleCheckpoint: Handle.Checkpoint moves what was committed into the database file at
// once, through the backend's checkpoint, and does nothing on a backend without one. The
// writes go through the pool, not the handle, so its checkpointer is never woken.
func TestHandleCheckpoint(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "h.db")
	sqldb, err := openSQLitePool(ctx, path, sqliteMigrations, Options{}, true)
	if err != nil {
		t.Fatal(err)
	}
	calls := 0
	ops := sqliteOps
	ops.Checkpoint = func(ctx context.Context, sqldb *sql.DB) error {
		calls++
		return sqliteOps.Checkpoint(ctx, sqldb)
	}
	h, err := newHandle(ctx, sqldb, "sqlite", path, ops, time.After, func(error) {})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	size := func() int64 {
		st, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		return st.Size()
	}
	if _, err := sqldb.ExecContext(ctx, "CREATE TABLE bulk (b BLOB)"); err != nil {
		t.Fatal(err)
	}
	before := size()
	if _, err := sqldb.ExecContext(ctx, "INSERT INTO bulk VALUES (randomblob(2000000))"); err != nil {
		t.Fatal(err)
	}
	if size() >= before+1<<20 {
		t.Fatalf("the database file grew to %d bytes (%d before) before a checkpoint", size(), before)
	}
	if err := h.Checkpoint(ctx); err != nil {
		t.Fatal(err)
	}
	if size() < before+1<<20 || calls != 1 {
		t.Fatalf("after Checkpoint the database file is %d bytes (%d before), %d checkpoints", size(), before, calls)
	}
	none := &Handle{ops: Ops{}}
	if err := none.Checkpoint(ctx); err != nil {
		t.Fatalf("a backend without checkpoints: %v", err)
	}
}
