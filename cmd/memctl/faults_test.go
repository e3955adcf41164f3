package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// Faults of the PostgreSQL backend as memctl meets them: a server that cannot be reached, and
// memctl copy killed (SIGKILL) in the middle of its transaction.

// TestUnreachableServerAtOpen: with a server that refuses every connection, a command fails
// with exit 1 and an error naming the host and database, never the password.
func TestUnreachableServerAtOpen(t *testing.T) {
	base := pgDatabase(t)
	p := testdb.NewProxy(t, base)
	p.Refuse(true)
	u, err := url.Parse(p.URL(t, base))
	if err != nil {
		t.Fatal(err)
	}
	const password = "pw-Secret-4242"
	u.User = url.UserPassword("postgres", password)
	m := newMemctl(t)
	m.db = u.String()
	where := db.Display(m.db)
	empty := filepath.Join(m.dir, "empty.db")
	if s, err := memory.Open(context.Background(), empty); err != nil {
		t.Fatal(err)
	} else {
		s.Close()
	}
	if !strings.Contains(where, p.Addr()) || !strings.HasSuffix(where, "/test") {
		t.Fatalf("Display(%q) = %q", m.db, where)
	}
	for _, args := range [][]string{{"threads"}, {"import", "t1", conversationFiles(t)[0]}, {"check"},
		{"copy", m.db, filepath.Join(m.dir, "out.db")}, {"copy", empty, m.db}} {
		code, out, errs := m.run(args...)
		t.Logf("memctl %s: exit %d: %s", args[0], code, strings.TrimSpace(errs))
		if code != 1 {
			t.Errorf("memctl %s: exit %d, want 1 (stderr %q)", strings.Join(args, " "), code, errs)
		}
		if strings.Contains(out+errs, password) {
			t.Errorf("memctl %s printed the password: %s%s", args[0], out, errs)
		}
		if !strings.Contains(errs, where) {
			t.Errorf("memctl %s: the error does not name %s: %q", args[0], where, errs)
		}
	}
}

// fillSource imports every conversation of testdata reps times, each under a thread id of its
// own, into the database name, and returns how many messages it holds.
func fillSource(t *testing.T, name string, reps int) int {
	t.Helper()
	ctx := context.Background()
	s, err := memory.Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	n := 0
	for r := range reps {
		for i, f := range conversationFiles(t) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			res, err := s.Import(ctx, fmt.Sprintf("conv-%d-%d", r, i), bytes.NewReader(data), memory.AppendOptions{})
			if err != nil {
				t.Fatal(err)
			}
			n += res.Appended
		}
	}
	return n
}

