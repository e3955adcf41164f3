package memory

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/internal/testdb"
)

// Faults of the PostgreSQL backend: the connection to the server is cut (testdb.Proxy) while
// the store writes. Nothing committed may be lost, nothing may be half written.

// faultStore opens a store on schema through a proxy to its server.
func faultStore(t *testing.T, schema string) (*Store, *testdb.Proxy) {
	t.Helper()
	p := testdb.NewProxy(t, schema)
	s, err := Open(context.Background(), p.URL(t, schema))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s, p
}

// direct opens a connection pool to schema, not through any proxy.
func direct(t *testing.T, schema string) *sql.DB {
	t.Helper()
	d, err := sql.Open("pgx", schema)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { d.Close() })
	return d
}

// threadRows returns, read directly, how many messages thread has, its highest seq, and its
// last_seq (-1: no thread row).
func threadRows(t *testing.T, d *sql.DB, thread string) (n, top, last int64) {
	t.Helper()
	ctx := context.Background()
	if err := d.QueryRowContext(ctx, "SELECT count(*), coalesce(max(seq), 0) FROM messages WHERE thread_id = $1", thread).Scan(&n, &top); err != nil {
		t.Fatal(err)
	}
	err := d.QueryRowContext(ctx, "SELECT last_seq FROM threads WHERE id = $1", thread).Scan(&last)
	if err == sql.ErrNoRows {
		last = -1
	} else if err != nil {
		t.Fatal(err)
	}
	return n, top, last
}

// bigImport is a JSONL conversation of n messages.
func bigImport(n int) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.Encode(TextMessage(RoleSystem, "You are a careful assistant."))
	for i := 1; i < n; i++ {
		role := RoleUser
		if i%2 == 0 {
			role = RoleAssistant
		}
		enc.Encode(TextMessage(role, fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 4))))
	}
	return b.Bytes()
}

// TestFaultImportCut: the connection is cut at points all through a large import, up to its
// COMMIT. The import fails naming the lost connection; the thread then holds none of the
// batch or (a COMMIT that reached the server before the cut) all of it, its seqs 1..n; when it
// holds none, the import run again through a fresh store passes.
func TestFaultImportCut(t *testing.T) {
	ctx := context.Background()
	const n = 3000
	data := bigImport(n)

	// How many bytes the import sends, measured through a proxy that never cuts.
	schema := testdb.PostgresOnly(t, "a connection cut mid-import")
	s, p := faultStore(t, schema)
	before := p.Sent()
	if _, err := s.Import(ctx, "t", bytes.NewReader(data), AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	total := p.Sent() - before
	t.Logf("the import of %d messages sends %d bytes", n, total)

	for _, cut := range []int64{0, 1, 200, total / 3, total / 2, total - 200, total - 20, total - 1, total} {
		t.Run(fmt.Sprint("cut after ", cut, " bytes"), func(t *testing.T) {
			schema := testdb.Schema(t, schema)
			s, p := faultStore(t, schema)
			p.CutAfter(cut)
			res, err := s.Import(ctx, "t", bytes.NewReader(data), AppendOptions{})
			if p.Cuts() == 0 {
				t.Fatalf("the import ended before the cut (%v, %+v)", err, res)
			}
			if err == nil {
				t.Fatalf("the import passed although its connection was cut: %+v", res)
			}
			t.Logf("import: %v", err)
			if !strings.Contains(err.Error(), `append to "t"`) {
				t.Errorf("error %q does not name the thread", err)
			}
			got, top, last := threadRows(t, direct(t, schema), "t")
			switch {
			case got == 0 && last <= 0:
				// None of it: run it again.
				s2, err := Open(ctx, schema)
				if err != nil {
					t.Fatal(err)
				}
				defer s2.Close()
				if _, err := s2.Import(ctx, "t", bytes.NewReader(data), AppendOptions{}); err != nil {
					t.Fatalf("the import run again: %v", err)
				}
				if got, top, last = threadRows(t, direct(t, schema), "t"); got != n || top != n || last != n {
					t.Fatalf("after the import run again: %d messages, top seq %d, last_seq %d; want %d", got, top, last, n)
				}
			case got == n && top == n && last == n:
				// All of it: the COMMIT reached the server. The error must not say nothing was
				// written.
				if !strings.Contains(err.Error(), "may have been committed") {
					t.Errorf("the import was committed but its error does not say it may have been: %v", err)
				}
			default:
				t.Fatalf("half written: %d messages, top seq %d, last_seq %d (want 0 or %d)", got, top, last, n)
			}
		})
	}
}
