package db

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

//go:embed schema.sql
var schemaSQL string

// TestMigrateOlderDatabase: a database written at version 1 is brought to version 2 at open;
// one written by a newer version is refused.
func TestMigrateOlderDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	v1, err := openWithMigrations(ctx, path, sqliteMigrations)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(v1).ListThreads(ctx, ""); err != nil {
		t.Fatal(err)
	}
	v1.Close()

	v2 := append(sqliteMigrations[:len(sqliteMigrations):len(sqliteMigrations)], "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;")
	sqldb, err := openWithMigrations(ctx, path, v2)
	if err != nil {
		t.Fatalf("migrate to version %d: %v", len(v2), err)
	}
	var version int
	if err := sqldb.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil || version != len(v2) {
		t.Fatalf("user_version %d (%v), want %d", version, err, len(v2))
	}
	if _, err := sqldb.ExecContext(ctx, "INSERT INTO notes (body) VALUES ('migrated')"); err != nil {
		t.Fatalf("the new table is missing: %v", err)
	}
	sqldb.Close()

	// Opened again by the older build: refused, and the file is left as it was.
	if _, err := openWithMigrations(ctx, path, sqliteMigrations); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("got %v, want ErrNewerSchema", err)
	}
	again, err := openWithMigrations(ctx, path, v2)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	var n int
	if err := again.QueryRowContext(ctx, "SELECT count(*) FROM notes").Scan(&n); err != nil || n != 1 {
		t.Fatalf("notes: %d, %v", n, err)
	}
}

// TestMigrationIsAtomic: a migration that fails leaves the database at its old version.
func TestMigrationIsAtomic(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	v1, err := openWithMigrations(ctx, path, sqliteMigrations)
	if err != nil {
		t.Fatal(err)
	}
	v1.Close()
	bad := append(sqliteMigrations[:len(sqliteMigrations):len(sqliteMigrations)], "CREATE TABLE half (id INTEGER PRIMARY KEY); SELECT nonsense FROM nowhere;")
	if _, err := openWithMigrations(ctx, path, bad); err == nil {
		t.Fatal("a failing migration was applied")
	}
	sqldb, err := openWithMigrations(ctx, path, sqliteMigrations)
	if err != nil {
		t.Fatalf("the database is no longer at version %d: %v", len(sqliteMigrations), err)
	}
	defer sqldb.Close()
	var n int
	sqldb.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = 'half'").Scan(&n)
	if n != 0 {
		t.Fatal("a failed migration left a table behind")
	}
}

// TestSchemaMatchesMigrations: the database the migrations build has the tables, columns,
// indexes and triggers that schema.sql (what sqlc reads) declares.
func TestSchemaMatchesMigrations(t *testing.T) {
	ctx := context.Background()
	migrated, err := openWithMigrations(ctx, filepath.Join(t.TempDir(), "migrated.db"), sqliteMigrations)
	if err != nil {
		t.Fatal(err)
	}
	defer migrated.Close()
	declared, err := openWithMigrations(ctx, filepath.Join(t.TempDir(), "declared.db"), []string{schemaSQL})
	if err != nil {
		t.Fatal(err)
	}
	defer declared.Close()
	a, b := describeSchema(t, migrated), describeSchema(t, declared)
	if len(a) != len(b) {
		t.Errorf("migrations build %d schema objects, schema.sql declares %d", len(a), len(b))
	}
	for k, v := range b {
		if a[k] != v {
			t.Errorf("%s:\n  migrations: %s\n  schema.sql: %s", k, a[k], v)
		}
	}
}

// describeSchema returns each table's columns (name, type, not null, default, primary key) and
// each index, trigger and view's SQL with its white space folded.
func describeSchema(t *testing.T, sqldb *sql.DB) map[string]string {
	t.Helper()
	out := map[string]string{}
	rows, err := sqldb.Query("SELECT type, name, coalesce(sql, '') FROM sqlite_schema WHERE name NOT LIKE 'sqlite_%' AND name NOT LIKE '%_fts_%'")
	if err != nil {
		t.Fatal(err)
	}
	type obj struct{ typ, name, sql string }
	var objs []obj
	for rows.Next() {
		var o obj
		if err := rows.Scan(&o.typ, &o.name, &o.sql); err != nil {
			t.Fatal(err)
		}
		objs = append(objs, o)
	}
	rows.Close()
	for _, o := range objs {
		if o.typ != "table" || strings.HasPrefix(o.sql, "CREATE VIRTUAL") {
			out[o.typ+" "+o.name] = strings.Join(strings.Fields(stripComments(o.sql)), " ")
			continue
		}
		cols, err := sqldb.Query("SELECT name, type, \"notnull\", coalesce(dflt_value, ''), pk FROM pragma_table_info(?)", o.name)
		if err != nil {
			t.Fatal(err)
		}
		var desc []string
		for cols.Next() {
			var name, typ, dflt string
			var notnull, pk int
			if err := cols.Scan(&name, &typ, &notnull, &dflt, &pk); err != nil {
				t.Fatal(err)
			}
			desc = append(desc, fmt.Sprintf("%s %s notnull=%d default=%s pk=%d", name, typ, notnull, dflt, pk))
		}
		cols.Close()
		slices.Sort(desc)
		checks := regexp.MustCompile(`CHECK \([^()]*\([^()]*\)\)`).FindAllString(o.sql, -1)
		slices.Sort(checks)
		out["table "+o.name] = strings.Join(desc, "; ") + " | " + strings.Join(checks, "; ")
	}
	return out
}

