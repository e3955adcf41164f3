package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sync"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx", for the bench's schemas
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
	_ "github.com/memcascade/memcascade/db/postgres" // the stores on PostgreSQL
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// The backends a step measures: SQLite always, PostgreSQL when the bench has a server URL.
const (
	sqliteBackend   = "SQLite"
	postgresBackend = "PostgreSQL"
)

// postgresEnv is the variable that gives the PostgreSQL server when -postgres is not set (the
// tests' variable).
const postgresEnv = "MEMCASCADE_TEST_POSTGRES"

func (b *bench) backends() []string {
	if b.postgres == "" {
		return []string{sqliteBackend}
	}
	return []string{sqliteBackend, postgresBackend}
}

// freshDB returns the name of a new, empty database of backend and a function that removes it:
// a file in the bench's directory, or a schema of its own on the PostgreSQL server (the URL with
// its search_path set), dropped with everything in it.
func (b *bench) freshDB(backend, file string) (string, func() error, error) {
	if backend == sqliteBackend {
		dir, err := os.MkdirTemp(b.dir, "db-")
		if err != nil {
			return "", nil, err
		}
		return filepath.Join(dir, file), func() error { return nil }, nil
	}
	if b.pgAdmin == nil {
		admin, err := sql.Open("pgx", b.postgres)
		if err != nil {
			return "", nil, fmt.Errorf("postgres %s: %w", db.Display(b.postgres), err)
		}
		b.pgAdmin = admin
	}
	u, drop, err := testdb.NewSchema(context.Background(), b.pgAdmin, b.postgres, "bench_")
	if err != nil {
		return "", nil, fmt.Errorf("postgres %s: %w", db.Display(b.postgres), err)
	}
	return u, drop, nil
}

// onBackend runs fn on a fresh database of backend (see freshDB) and removes the database
// after it.
func (b *bench) onBackend(backend, file string, fn func(name string) error) error {
	name, drop, err := b.freshDB(backend, file)
	if err != nil {
		return err
	}
	err = fn(name)
	if derr := drop(); err == nil {
		err = derr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", backend, err)
	}
	return nil
}

// writers: appends per second from 1, 4 and 16 concurrent writers of one Store (the library's
// usage: one Store, its pool shared by the goroutines), each append one message in one
// transaction, for a fixed time. Either each writer appends to a thread of its own, or all
// append to one thread, whose seqs must then come out 1..N without a gap or a repeat.
func (b *bench) writers([]conversation) error {
	run := 2 * time.Second
	if b.quick {
		run = 300 * time.Millisecond
	}
	for _, backend := range b.backends() {
		for _, shared := range []bool{false, true} {
			for _, n := range []int{1, 4, 16} {
				var done int
				var d time.Duration
				err := b.onBackend(backend, "writers.db", func(name string) error {
					var err error
					done, d, err = concurrentAppends(name, n, shared, run)
					return err
				})
				if err != nil {
					return err
				}
				shape, writers := "a thread each", "writers"
				if shared {
					shape = "one shared thread"
				}
				if n == 1 {
					writers = "writer"
				}
				b.add(fmt.Sprintf("appends, %d %s, %s, %s (one message each, one Store)", n, writers, shape, backend),
					fmt.Sprintf("%.0f/s (%d in %s)", float64(done)/d.Seconds(), done, d.Round(time.Millisecond)), "", nil)
			}
		}
	}
	return nil
}

