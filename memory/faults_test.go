package memory_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// Faults of the PostgreSQL backend: the connection to the server is cut (testdb.Proxy) while
// the store writes. Nothing committed may be lost, nothing may be half written.

// bigImport is a JSONL conversation of n messages.
func bigImport(n int) []byte {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.Encode(chat.TextMessage(chat.RoleSystem, "You are a careful assistant."))
	for i := 1; i < n; i++ {
		role := chat.RoleUser
		if i%2 == 0 {
			role = chat.RoleAssistant
		}
		enc.Encode(chat.TextMessage(role, fmt.Sprintf("message %d: %s", i, strings.Repeat("lorem ipsum dolor sit amet ", 4))))
	}
	return b.Bytes()
}

// TestFaultImportCut: the connection is cut at points all through a large import, up to its
// COMMIT. The import fails naming the lost connection; the thread then holds none of the
// batch or (a COMMIT that reached the server before the cut) all of it, its seqs 1..n; when it
// holds none, the import run again through a fresh store passes.
func TestFaultImportCut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const n = 3000
	data := bigImport(n)

	// How many bytes the import sends, measured through a proxy that never cuts.
	schema := testdb.PostgresOnly(t, "a connection cut mid-import")
	s, p := storetest.FaultStore(t, schema)
	before := p.Sent()
	if _, err := s.Import(ctx, "t", bytes.NewReader(data), memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	total := p.Sent() - before
	t.Logf("the import of %d messages sends %d bytes", n, total)

	cuts := []int64{0, 1, 200, total / 3, total / 2, total - 200, total - 20, total - 1, total}
	if testing.Short() {
		// Every second cut point: before the first byte, early, mid-way, just before the
		// COMMIT and after it.
		cuts = []int64{0, 200, total / 2, total - 20, total}
	}
	for _, cut := range cuts {
		t.Run(fmt.Sprint("cut after ", cut, " bytes"), func(t *testing.T) {
			t.Parallel() // a schema and a proxy of its own
			schema := testdb.Schema(t, schema)
			s, p := storetest.FaultStore(t, schema)
			p.CutAfter(cut)
			res, err := s.Import(ctx, "t", bytes.NewReader(data), memory.AppendOptions{})
			if p.Cuts() == 0 {
				t.Fatalf("the import ended before the cut (%v, %+v)", err, res)
			}
			if err == nil {
				got, top, last := storetest.ThreadRows(t, storetest.Direct(t, schema), "t")
				// Cut before the first byte, the cut may take the pool's check of a connection
				// idle for over a second (pgx pings it before reuse): database/sql then runs
				// the import whole on a new connection. Anything else that passes is a cut the
				// import did not see.
				if cut == 0 && got == n && top == n && last == n {
					t.Logf("the cut took the pool's check of an idle connection; the import ran whole on a new one")
					return
				}
				t.Fatalf("the import passed although its connection was cut: %+v (%d messages, top seq %d, last_seq %d)", res, got, top, last)
			}
			t.Logf("import: %v", err)
			if !strings.Contains(err.Error(), `append to "t"`) {
				t.Errorf("error %q does not name the thread", err)
			}
			got, top, last := storetest.ThreadRows(t, storetest.Direct(t, schema), "t")
			switch {
			case got == 0 && last <= 0:
				// None of it: run it again.
				s2, err := memory.Open(ctx, schema)
				if err != nil {
					t.Fatal(err)
				}
				defer s2.Close()
				if _, err := s2.Import(ctx, "t", bytes.NewReader(data), memory.AppendOptions{}); err != nil {
					t.Fatalf("the import run again: %v", err)
				}
				if got, top, last = storetest.ThreadRows(t, storetest.Direct(t, schema), "t"); got != n || top != n || last != n {
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