// histories returns every thread's history as stored JSON, by thread.
func histories(t *testing.T, name string) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	s, err := memory.Open(ctx, name, memory.OpenOptions{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	threads, err := s.Threads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string][]byte{}
	for _, th := range threads {
		h, err := s.History(ctx, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		msgs := make([]chat.Message, len(h))
		for i, e := range h {
			msgs[i] = e.Message
		}
		b, err := json.Marshal(msgs)
		if err != nil {
			t.Fatal(err)
		}
		out[th.ID] = b
	}
	return out
}

// TestCopyKilledMidway: memctl copy killed with SIGKILL in the middle of its transaction,
// SQLite to PostgreSQL and back, leaves DST without any thread of SRC (PostgreSQL rolls the
// transaction back; SQLite never committed it, the file may remain as an empty database that
// passes check); a second copy then passes and every thread's history reads back identical.
func TestCopyKilledMidway(t *testing.T) {
	t.Parallel() // no environment variable or working directory of the process is changed
	base := pgDatabase(t)
	bin := goBuild(t, "", false) // without -race: it copies thousands of messages, many times
	dir := t.TempDir()
	memctlCmd := func(args ...string) *exec.Cmd {
		cmd := exec.Command(bin, args...)
		cmd.Env = append(os.Environ(), "MEMCTL_CONFIG=", "MEMCTL_DB=", "XDG_CONFIG_HOME="+filepath.Join(dir, "xdg"))
		return cmd
	}
	must := func(args ...string) string {
		t.Helper()
		out, err := memctlCmd(args...).Output()
		if err != nil {
			var ee *exec.ExitError
			if errors.As(err, &ee) {
				t.Fatalf("memctl %s: %v: %s", strings.Join(args, " "), err, ee.Stderr)
			}
			t.Fatalf("memctl %s: %v", strings.Join(args, " "), err)
		}
		return string(out)
	}

	reps := 40
	if testing.Short() {
		reps = 10 // 1,360 messages in 30 threads (5,440 in 120 without -short)
	}
	sqliteSrc := filepath.Join(dir, "src.db")
	n := fillSource(t, sqliteSrc, reps)
	pgSrc := testdb.Schema(t, base)
	fillSource(t, pgSrc, reps)
	t.Logf("each source holds %d messages in %d threads", n, reps*len(conversationFiles(t)))
	want := histories(t, sqliteSrc)

	cases := []struct {
		name string
		// src and dst return the copy's source and a fresh destination, through the proxy
		// when on the server; progress is the proxy's count of the bytes that tell how far
		// the copy went.
		src, dst func(p *testdb.Proxy, i int) string
		progress func(p *testdb.Proxy) int64
	}{
		{"sqlite to postgres",
			func(*testdb.Proxy, int) string { return sqliteSrc },
			func(p *testdb.Proxy, _ int) string { return p.URL(t, testdb.Schema(t, base)) },
			(*testdb.Proxy).Sent},
		{"postgres to sqlite",
			func(p *testdb.Proxy, _ int) string { return p.URL(t, pgSrc) },
			func(_ *testdb.Proxy, i int) string { return filepath.Join(dir, fmt.Sprintf("dst-%d.db", i)) },
			(*testdb.Proxy).Received},
	}
	for ci, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			p := testdb.NewProxy(t, base)
			// A whole copy, to measure how many bytes it moves.
			from := tc.progress(p)
			must("copy", tc.src(p, 0), tc.dst(p, 100+ci))
			total := tc.progress(p) - from
			t.Logf("a whole copy moves %d bytes through the proxy", total)

			dst := tc.dst(p, 200+ci)
			cmd := memctlCmd("copy", tc.src(p, 0), dst)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			from = tc.progress(p)
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			exited := make(chan error, 1)
			go func() { exited <- cmd.Wait() }()
			var err error
		poll:
			for {
				select {
				case err = <-exited:
					t.Fatalf("the copy ended before it was half done (%v): %s%s", err, stdout.String(), stderr.String())
				case <-time.After(time.Millisecond):
					if tc.progress(p)-from >= total/2 {
						cmd.Process.Signal(syscall.SIGKILL)
						err = <-exited
						break poll
					}
				}
			}
			ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus)
			if !ok || !ws.Signaled() || ws.Signal() != syscall.SIGKILL {
				t.Fatalf("the copy was not killed mid-way: %v, stdout %q", err, stdout.String())
			}
			t.Logf("killed after %d of %d bytes", tc.progress(p)-from, total)

			// What the kill left: no thread of SRC, a database that passes check.
			if _, statErr := os.Stat(dst); statErr == nil || strings.Contains(dst, "://") {
				var threads []any
				if err := json.Unmarshal([]byte(must("--db", dst, "threads", "--json")), &threads); err != nil {
					t.Fatal(err)
				}
				if len(threads) != 0 {
					t.Fatalf("DST holds %d threads after the killed copy", len(threads))
				}
				must("--db", dst, "check")
			}

			// A second copy passes, and every history reads back identical.
			must("copy", tc.src(p, 0), dst)
			got := histories(t, dst)
			if len(got) != len(want) {
				t.Fatalf("DST holds %d threads, SRC %d", len(got), len(want))
			}
			for id, w := range want {
				if !bytes.Equal(got[id], w) {
					t.Fatalf("thread %s differs after the copy", id)
				}
			}
		})
	}
}
