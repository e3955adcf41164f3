package postgres

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/testdb"
)

// testURL returns a URL of the server named by MEMCASCADE_TEST_POSTGRES whose search_path is a
// schema made for this test alone, dropped when the test ends.
func testURL(t *testing.T) string { return testdb.Schema(t, os.Getenv(testdb.Env)) }

func openTest(t *testing.T, u string) *sql.DB {
	t.Helper()
	sqldb, err := Open(context.Background(), u)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { sqldb.Close() })
	return sqldb
}

func schemaVersion(t *testing.T, sqldb *sql.DB) int {
	t.Helper()
	var v int
	if err := sqldb.QueryRow("SELECT version FROM schema_version").Scan(&v); err != nil {
		t.Fatal(err)
	}
	return v
}

func TestOpenAppliesSchema(t *testing.T) {
	u := testURL(t)
	sqldb := openTest(t, u)
	if v := schemaVersion(t, sqldb); v != Version {
		t.Fatalf("schema_version = %d, want %d", v, Version)
	}
	var schema string
	if err := sqldb.QueryRow("SELECT current_schema()").Scan(&schema); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(schema, "test_") {
		t.Fatalf("current schema %q, want the test's own", schema)
	}
	for _, name := range []string{"threads", "messages", "compactions", "cascade_attempts", "provider_cooldowns",
		"schema_version", "messages_fts", "summaries_fts", "messages_thread_id_seq_key", "compactions_running"} {
		var found bool
		if err := sqldb.QueryRow("SELECT to_regclass($1) IS NOT NULL", schema+"."+name).Scan(&found); err != nil {
			t.Fatal(err)
		}
		if !found {
			t.Errorf("%s missing from schema %s", name, schema)
		}
	}
	// Each full-text index is a GIN index. (Read from the catalog, not pg_indexes: its indexdef
	// opens every index of the server, and one that another test drops meanwhile fails the
	// query with "could not open relation".)
	var gin int
	err := sqldb.QueryRow(`SELECT count(*) FROM pg_class c
		JOIN pg_namespace n ON n.oid = c.relnamespace JOIN pg_am a ON a.oid = c.relam
		WHERE n.nspname = $1 AND c.relname IN ('messages_fts', 'summaries_fts') AND a.amname = 'gin'`, schema).Scan(&gin)
	if err != nil {
		t.Fatal(err)
	}
	if gin != 2 {
		t.Fatalf("%d GIN full-text indexes, want 2", gin)
	}
}

func TestReopenIsNoop(t *testing.T) {
	u := testURL(t)
	ctx := context.Background()
	first := openTest(t, u)
	q := New(first)
	if _, err := q.InsertThread(ctx, InsertThreadParams{ID: "t1", Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}", Settings: "{}", CreatedAt: 1, UpdatedAt: 1}); err != nil {
		t.Fatal(err)
	}
	var before int64
	if err := first.QueryRow("SELECT xmin::text::bigint FROM schema_version").Scan(&before); err != nil {
		t.Fatal(err)
	}
	second := openTest(t, u)
	if v := schemaVersion(t, second); v != Version {
		t.Fatalf("schema_version = %d after reopening, want %d", v, Version)
	}
	var after int64
	if err := second.QueryRow("SELECT xmin::text::bigint FROM schema_version").Scan(&after); err != nil {
		t.Fatal(err)
	}
	if after != before {
		t.Fatalf("reopening rewrote schema_version (xmin %d, then %d)", before, after)
	}
	th, err := New(second).GetThread(ctx, "t1")
	if err != nil {
		t.Fatalf("thread written before reopening: %v", err)
	}
	if th.Model != "gpt-4o" {
		t.Fatalf("thread model %q after reopening", th.Model)
	}
}

func TestNewerSchemaRefused(t *testing.T) {
	u := testURL(t)
	sqldb := openTest(t, u)
	if _, err := sqldb.Exec("UPDATE schema_version SET version = $1", Version+1); err != nil {
		t.Fatal(err)
	}
	_, err := Open(context.Background(), u)
	if !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("Open of a version %d database: %v, want ErrNewerSchema", Version+1, err)
	}
	if !strings.Contains(err.Error(), fmt.Sprintf("schema version %d", Version+1)) {
		t.Fatalf("error %q does not name the version", err)
	}
	if v := schemaVersion(t, sqldb); v != Version+1 {
		t.Fatalf("refused open changed schema_version to %d", v)
	}
}