func stripComments(s string) string {
	return regexp.MustCompile(`--[^\n]*`).ReplaceAllString(s, "")
}

// TestMigrateV1KeepsRows: a version-1 database with a thread, an applied compaction and its
// attempts keeps every row through the rebuild of version 2, the attempts still linked to
// their compaction and the summary still searchable, and passes CheckSQLite.
func TestMigrateV1KeepsRows(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v1.db")
	v1, err := openWithMigrations(ctx, path, sqliteMigrations[:1])
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO threads (id, model, encoding, created_at, updated_at) VALUES ('t', 'gpt-4o', 'o200k_base', 1, 1)`,
		`INSERT INTO compactions (thread_id, status, reason, last_seq, token_limit, tokens_before, messages_before, summary, chunks, created_at, updated_at)
		 VALUES ('t', 'applied', 'forced', 3, 1000, 900, 3, 'the order W1234 was refunded', 2, 1, 1)`,
		`INSERT INTO cascade_attempts (compaction_id, provider, model, started_at, duration_ms, outcome, prompt_tokens) VALUES (1, 'local', 'm', 1, 5, 'ok', 77)`,
	} {
		if _, err := v1.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	v1.Close()

	sqldb, err := openWithMigrations(ctx, path, sqliteMigrations)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	defer sqldb.Close()
	var attempts, requests, hits int
	var strategy, dropped string
	if err := sqldb.QueryRowContext(ctx, `SELECT count(*) FROM cascade_attempts WHERE compaction_id = 1 AND prompt_tokens = 77`).Scan(&attempts); err != nil || attempts != 1 {
		t.Fatalf("attempts linked to compaction 1: %d (%v), want 1", attempts, err)
	}
	if err := sqldb.QueryRowContext(ctx, `SELECT requests, strategy, facts_dropped FROM compactions WHERE id = 1`).Scan(&requests, &strategy, &dropped); err != nil {
		t.Fatal(err)
	}
	if requests != 2 || strategy != "summarize" || dropped != "[]" {
		t.Errorf("migrated compaction: requests %d strategy %q facts_dropped %q", requests, strategy, dropped)
	}
	if err := sqldb.QueryRowContext(ctx, `SELECT count(*) FROM summaries_fts WHERE summaries_fts MATCH '"W1234"'`).Scan(&hits); err != nil || hits != 1 {
		t.Fatalf("summary search after migration: %d hits (%v), want 1", hits, err)
	}
	if _, err := sqldb.ExecContext(ctx, `DELETE FROM compactions WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if err := sqldb.QueryRowContext(ctx, `SELECT count(*) FROM cascade_attempts`).Scan(&attempts); err != nil || attempts != 0 {
		t.Fatalf("attempts of a deleted compaction: %d (%v), want 0 (the foreign key cascades)", attempts, err)
	}
	if err := CheckSQLite(ctx, sqldb); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateV8KeepsAttempts: a version-8 database's attempts keep every column through the
// rebuild of version 9, with no cost (NULL: not priced) and still linked to their compaction;
// the rebuilt table takes outcome skipped_cost and a cost, and a thread has no upstream cost.
func TestMigrateV8KeepsAttempts(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "v8.db")
	v8, err := openWithMigrations(ctx, path, sqliteMigrations[:8])
	if err != nil {
		t.Fatal(err)
	}
	for _, stmt := range []string{
		`INSERT INTO threads (id, model, encoding, created_at, updated_at, replies, prompt_tokens) VALUES ('t', 'gpt-4o', 'o200k_base', 1, 1, 2, 500)`,
		`INSERT INTO compactions (thread_id, status, reason, last_seq, token_limit, tokens_before, messages_before, created_at, updated_at)
		 VALUES ('t', 'applied', 'forced', 3, 1000, 900, 3, 1, 1)`,
		`INSERT INTO cascade_attempts (compaction_id, provider, model, started_at, duration_ms, outcome, http_status, error_class, error, prompt_tokens, completion_tokens, usage_estimated)
		 VALUES (1, 'local', 'm', 11, 5, 'error', 503, 'server', 'busy', 77, 3, 1)`,
	} {
		if _, err := v8.ExecContext(ctx, stmt); err != nil {
			t.Fatal(err)
		}
	}
	v8.Close()

	sqldb, err := openWithMigrations(ctx, path, sqliteMigrations)
	if err != nil {
		t.Fatalf("migrate: %v", err)
	}
	defer sqldb.Close()
	var a CascadeAttempt
	err = sqldb.QueryRowContext(ctx, `SELECT * FROM cascade_attempts`).Scan(&a.ID, &a.CompactionID, &a.Provider, &a.Model,
		&a.StartedAt, &a.DurationMs, &a.Outcome, &a.HttpStatus, &a.ErrorClass, &a.Error, &a.PromptTokens, &a.CompletionTokens,
		&a.UsageEstimated, &a.CostMicros)
	if err != nil {
		t.Fatal(err)
	}
	want := CascadeAttempt{ID: 1, CompactionID: sql.NullInt64{Int64: 1, Valid: true}, Provider: "local", Model: "m", StartedAt: 11,
		DurationMs: 5, Outcome: "error", HttpStatus: 503, ErrorClass: "server", Error: "busy", PromptTokens: 77, CompletionTokens: 3,
		UsageEstimated: 1}
	if a != want {
		t.Errorf("migrated attempt %+v, want %+v", a, want)
	}
	if _, err := sqldb.ExecContext(ctx, `INSERT INTO cascade_attempts (compaction_id, provider, model, started_at, duration_ms, outcome, cost_micros)
		VALUES (1, 'dear', 'm', 12, 0, 'skipped_cost', NULL), (1, 'cheap', 'm', 13, 4, 'ok', 2650)`); err != nil {
		t.Fatalf("outcome skipped_cost and a cost after migration: %v", err)
	}
	var upstream sql.NullInt64
	var replies int
	if err := sqldb.QueryRowContext(ctx, `SELECT replies, upstream_cost_micros FROM threads`).Scan(&replies, &upstream); err != nil ||
		replies != 2 || upstream.Valid {
		t.Errorf("migrated thread: %d replies, upstream cost %+v (%v); want 2 and NULL", replies, upstream, err)
	}
	if err := CheckSQLite(ctx, sqldb); err != nil {
		t.Fatal(err)
	}
}

