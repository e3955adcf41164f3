package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/testdb"
)

// at is m on another database.
func (m *memctl) at(name string) *memctl {
	c := *m
	c.db = name
	return &c
}

// TestCopyCommand: `memctl copy a.db DST` into a new SQLite file and into a PostgreSQL schema
// (skipped without a server), then back into a new file: `export` (active and --all),
// `report` of every compaction, `threads`, `attempts` and `providers` print the same bytes on
// every copy as on a.db. A second copy into DST is refused (exit 1) naming a thread and DST,
// and DST is unchanged.
func TestCopyCommand(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		// An hour: the providers output compared between the copies shows the cooldown, which
		// must not end while the test runs, however loaded the machine.
		w.Header().Set("Retry-After", "3600")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"message":"rate limited","type":"rate_limit_error"}}`)
	}))
	defer srv.Close()
	m := newMemctl(t)
	m.config = filepath.Join(m.dir, "memctl.yaml")
	cfg := fmt.Sprintf("compaction:\n  token_limit: 6000\ncascade:\n  - name: local\n    base_url: %s/v1\n    model: m\n    context_window: 16000\n  - name: offline\n    type: extractive\n", srv.URL)
	if err := os.WriteFile(m.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	var threads []string
	for i, f := range conversationFiles(t) {
		id := fmt.Sprintf("t%d", i+1)
		threads = append(threads, id)
		m.must("import", id, f)
		m.must("compact", id, "--force")
	}
	m.must("set", threads[0], "--limit", "5000", "--strategy", "hybrid")
	m.must("compact", threads[0], "--force")

	var reports []struct{ ID int64 }
	if err := json.Unmarshal([]byte(m.must("reports", "--json")), &reports); err != nil {
		t.Fatal(err)
	}
	if len(reports) != len(threads)+1 {
		t.Fatalf("%d reports, want %d", len(reports), len(threads)+1)
	}
	// What every copy must print as the source does.
	views := func(c *memctl) []string {
		t.Helper()
		out := []string{c.must("threads", "--json"), c.must("attempts", "--json", "--limit", "1000"), c.must("providers", "--json")}
		for _, id := range threads {
			out = append(out, c.must("export", id), c.must("export", id, "--all"), c.must("show", id, "--all"))
		}
		for _, r := range reports {
			out = append(out, c.must("report", fmt.Sprint(r.ID), "--json"))
		}
		return out
	}
	same := func(what string, want, got []string) {
		t.Helper()
		if len(want) != len(got) {
			t.Fatalf("%s: %d outputs, want %d", what, len(got), len(want))
		}
		for i := range want {
			if want[i] != got[i] {
				t.Errorf("%s: output %d differs:\nwant %.400s\n got %.400s", what, i, want[i], got[i])
			}
		}
	}
	want := views(m)
	if !strings.Contains(want[1], `"provider": "local"`) || !strings.Contains(want[2], `"cooling_until": "`) {
		t.Fatalf("the source has no failed attempt or no cooldown:\n%s\n%s", want[1], want[2])
	}

	for _, backend := range []string{testdb.SQLite, testdb.Postgres} {
		t.Run(backend, func(t *testing.T) {
			dst := filepath.Join(t.TempDir(), "copy.db")
			if backend == testdb.Postgres {
				dst = testdb.Schema(t, os.Getenv(testdb.Env))
			}
			var res struct {
				Source, Destination, IDs                            string
				Threads, Messages, Compactions, Attempts, Cooldowns int
			}
			if err := json.Unmarshal([]byte(m.must("copy", m.db, dst, "--json")), &res); err != nil {
				t.Fatal(err)
			}
			if res.Source != m.db || res.Destination != db.Display(dst) || res.Threads != len(threads) ||
				res.Compactions != len(reports) || res.IDs != "kept" || res.Messages == 0 || res.Attempts == 0 || res.Cooldowns == 0 {
				t.Fatalf("copy said %+v", res)
			}
			d := m.at(dst)
			same("copy", want, views(d))
			d.must("check")

			// Refused the second time, naming a thread and the destination, and nothing changes.
			code, out, errs := m.run("copy", m.db, dst)
			if code != 1 || out != "" || !strings.Contains(errs, fmt.Sprintf("%q", threads[0])) ||
				!strings.Contains(errs, db.Display(dst)) || !strings.Contains(errs, "nothing was copied") {
				t.Fatalf("a second copy: exit %d, stdout %q, stderr %q", code, out, errs)
			}
			if strings.Contains(errs, "postgres://postgres@") {
				t.Fatalf("the error shows the URL's user: %q", errs)
			}
			same("after a refused copy", want, views(d))

			back := filepath.Join(t.TempDir(), "back.db")
			line := m.must("copy", dst, back)
			wantLine := fmt.Sprintf("copied %d threads (%d messages, %d compactions, %d attempts, %d cooldowns) from %s to %s; ids kept\n",
				res.Threads, res.Messages, res.Compactions, res.Attempts, res.Cooldowns, db.Display(dst), back)
			if line != wantLine {
				t.Fatalf("copy printed %q, want %q", line, wantLine)
			}
			same("copied back", want, views(m.at(back)))
		})
	}
}

// TestCopyCommandErrors: usage errors are exit 2, a missing source is exit 1 and creates no
// destination, a copy onto the source itself is exit 2.
func TestCopyCommandErrors(t *testing.T) {
	m := newMemctl(t)
	m.must("import", "t1", conversationFiles(t)[0])
	dst := filepath.Join(m.dir, "new.db")
	for _, tc := range []struct {
		args []string
		code int
		msg  string
	}{
		{[]string{"copy", m.db}, 2, "accepts 2 arg(s)"},
		{[]string{"copy", "", dst}, 2, "empty SRC or DST"},
		{[]string{"copy", filepath.Join(m.dir, "missing.db"), dst}, 1, "no database at"},
		{[]string{"copy", m.db, m.db}, 2, "the same database"},
		{[]string{"copy", m.db, "./" + filepath.Base(m.db)}, 2, "the same database"},
	} {
		code, _, errs := m.run(tc.args...)
		if code != tc.code || !strings.Contains(errs, tc.msg) {
			t.Errorf("memctl %q: exit %d, %q; want exit %d naming %q", tc.args, code, errs, tc.code, tc.msg)
		}
	}
	if _, err := os.Stat(dst); !os.IsNotExist(err) {
		t.Fatalf("a failed copy left %s: %v", dst, err)
	}
}
