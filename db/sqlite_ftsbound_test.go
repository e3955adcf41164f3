package db

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
)

// TestMigrateFTSBound: a database at version 8 whose full-text index holds all of a long
// message is brought to version 9: the index then holds its first 100,000 characters, as
// PostgreSQL's does (a word past them is no longer found, one before is), deleting the message
// leaves the index consistent, and the database checks clean.
func TestMigrateFTSBound(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	v8, err := openWithMigrations(ctx, path, sqliteMigrations[:8])
	if err != nil {
		t.Fatal(err)
	}
	long := `"early ` + strings.Repeat("filler words of a long log ", 8000) + ` lateword"`
	for _, stmt := range []string{
		`INSERT INTO threads (id, model, encoding, created_at, updated_at) VALUES ('t', 'm', 'o200k_base', 1, 1)`,
		`INSERT INTO messages (thread_id, seq, role, content, raw, tokens, created_at) VALUES ('t', 1, 'tool', '` + long + `', '{}', 1, 1)`,
		`INSERT INTO messages_fts (rowid, body) SELECT id, concat_ws(' ', content, name, tool_calls) FROM messages`,
	} {
		if _, err := v8.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%.80s: %v", stmt, err)
		}
	}
	db := v8
	found := func(word string) int {
		t.Helper()
		var n int
		if err := db.QueryRowContext(ctx, `SELECT count(*) FROM messages_fts WHERE messages_fts.body MATCH ?`, word).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if found("lateword") != 1 {
		t.Fatal("version 8 does not index the end of the message: the test proves nothing")
	}
	v8.Close()

	v9, err := openWithMigrations(ctx, path, sqliteMigrations)
	if err != nil {
		t.Fatal(err)
	}
	db = v9
	defer v9.Close()
	if found("lateword") != 0 || found("early") != 1 {
		t.Fatalf("after the migration: lateword found %d times, early %d; want 0 and 1", found("lateword"), found("early"))
	}
	if _, err := v9.ExecContext(ctx, `DELETE FROM messages`); err != nil {
		t.Fatal(err)
	}
	if err := CheckSQLite(ctx, v9); err != nil {
		t.Fatalf("check after deleting the long message: %v", err)
	}
}