// TestMigrateV10KeepsWholeLedgers: a database of schema version 10 (every ledger stored whole,
// no kept totals) is brought to the current version at open: its compaction keeps its ledger,
// whole (no ledger_base), a row can name the compaction its ledger is the difference from, and
// the totals listing threads reads are filled from the messages (the thread's tokens, those
// the summary covers, those up to the view's view_seq).
func TestMigrateV10KeepsWholeLedgers(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	v10, err := openWithMigrations(ctx, path, sqliteMigrations[:10])
	if err != nil {
		t.Fatal(err)
	}
	const ledger = `[{"kind":"id","text":"ZFA04Y","weight":53,"seq":4}]`
	for _, stmt := range []string{
		`INSERT INTO threads (id, model, encoding, created_at, updated_at) VALUES ('kept', 'gpt-4o', 'o200k_base', 1, 1)`,
		`INSERT INTO compactions (id, thread_id, status, reason, last_seq, token_limit, tokens_before, messages_before, created_at, updated_at, ledger,
		     from_seq, to_seq, view, view_seq)
		 VALUES (7, 'kept', 'applied', 'forced', 9, 1000, 900, 9, 1, 1, '` + ledger + `', 2, 3, '{"summary":7}', 4)`,
		`INSERT INTO messages (thread_id, seq, role, content, raw, tokens, created_at) VALUES
		 ('kept', 1, 'user', 'a', '{}', 1, 1), ('kept', 2, 'user', 'b', '{}', 10, 1), ('kept', 3, 'user', 'c', '{}', 100, 1),
		 ('kept', 4, 'user', 'd', '{}', 1000, 1), ('kept', 5, 'user', 'e', '{}', 10000, 1)`,
	} {
		if _, err := v10.ExecContext(ctx, stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	v10.Close()
	sqldb, err := openWithMigrations(ctx, path, sqliteMigrations)
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	r, err := New(sqldb).CompactionLedger(ctx, 7)
	if err != nil || r.Ledger != ledger || r.LedgerBase.Valid {
		t.Fatalf("compaction 7 after migrating: %+v, %v; want its ledger whole", r, err)
	}
	var total, covered, prefix int64
	if err := sqldb.QueryRowContext(ctx, `SELECT t.message_tokens, c.covered_tokens, c.view_prefix_tokens FROM threads t JOIN compactions c ON c.thread_id = t.id
		WHERE c.id = 7`).Scan(&total, &covered, &prefix); err != nil || total != 11111 || covered != 110 || prefix != 1111 {
		t.Fatalf("totals after migrating: thread %d, covered %d, up to view_seq %d (%v); want 11111, 110, 1111", total, covered, prefix, err)
	}
	if _, err := sqldb.ExecContext(ctx, `INSERT INTO compactions (id, thread_id, status, reason, last_seq, token_limit, tokens_before, messages_before, created_at, updated_at, ledger, ledger_base)
		VALUES (8, 'kept', 'applied', 'forced', 12, 1000, 900, 12, 2, 2, '{"edit":[0,1,0],"ents":[],"facts":[]}', 7)`); err != nil {
		t.Fatalf("a ledger_base after migrating: %v", err)
	}
}