// A migration that fails leaves the database as it was: the steps and the version row are one
// transaction.
func TestFailedMigrationLeavesNothing(t *testing.T) {
	u := testURL(t)
	ctx := context.Background()
	sqldb, err := sql.Open("pgx", u)
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	err = migrate(ctx, sqldb, []string{schemaSQL, "CREATE TABLE broken (id BIGINT REFERENCES nowhere (id))"})
	if err == nil || !strings.Contains(err.Error(), "migrate to schema version 2") {
		t.Fatalf("migrate with a broken step: %v, want an error naming version 2", err)
	}
	for _, name := range []string{"threads", "schema_version"} {
		var found bool
		if err := sqldb.QueryRow("SELECT to_regclass($1) IS NOT NULL", name).Scan(&found); err != nil {
			t.Fatal(err)
		}
		if found {
			t.Errorf("%s exists after a failed migration", name)
		}
	}
}

// Processes that open a new database at once all succeed: the first creates the schema, the
// others wait for it on the migration lock and then find it (none creates the tables again).
func TestConcurrentOpensOfANewDatabase(t *testing.T) {
	u := testURL(t)
	const n = 8
	errs := make(chan error, n)
	for range n {
		go func() {
			sqldb, err := Open(context.Background(), u)
			if err == nil {
				sqldb.Close()
			}
			errs <- err
		}()
	}
	for range n {
		if err := <-errs; err != nil {
			t.Error(err)
		}
	}
	if v := schemaVersion(t, openTest(t, u)); v != Version {
		t.Fatalf("schema_version = %d, want %d", v, Version)
	}
}

