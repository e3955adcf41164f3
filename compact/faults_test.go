package compact_test

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// Faults of the PostgreSQL backend: the connection to the server is cut (testdb.Proxy) while
// the store writes. Nothing committed may be lost, nothing may be half written.

// thenCut is a summarizer that calls cut once its summary is ready, before the compactor
// commits it.
type thenCut struct {
	inner compact.Summarizer
	cut   func()
}

func (c thenCut) Run(ctx context.Context, id int64, task llm.Task) (llm.Result, error) {
	r, err := c.inner.Run(ctx, id, task)
	c.cut()
	return r, err
}

// compactionRow is what a compaction row holds, read directly.
type compactionRow struct {
	id                    int64
	status                memory.Status
	errText               string
	summary, view, fromTo bool // the columns a commit fills are set
}

func compactionRows(t *testing.T, d *sql.DB, thread string) []compactionRow {
	t.Helper()
	rows, err := d.QueryContext(context.Background(), `SELECT id, status, error, summary IS NOT NULL,
  view IS NOT NULL AND view <> '', from_seq IS NOT NULL AND to_seq IS NOT NULL
FROM compactions WHERE thread_id = $1 ORDER BY id`, thread)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []compactionRow
	for rows.Next() {
		var r compactionRow
		if err := rows.Scan(&r.id, &r.status, &r.errText, &r.summary, &r.view, &r.fromTo); err != nil {
			t.Fatal(err)
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestFaultCompactionCommitCut: the connection is cut at points all through what a compaction
// writes once its summary is ready (its commit, its final figures). The compaction either was
// applied whole, or ends failed (or running, then marked failed at a later open by the lease
// rule) with the active context as it was before and no summary in force; a new compaction
// then passes.
func TestFaultCompactionCommitCut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data, err := os.ReadFile("../testdata/conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	base := testdb.PostgresOnly(t, "a connection cut while a compaction commits")

	// setup imports the conversation through a proxy and returns the store, its proxy and the
	// active context's messages.
	setup := func(t *testing.T) (string, *memory.Store, *testdb.Proxy, []byte) {
		schema := testdb.Schema(t, base)
		s, p := storetest.FaultStore(t, schema)
		if _, err := s.Import(ctx, "t", bytes.NewReader(data), memory.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		a, err := s.Active(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(a.Messages())
		return schema, s, p, b
	}
	settings := func(s *memory.Store) compact.Settings {
		a, _ := s.Active(ctx, "t")
		return compact.Settings{TokenLimit: a.Tokens / 2}
	}

	// How many bytes the compaction sends once its summary is ready.
	_, s, p, _ := setup(t)
	var from int64
	c := compact.New(s, thenCut{storetest.ExtractiveCascade(t, s), func() { from = p.Sent() }}, settings(s))
	if rep, err := c.Compact(ctx, "t", compact.Options{Force: true}); err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compaction without a cut: %s, %v", rep.Status, err)
	}
	total := p.Sent() - from
	t.Logf("a compaction sends %d bytes once its summary is ready", total)

	const commitSlack = 64
	// try cuts the connection after cut bytes, checks what is left, and returns the status
	// the compaction ended with.
	try := func(t *testing.T, cut int64) memory.Status {
		schema, s, p, before := setup(t)
		c := compact.New(s, thenCut{storetest.ExtractiveCascade(t, s), func() { p.CutAfter(cut) }}, settings(s))
		rep, cerr := c.Compact(ctx, "t", compact.Options{Force: true})
		if p.Cuts() == 0 {
			// What a compaction sends varies by a few bytes from run to run (the figures in
			// its rows): a cut within commitSlack of the whole may fall after this run's last
			// byte, its commit sent whole.
			if cut < total-commitSlack || cerr != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("the compaction ended before the cut: %s, %v", rep.Status, cerr)
			}
			t.Logf("this run sent its whole commit in fewer than %d bytes", cut)
			return memory.StatusApplied
		}
		t.Logf("compact: %s, %v", rep.Status, cerr)
		if cerr == nil && rep.Status != memory.StatusApplied {
			t.Fatalf("no error, status %s", rep.Status)
		}

		// A later open, once any lease ran out.
		later := func() time.Time { return time.Now().Add(time.Hour) }
		s2, err := memory.Open(ctx, schema, memory.OpenOptions{Options: memory.Options{Now: later}})
		if err != nil {
			t.Fatal(err)
		}
		defer s2.Close()
		rows := compactionRows(t, storetest.Direct(t, schema), "t")
		if len(rows) != 1 {
			t.Fatalf("%d compaction rows, want 1", len(rows))
		}
		r := rows[0]
		a, err := s2.Active(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		after, _ := json.Marshal(a.Messages())
		switch r.status {
		case memory.StatusApplied:
			if !r.summary || !r.fromTo || bytes.Equal(before, after) {
				t.Fatalf("applied row: summary %v, range %v, context changed %v", r.summary, r.fromTo, !bytes.Equal(before, after))
			}
			if rep.Status != memory.StatusApplied {
				t.Errorf("the compaction was applied but reported %s (%v)", rep.Status, cerr)
			}
		case memory.StatusFailed:
			if !bytes.Equal(before, after) {
				t.Fatal("the active context changed although the compaction failed")
			}
			if r.summary || r.view || r.fromTo {
				t.Fatalf("a failed compaction holds what a commit writes: summary %v, view %v, range %v", r.summary, r.view, r.fromTo)
			}
			if cerr == nil {
				t.Fatal("the compaction failed but Compact returned no error")
			}
		default:
			t.Fatalf("after a later open the compaction is %s (%q)", r.status, r.errText)
		}

		// A new compaction runs: nothing the cut left (a lease, a running row) stands in its
		// way. After an applied one, its middle may be the summary alone, which is ineffective
		// (a summary is never re-summarized alone, and here the pinned messages and the newest
		// unit keep the context over the halved limit whatever is summarized): an answer, not
		// a block.
		c2 := compact.New(s2, storetest.ExtractiveCascade(t, s2), settings(s2))
		rep2, err := c2.Compact(ctx, "t", compact.Options{Force: true})
		summaryAlone := r.status == memory.StatusApplied && rep2.Status == memory.StatusIneffective
		if !summaryAlone && (err != nil || rep2.Status != memory.StatusApplied) {
			t.Fatalf("a new compaction: %s, %v", rep2.Status, err)
		}
		return r.status
	}

	// Cuts all through, then a search for the first byte count at which the commit reaches
	// the server whole: cut there, the compaction is committed and its answer is lost.
	// The cuts all through run in parallel (each on a schema and a proxy of its own); under
	// -short every fourth of them. The search then starts from the highest failed cut below the
	// lowest applied one.
	step := max(total/16, 1)
	if testing.Short() {
		step = max(total/4, 1)
	}
	var mu sync.Mutex
	statuses := map[int64]memory.Status{}
	t.Run("all through", func(t *testing.T) {
		for k := int64(0); k < total; k += step {
			t.Run(fmt.Sprint("cut after ", k, " bytes"), func(t *testing.T) {
				t.Parallel()
				st := try(t, k)
				mu.Lock()
				statuses[k] = st
				mu.Unlock()
			})
		}
	})
	failed, applied := int64(-1), total
	for k, st := range statuses {
		if st == memory.StatusApplied {
			applied = min(applied, k)
		}
	}
	for k, st := range statuses {
		if st != memory.StatusApplied && k < applied {
			failed = max(failed, k)
		}
	}
	for failed+1 < applied && !t.Failed() {
		k := (failed + applied) / 2
		t.Run(fmt.Sprint("cut after ", k, " bytes"), func(t *testing.T) {
			if try(t, k) == memory.StatusApplied {
				applied = k
			} else {
				failed = k
			}
		})
	}
	t.Logf("cut after %d bytes the commit reached the server, after %d it did not", applied, failed)
}

// TestFaultCascadeWritesCut: the connection is cut while the cascade records its attempts and
// cooldowns (a first provider fails, its cooldown is written; a second answers). Compact
// still returns a result, the report or the error naming what happened; the active context
// is either as before or a committed compaction's; the thread stays whole.
func TestFaultCascadeWritesCut(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	data, err := os.ReadFile("../testdata/conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	base := testdb.PostgresOnly(t, "a connection cut while the cascade writes")
	step := int64(250)
	if testing.Short() {
		step = 750 // every third cut point
	}
	for cut := int64(0); cut < 4000; cut += step {
		t.Run(fmt.Sprint("cut after ", cut, " bytes"), func(t *testing.T) {
			t.Parallel() // a schema and a proxy of its own
			schema := testdb.Schema(t, base)
			s, p := storetest.FaultStore(t, schema)
			if _, err := s.Import(ctx, "t", bytes.NewReader(data), memory.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			a, _ := s.Active(ctx, "t")
			failing := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
				p.CutAfter(cut)
				return llm.Response{}, fmt.Errorf("HTTP 503: overloaded")
			}}
			c, err := s.Counter(tokencount.EncodingO200k)
			if err != nil {
				t.Fatal(err)
			}
			casc := cascade.New(s.DB(),
				cascade.Entry{Name: "a", Type: "fake", Model: "m1", Provider: failing, MaxAttempts: 2, Cooldown: time.Second, MaxCooldown: time.Minute},
				cascade.Entry{Name: "offline", Type: "extractive", Model: "extractive", Provider: extractive.Summarizer{Count: c.CountText},
					MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
			rep, err := compact.New(s, casc, compact.Settings{TokenLimit: a.Tokens / 2}).Compact(ctx, "t", compact.Options{Force: true})
			t.Logf("compact: %s, %v", rep.Status, err)
			if err == nil && rep.Status != memory.StatusApplied {
				t.Fatalf("no error, status %s", rep.Status)
			}
			if err != nil && err.Error() == "" {
				t.Fatal("an empty error")
			}
			if err := s.DB().Check(ctx); err != nil {
				t.Fatalf("check after the cut: %v", err)
			}
			if n, top, last := storetest.ThreadRows(t, storetest.Direct(t, schema), "t"); n != top || n != last {
				t.Fatalf("thread: %d messages, top seq %d, last_seq %d", n, top, last)
			}
		})
	}
}