// concurrentAppends runs n writers appending one message at a time to the store at name for
// about run, and returns how many appends passed and how long they took. It fails unless every
// thread's messages run 1..N, N the appends to it, and every append got a seq of its own.
func concurrentAppends(name string, n int, shared bool, run time.Duration) (int, time.Duration, error) {
	ctx := context.Background()
	s, err := openStore(name)
	if err != nil {
		return 0, 0, err
	}
	defer s.Close()
	thread := func(w int) string {
		if shared {
			return "shared"
		}
		return fmt.Sprintf("writer-%02d", w)
	}
	seqs := make([][]int64, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := time.Now()
	deadline := start.Add(run)
	for w := range n {
		wg.Go(func() {
			for i := 0; time.Now().Before(deadline); i++ {
				m := chat.TextMessage(chat.RoleUser, fmt.Sprintf("writer %d, append %d: order W%06d", w, i, i))
				res, err := s.Append(ctx, thread(w), []chat.Message{m}, memory.AppendOptions{})
				if err != nil {
					errs[w] = err
					return
				}
				if res.Appended != 1 || res.FirstSeq != res.LastSeq {
					errs[w] = fmt.Errorf("writer %d: append %d wrote %d messages, seqs %d..%d", w, i, res.Appended, res.FirstSeq, res.LastSeq)
					return
				}
				seqs[w] = append(seqs[w], res.LastSeq)
			}
		})
	}
	wg.Wait()
	d := time.Since(start)
	total := 0
	for w := range n {
		if errs[w] != nil {
			return 0, 0, errs[w]
		}
		total += len(seqs[w])
	}
	// What the appends were told, and what the database holds.
	check := func(thread string, got []int64) error {
		slices.Sort(got)
		for i, seq := range got {
			if seq != int64(i+1) {
				return fmt.Errorf("thread %q: the appends got seqs %v..., want 1..%d each once", thread, got[max(0, i-2):min(len(got), i+3)], len(got))
			}
		}
		rows, err := s.DB().Q().ListMessages(ctx, thread)
		if err != nil {
			return err
		}
		if len(rows) != len(got) {
			return fmt.Errorf("thread %q holds %d messages after %d appends", thread, len(rows), len(got))
		}
		for i, r := range rows {
			if r.Seq != int64(i+1) {
				return fmt.Errorf("thread %q: message %d has seq %d, want 1..%d without a gap", thread, i, r.Seq, len(rows))
			}
		}
		t, err := s.Thread(ctx, thread)
		if err != nil {
			return err
		}
		if t.Messages != len(got) {
			return fmt.Errorf("thread %q counts %d messages after %d appends", thread, t.Messages, len(got))
		}
		return nil
	}
	if shared {
		return total, d, check("shared", slices.Concat(seqs...))
	}
	for w := range n {
		if err := check(thread(w), seqs[w]); err != nil {
			return 0, 0, err
		}
	}
	return total, d, nil
}

// manyThreads: listing 100,000 threads (Store.Threads in this process, the median of three,
// and memctl threads as a whole process, once, when the bench has memctl), on each backend.
func (b *bench) manyThreads([]conversation) error {
	n := 100_000
	if b.quick {
		n = 10_000
	}
	for _, backend := range b.backends() {
		err := b.onBackend(backend, "threads.db", func(name string) error {
			ctx := context.Background()
			s, err := openStore(name)
			if err != nil {
				return err
			}
			defer s.Close()
			start := time.Now()
			if err := writeThreads(ctx, s, backend, n); err != nil {
				return fmt.Errorf("write %d threads: %w", n, err)
			}
			fill := time.Since(start)
			var ds []time.Duration
			for range 3 {
				start := time.Now()
				ts, err := s.Threads(ctx)
				if err != nil {
					return err
				}
				ds = append(ds, time.Since(start))
				if len(ts) != n {
					return fmt.Errorf("Threads listed %d threads, want %d", len(ts), n)
				}
			}
			b.add(fmt.Sprintf("Store.Threads, %d threads, %s (written in %s)", n, backend, fill.Round(100*time.Millisecond)), median(ds).Round(100*time.Microsecond).String(), "", nil)
			if b.memctl == "" {
				b.add(fmt.Sprintf("memctl threads, %d threads, %s", n, backend), "not run (needs -memctl)", "", nil)
				return nil
			}
			cmd := exec.Command(b.memctl, "--db", name, "threads", "--json")
			cmd.Dir = b.dir
			d, out, err := timeProcess(cmd)
			if err != nil {
				return err
			}
			var rows []json.RawMessage
			if json.Unmarshal([]byte(out), &rows) != nil || len(rows) != n {
				return fmt.Errorf("memctl threads listed %d threads, want %d", len(rows), n)
			}
			b.add(fmt.Sprintf("memctl threads --json, %d threads, %s (whole process, one run)", n, backend), d.Round(100*time.Microsecond).String(), "", nil)
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// writeThreads writes n threads of one message each in one transaction, fast: on SQLite
// straight through the queries (without the search index, which a listing does not read), on
// PostgreSQL in two statements of its own (one round trip per row would take a minute), then
// checked (every thread's messages run 1..last_seq).
func writeThreads(ctx context.Context, s *memory.Store, backend string, n int) error {
	now := time.Now().UnixMilli()
	raw, _ := json.Marshal(chat.TextMessage(chat.RoleUser, "hello"))
	h := s.DB()
	if backend == postgresBackend {
		tx, err := h.DB.BeginTx(ctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, `INSERT INTO threads (id, model, encoding, metadata, last_seq, open_calls, created_at, updated_at, message_tokens)
SELECT 'thread-' || lpad(i::text, 6, '0'), 'gpt-4o', 'o200k_base', '{}', 1, '[]', $1::bigint + i, $1::bigint + i, 5
FROM generate_series(0, $2 - 1) AS i`, now, n); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO messages (thread_id, seq, role, content, raw, tokens, created_at)
SELECT 'thread-' || lpad(i::text, 6, '0'), 1, 'user', 'hello', $2, 5, $1::bigint + i
FROM generate_series(0, $3 - 1) AS i`, now, string(raw), n); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return err
		}
		// What a server that has run a while knows: the tables' statistics.
		if err := h.Vacuum(ctx); err != nil {
			return err
		}
		return h.Check(ctx)
	}
	return h.WithTx(ctx, func(q db.Querier) error {
		for i := range n {
			id := fmt.Sprintf("thread-%06d", i)
			at := now + int64(i)
			if _, err := q.InsertThread(ctx, db.InsertThreadParams{ID: id, Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}", Settings: "{}", CreatedAt: at, UpdatedAt: at}); err != nil {
				return err
			}
			if err := q.InsertMessage(ctx, db.InsertMessageParams{ThreadID: id, Seq: 1, Role: chat.RoleUser,
				Content: sql.NullString{String: "hello", Valid: true}, Raw: string(raw), Tokens: 5, CreatedAt: at}); err != nil {
				return err
			}
			if err := q.SetThreadTail(ctx, db.SetThreadTailParams{LastSeq: 1, OpenCalls: "[]", UpdatedAt: at, ID: id}); err != nil {
				return err
			}
		}
		return nil
	})
}