// The migration lock is a schema's own: while a migration of one schema holds it, a new
// database in another schema of the same server opens (several memories in one database), and
// an open of the schema whose lock is held waits for it.
func TestMigrationLockIsPerSchema(t *testing.T) {
	held, other := testURL(t), testURL(t)
	holder, err := sql.Open("pgx", held)
	if err != nil {
		t.Fatal(err)
	}
	defer holder.Close()
	tx, err := holder.BeginTx(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.Exec("SELECT pg_advisory_xact_lock($1, hashtext(current_schema()))", migrateLock); err != nil {
		t.Fatal(err)
	}
	// Another schema: the open runs its migration under a lock of its own. The deadline is
	// only there to fail rather than hang if it waited for the held lock.
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	sqldb, err := Open(ctx, other)
	if err != nil {
		t.Fatalf("open of another schema while a migration holds its lock: %v", err)
	}
	if v := schemaVersion(t, sqldb); v != Version {
		t.Fatalf("schema_version = %d, want %d", v, Version)
	}
	sqldb.Close()
	// The held schema: its migration waits for the lock until the open's context ends.
	ctx, cancel = context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	if sqldb, err := Open(ctx, held); err == nil {
		sqldb.Close()
		t.Fatal("open of the schema whose migration lock is held did not wait for it")
	}
	if ctx.Err() == nil {
		t.Fatal("open of the held schema failed before its context ended")
	}
}

func TestOpenRefusesOtherNames(t *testing.T) {
	for _, name := range []string{"", "memory.db", "/tmp/x.db", "mysql://h/db", "file:postgres://x"} {
		if _, err := Open(context.Background(), name); err == nil || !strings.Contains(err.Error(), "not a PostgreSQL URL") {
			t.Errorf("Open(%q) = %v, want a refusal naming the URL form", name, err)
		}
	}
	for _, name := range []string{"postgres://h/db", "postgresql://h/db", "POSTGRES://h/db"} {
		if !IsURL(name) {
			t.Errorf("IsURL(%q) = false", name)
		}
	}
}

func TestOpenErrorHidesPassword(t *testing.T) {
	// Nothing listens on port 1; the error must name the host but not the password.
	_, err := Open(context.Background(), "postgres://u:s3cretpw@127.0.0.1:1/db?sslmode=disable&connect_timeout=2")
	if err == nil {
		t.Fatal("Open of a closed port succeeded")
	}
	if strings.Contains(err.Error(), "s3cretpw") {
		t.Fatalf("error shows the password: %v", err)
	}
	if !strings.Contains(err.Error(), "127.0.0.1:1/db") {
		t.Fatalf("error %q does not name the database", err)
	}
}

// WithTx runs a transaction again when PostgreSQL aborts it for a serialization failure: here
// another connection updates the row the transaction read, between its read and its write.
func TestWithTxRetriesSerializationFailure(t *testing.T) {
	u := testURL(t)
	ctx := context.Background()
	sqldb := openTest(t, u)
	if _, err := sqldb.Exec("CREATE TABLE counter (n BIGINT NOT NULL); INSERT INTO counter VALUES (0)"); err != nil {
		t.Fatal(err)
	}
	runs := 0
	var firstErr error
	err := WithTx(ctx, sqldb, func(tx *sql.Tx) error {
		runs++
		var n int64
		if err := tx.QueryRowContext(ctx, "SELECT n FROM counter").Scan(&n); err != nil {
			return err
		}
		if runs == 1 {
			// Another connection commits a change to the row after this snapshot was taken.
			if _, err := sqldb.ExecContext(ctx, "UPDATE counter SET n = n + 1"); err != nil {
				return fmt.Errorf("concurrent update: %w", err)
			}
		}
		_, err := tx.ExecContext(ctx, "UPDATE counter SET n = $1", n+1)
		if runs == 1 {
			firstErr = err
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if runs != 2 {
		t.Fatalf("fn ran %d times, want 2 (first run's error: %v)", runs, firstErr)
	}
	if !IsRetryable(firstErr) {
		t.Fatalf("first run ended with %v, want a serialization failure", firstErr)
	}
	var n int64
	if err := sqldb.QueryRow("SELECT n FROM counter").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 2 {
		t.Fatalf("counter = %d, want 2 (no update lost)", n)
	}
	// Other errors are returned at once.
	runs = 0
	err = WithTx(ctx, sqldb, func(tx *sql.Tx) error {
		runs++
		_, err := tx.ExecContext(ctx, "INSERT INTO counter VALUES (NULL)")
		return err
	})
	if err == nil || runs != 1 || IsRetryable(err) {
		t.Fatalf("not-null violation: err %v after %d runs, want one run and the error", err, runs)
	}
}

func TestTSQuery(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"hello", "'hello'"},
		{"hel* world", "'hel':* & 'world'"},
		{`a'b OR NOT "x" :* (`, `'a''b' & 'OR' & 'NOT' & '"x"'`},
		{`back\slash`, `'back\\slash'`},
		{"*** ( ) !", ""},
		{"a\x00b", "'a' & 'b'"},
	} {
		if got := TSQuery(c.in); got != c.want {
			t.Errorf("TSQuery(%q) = %q, want %q", c.in, got, c.want)
		}
	}
}

// TestConnectionsRunWithoutJIT: every connection of an opened database has just-in-time
// compilation off (see connect).
func TestConnectionsRunWithoutJIT(t *testing.T) {
	h, err := OpenHandle(context.Background(), testURL(t), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	var jit string
	if err := h.DB.QueryRowContext(context.Background(), "SHOW jit").Scan(&jit); err != nil || jit != "off" {
		t.Fatalf("jit = %q, %v; want off", jit, err)
	}
}

// TestPoolKeepsConnections: the connections a burst of concurrent transactions opens are
// kept for the next burst: none is closed as it comes back (each is a server process, its
// settings and its prepared queries).
func TestPoolKeepsConnections(t *testing.T) {
	ctx := context.Background()
	h, err := OpenHandle(ctx, testURL(t), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	const writers = 20
	burst := func() {
		var wg, inside sync.WaitGroup
		inside.Add(writers)
		for range writers {
			wg.Go(func() {
				err := h.LockedTx(ctx, func(q db.Querier) error {
					_, err := q.ListThreads(ctx, "")
					inside.Done()
					inside.Wait() // every transaction holds its connection at once
					return err
				})
				if err != nil {
					t.Error(err)
				}
			})
		}
		wg.Wait()
	}
	for i := range 2 {
		burst()
		if st := h.DB.Stats(); st.MaxIdleClosed != 0 || st.OpenConnections > poolIdle || st.OpenConnections < 2 {
			t.Fatalf("after burst %d of %d transactions: %d connections open, %d closed as idle; want none closed", i+1, writers, st.OpenConnections, st.MaxIdleClosed)
		}
	}
}

// TestMigrateV1AddsLedger: a database of schema version 1 (before compactions stored their
// ledger) is brought to the current version at open, its rows kept, the ledger column added.
func TestMigrateV1AddsLedger(t *testing.T) {
	u := testURL(t)
	sqldb := openTest(t, u)
	for _, stmt := range []string{
		"ALTER TABLE compactions DROP COLUMN ledger",
		"UPDATE schema_version SET version = 1",
		"INSERT INTO threads (id, model, encoding, created_at, updated_at) VALUES ('kept', 'gpt-4o', 'o200k_base', 1, 1)",
	} {
		if _, err := sqldb.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	again := openTest(t, u)
	if v := schemaVersion(t, again); v != Version {
		t.Fatalf("schema_version = %d after migrating, want %d", v, Version)
	}
	var n int
	if err := again.QueryRow(`SELECT count(*) FROM information_schema.columns
		WHERE table_schema = current_schema() AND table_name = 'compactions' AND column_name = 'ledger'`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("the ledger column is missing after migrating: %d, %v", n, err)
	}
	if err := again.QueryRow("SELECT count(*) FROM threads WHERE id = 'kept'").Scan(&n); err != nil || n != 1 {
		t.Fatalf("the thread of version 1 is gone after migrating: %d, %v", n, err)
	}
}

// TestMigrateV5AddsCost: a database of schema version 5 (before money) is brought to the
// current version at open: its attempt kept with no cost, the columns of cost added, and
// outcome skipped_cost taken.
func TestMigrateV5AddsCost(t *testing.T) {
	u := testURL(t)
	sqldb := openTest(t, u)
	for _, stmt := range []string{
		"ALTER TABLE cascade_attempts DROP COLUMN cost_micros",
		"ALTER TABLE threads DROP COLUMN upstream_cost_micros",
		"ALTER TABLE cascade_attempts DROP CONSTRAINT cascade_attempts_outcome_check",
		`ALTER TABLE cascade_attempts ADD CONSTRAINT cascade_attempts_outcome_check
		    CHECK (outcome IN ('ok', 'error', 'skipped_cooldown', 'skipped_window', 'skipped_budget'))`,
		"UPDATE schema_version SET version = 5",
		"INSERT INTO cascade_attempts (provider, model, started_at, duration_ms, outcome, prompt_tokens) VALUES ('p', 'm', 1, 2, 'ok', 77)",
	} {
		if _, err := sqldb.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	again := openTest(t, u)
	if v := schemaVersion(t, again); v != Version {
		t.Fatalf("schema_version = %d after migrating, want %d", v, Version)
	}
	var tokens int
	var cost sql.NullInt64
	if err := again.QueryRow("SELECT prompt_tokens, cost_micros FROM cascade_attempts").Scan(&tokens, &cost); err != nil || tokens != 77 || cost.Valid {
		t.Fatalf("the attempt of version 5: %d tokens, cost %+v (%v); want 77 and NULL", tokens, cost, err)
	}
	if _, err := again.Exec("INSERT INTO cascade_attempts (provider, model, started_at, duration_ms, outcome) VALUES ('p', 'm', 2, 0, 'skipped_cost')"); err != nil {
		t.Fatalf("outcome skipped_cost after migrating: %v", err)
	}
	if err := again.QueryRow("SELECT count(upstream_cost_micros) FROM threads").Scan(&tokens); err != nil {
		t.Fatalf("threads.upstream_cost_micros after migrating: %v", err)
	}
}

// TestMigrateV6KeepsWholeLedgers: a database of schema version 6 (every ledger stored whole, no
// kept totals) is brought to the current version at open: its compaction keeps its ledger,
// whole (no ledger_base), and the totals listing threads reads are filled from the messages.
func TestMigrateV6KeepsWholeLedgers(t *testing.T) {
	u := testURL(t)
	sqldb := openTest(t, u)
	const ledger = `[{"kind":"id","text":"ZFA04Y","weight":53,"seq":4}]`
	for _, stmt := range []string{
		"ALTER TABLE compactions DROP COLUMN ledger_base, DROP COLUMN covered_tokens, DROP COLUMN view_prefix_tokens",
		"ALTER TABLE threads DROP COLUMN message_tokens",
		"UPDATE schema_version SET version = 6",
		"INSERT INTO threads (id, model, encoding, created_at, updated_at) VALUES ('kept', 'gpt-4o', 'o200k_base', 1, 1)",
		`INSERT INTO compactions (id, thread_id, status, reason, last_seq, token_limit, tokens_before, messages_before, created_at, updated_at, ledger,
		     from_seq, to_seq, view, view_seq)
		 VALUES (7, 'kept', 'applied', 'forced', 9, 1000, 900, 9, 1, 1, '` + ledger + `', 2, 3, '{"summary":7}', 4)`,
		`INSERT INTO messages (thread_id, seq, role, content, raw, tokens, created_at) VALUES
		 ('kept', 1, 'user', 'a', '{}', 1, 1), ('kept', 2, 'user', 'b', '{}', 10, 1), ('kept', 3, 'user', 'c', '{}', 100, 1),
		 ('kept', 4, 'user', 'd', '{}', 1000, 1), ('kept', 5, 'user', 'e', '{}', 10000, 1)`,
	} {
		if _, err := sqldb.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	again := openTest(t, u)
	if v := schemaVersion(t, again); v != Version {
		t.Fatalf("schema_version = %d after migrating, want %d", v, Version)
	}
	var got string
	var base sql.NullInt64
	if err := again.QueryRow("SELECT ledger, ledger_base FROM compactions WHERE id = 7").Scan(&got, &base); err != nil || got != ledger || base.Valid {
		t.Fatalf("compaction 7 after migrating: %q, base %+v, %v; want its ledger whole", got, base, err)
	}
	var total, covered, prefix int64
	if err := again.QueryRow(`SELECT t.message_tokens, c.covered_tokens, c.view_prefix_tokens FROM threads t JOIN compactions c ON c.thread_id = t.id
		WHERE c.id = 7`).Scan(&total, &covered, &prefix); err != nil || total != 11111 || covered != 110 || prefix != 1111 {
		t.Fatalf("totals after migrating: thread %d, covered %d, up to view_seq %d (%v); want 11111, 110, 1111", total, covered, prefix, err)
	}
}

// Version 8: a database of version 7 (seq kept unique by an index of two columns, the tokens
// read from a second index) gets the tokens in the unique index, loses the second, and keeps
// its messages and the uniqueness of seq; a new database has the same.
func TestMigrateV7FoldsTokensIndex(t *testing.T) {
	u := testURL(t)
	sqldb := openTest(t, u)
	indexes := func(d *sql.DB) (columns int, tokensIndex bool) {
		t.Helper()
		err := d.QueryRow(`SELECT (SELECT i.indnatts FROM pg_index i WHERE i.indexrelid = to_regclass('messages_thread_id_seq_key')),
			to_regclass('messages_tokens') IS NOT NULL`).Scan(&columns, &tokensIndex)
		if err != nil {
			t.Fatal(err)
		}
		return columns, tokensIndex
	}
	if c, ti := indexes(sqldb); c != 3 || ti {
		t.Fatalf("a new database: the unique index has %d columns, messages_tokens there: %v; want 3, false", c, ti)
	}
	for _, stmt := range []string{
		"ALTER TABLE messages DROP CONSTRAINT messages_thread_id_seq_key",
		"ALTER TABLE messages ADD CONSTRAINT messages_thread_id_seq_key UNIQUE (thread_id, seq)",
		"CREATE INDEX messages_tokens ON messages (thread_id, seq, tokens)",
		"UPDATE schema_version SET version = 7",
		"INSERT INTO threads (id, model, encoding, created_at, updated_at) VALUES ('kept', 'gpt-4o', 'o200k_base', 1, 1)",
		`INSERT INTO messages (thread_id, seq, role, content, raw, tokens, created_at) VALUES
		 ('kept', 1, 'user', 'a', '{}', 1, 1), ('kept', 2, 'user', 'b', '{}', 10, 1)`,
	} {
		if _, err := sqldb.Exec(stmt); err != nil {
			t.Fatalf("%s: %v", stmt, err)
		}
	}
	if c, ti := indexes(sqldb); c != 2 || !ti {
		t.Fatalf("version 7 made by hand: %d columns, messages_tokens %v", c, ti)
	}
	again := openTest(t, u)
	if v := schemaVersion(t, again); v != Version {
		t.Fatalf("schema_version = %d after migrating, want %d", v, Version)
	}
	if c, ti := indexes(again); c != 3 || ti {
		t.Fatalf("after migrating: the unique index has %d columns, messages_tokens there: %v; want 3, false", c, ti)
	}
	var sum int64
	if err := again.QueryRow("SELECT sum(tokens) FROM messages WHERE thread_id = 'kept'").Scan(&sum); err != nil || sum != 11 {
		t.Fatalf("messages after migrating: %d tokens, %v; want 11", sum, err)
	}
	if _, err := again.Exec(`INSERT INTO messages (thread_id, seq, role, raw, tokens, created_at) VALUES ('kept', 2, 'user', '{}', 1, 1)`); err == nil {
		t.Fatal("a second message with seq 2 was accepted after migrating")
	}
}
