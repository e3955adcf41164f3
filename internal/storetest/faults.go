package storetest

import (
	"context"
	"database/sql"
	"testing"

	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// The fault tests of the PostgreSQL backend cut the connection to the server (testdb.Proxy)
// while a store writes, and read what it left directly.

// FaultStore opens a store on schema through a proxy to its server.
func FaultStore(t testing.TB, schema string) (*memory.Store, *testdb.Proxy) {
	t.Helper()
	p := testdb.NewProxy(t, schema)
	s, err := memory.Open(context.Background(), p.URL(t, schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, p
}

// Direct opens a connection pool to schema, not through any proxy.
func Direct(t testing.TB, schema string) *sql.DB {
	t.Helper()
	d, err := sql.Open("pgx", schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// ThreadRows returns, read directly, how many messages thread has, its highest seq, and its
// last_seq (-1: no thread row). It reads once no transaction that wrote the two tables is in
// progress: a COMMIT sent just before a cut may still be running on the server when the
// client has already seen its connection end (reading before it ended saw none of an import
// that then committed, and the import run again doubled the thread).
func ThreadRows(t testing.TB, d *sql.DB, thread string) (n, top, last int64) {
	t.Helper()
	ctx := context.Background()
	tx, err := d.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	// SHARE conflicts with the ROW EXCLUSIVE lock a writing transaction holds until it ends.
	if _, err := tx.ExecContext(ctx, "LOCK TABLE threads, messages IN SHARE MODE"); err != nil {
		t.Fatal(err)
	}
	if err := tx.QueryRowContext(ctx, "SELECT count(*), coalesce(max(seq), 0) FROM messages WHERE thread_id = $1", thread).Scan(&n, &top); err != nil {
		t.Fatal(err)
	}
	err = tx.QueryRowContext(ctx, "SELECT last_seq FROM threads WHERE id = $1", thread).Scan(&last)
	if err == sql.ErrNoRows {
		last = -1
	} else if err != nil {
		t.Fatal(err)
	}
	return n, top, last
}
