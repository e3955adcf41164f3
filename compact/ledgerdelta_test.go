package compact_test

import (
	"context"
	"os"
	"slices"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/lifesim"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// ledgerLife is one life of TestLedgerDifferences: its store, and each applied row's ledger as
// a compaction reads it.
type ledgerLife struct {
	s       *memory.Store
	rows    []db.Compaction
	ledgers map[int64][]facts.Fact
	bytes   int   // the ledger column's bytes over the rows
	chained int   // rows stored as a difference
	passes  int   // rows of more than one pass
	file    int64 // the SQLite file's size once its write-ahead log is checkpointed (0: PostgreSQL)
}

func liveLedgerLife(t *testing.T, msgs []chat.Message, kind string, whole bool) ledgerLife {
	t.Helper()
	defer compact.SetWholeLedgers(whole)()
	ctx := context.Background()
	s, path := storetest.Open(t)
	if _, err := lifesim.Simulate(ctx, s, msgs, 1500, kind, t.Logf); err != nil {
		t.Fatal(err)
	}
	l := ledgerLife{s: s, ledgers: map[int64][]facts.Fact{}}
	rows, err := s.DB().Q().ListAllCompactions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	l.rows = rows
	if s.DB().Backend == "sqlite" {
		if _, err := s.DB().DB.ExecContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)"); err != nil {
			t.Fatal(err)
		}
		fi, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		l.file = fi.Size()
	}
	c := compact.New(s, nil, compact.Settings{TokenLimit: 1500})
	for _, r := range rows {
		l.bytes += len(r.Ledger)
		if r.LedgerBase.Valid {
			l.chained++
		}
		if r.Passes > 1 {
			l.passes++
		}
		fs, _, err := c.StoredLedger(ctx, r.ID)
		if err != nil {
			t.Fatalf("compaction %d: %v", r.ID, err)
		}
		l.ledgers[r.ID] = fs
	}
	return l
}

// TestLedgerDifferences: a 300-turn life at 1,500 tokens (the generated thread of 50 tasks),
// lived twice on the same summarizer, once storing every ledger whole as before and once as
// differences: every summary's ledger reads back the same facts, fact for fact, and the ledgers
// of the second total under twice the thread's message bytes (the whole ones, many times
// that). A revert brings back a summary whose ledger still reads the same, and the compaction
// after it writes its ledger as the difference from it; a copy into a database whose ids are
// taken renumbers the rows and their bases, and every ledger reads the same there. Under -short
// (the race run) the life has 40 tasks, not 50: its whole ledgers, which grow with the square of
// its length, are most of the test's time, and it still makes over 20 compactions.
func TestLedgerDifferences(t *testing.T) {
	ctx := context.Background()
	tasks := 50
	if testing.Short() {
		tasks = 40
	}
	msgs := lifesim.Generated(tasks)
	msgBytes := 0
	for _, m := range msgs {
		b, err := m.MarshalJSON()
		if err != nil {
			t.Fatal(err)
		}
		msgBytes += len(b)
	}
	for _, kind := range []string{"offline", "third"} {
		t.Run(kind, func(t *testing.T) {
			old := liveLedgerLife(t, msgs, kind, true)
			now := liveLedgerLife(t, msgs, kind, false)
			t.Logf("%d turns, %d message bytes, %d compactions: ledgers whole %d bytes, as differences %d bytes (%d rows of %d chained, %d of several passes); database files %d KiB and %d KiB",
				len(msgs), msgBytes, len(now.rows), old.bytes, now.bytes, now.chained, len(now.rows), now.passes, old.file/1024, now.file/1024)
			if len(old.rows) != len(now.rows) || len(now.rows) < 10 {
				t.Fatalf("%d compactions storing whole ledgers, %d storing differences: want the same life, of 10 at least", len(old.rows), len(now.rows))
			}
			for i, r := range now.rows {
				o := old.rows[i]
				if o.ID != r.ID || o.Summary != r.Summary || o.Status != r.Status {
					t.Fatalf("compaction %d: not the same life (%d %s, %d %s)", r.ID, o.ID, o.Status, r.ID, r.Status)
				}
				if o.LedgerBase.Valid || o.Ledger != "" && o.Ledger[0] != '[' {
					t.Fatalf("compaction %d of the whole life stored a difference", o.ID)
				}
				want, got := old.ledgers[r.ID], now.ledgers[r.ID]
				if len(want) == 0 {
					t.Fatalf("compaction %d stored no ledger", r.ID)
				}
				if !slices.Equal(got, want) {
					t.Fatalf("compaction %d (base %v): the ledger read back differs from the whole one:\n got %v\nwant %v", r.ID, r.LedgerBase, got, want)
				}
			}
			if now.chained < len(now.rows)/2 {
				t.Errorf("%d of %d rows stored as a difference", now.chained, len(now.rows))
			}
			if now.bytes >= 2*msgBytes {
				t.Errorf("ledgers total %d bytes, not under twice the %d message bytes", now.bytes, msgBytes)
			}
			if old.bytes < 4*now.bytes {
				t.Errorf("whole ledgers total %d bytes, differences %d: want a fourth at most", old.bytes, now.bytes)
			}
			checkRevertKeepsLedger(t, ctx, now, old)
			checkCopyKeepsLedgers(t, ctx, now)
		})
	}
}

// checkRevertKeepsLedger reverts l's latest compaction: the summary it brings back reads the
// ledger it had, and a compaction after it stores its ledger as the difference from it.
func checkRevertKeepsLedger(t *testing.T, ctx context.Context, l, old ledgerLife) {
	t.Helper()
	rep, err := l.s.Revert(ctx, lifesim.Thread, 0)
	if err != nil {
		t.Fatal(err)
	}
	a, err := l.s.Active(ctx, lifesim.Thread)
	if err != nil {
		t.Fatal(err)
	}
	back := int64(0)
	for _, e := range a.Entries {
		if e.CompactionID != 0 {
			back = e.CompactionID
		}
	}
	if back == 0 || back >= rep.ID {
		t.Fatalf("after reverting %d the context holds the summary of compaction %d", rep.ID, back)
	}
	c := compact.New(l.s, storetest.ExtractiveCascade(t, l.s), compact.Settings{TokenLimit: 1500})
	fs, _, err := c.StoredLedger(ctx, back)
	if err != nil || !slices.Equal(fs, old.ledgers[back]) {
		t.Fatalf("after the revert, compaction %d's ledger: %v (%d facts, want %d)", back, err, len(fs), len(old.ledgers[back]))
	}
	next, err := c.Compact(ctx, lifesim.Thread, compact.Options{Force: true})
	if err != nil || next.Status != memory.StatusApplied {
		t.Fatalf("compaction after the revert: %v (%s)", err, next.Status)
	}
	_, base, err := l.s.Compactions().Ledger(ctx, next.ID)
	if err != nil || base != back {
		t.Fatalf("compaction %d after the revert: ledger base %d (%v), want %d", next.ID, base, err, back)
	}
	fs, chain, err := c.StoredLedger(ctx, next.ID)
	if err != nil || chain == 0 || !containsAll(fs, old.ledgers[back]) {
		t.Fatalf("compaction %d after the revert: %d facts through %d differences (%v), not all of compaction %d's", next.ID, len(fs), chain, err, back)
	}
}

// containsAll reports whether every fact of sub has its kind and text in fs.
func containsAll(fs, sub []facts.Fact) bool {
	in := map[[2]string]bool{}
	for _, f := range fs {
		in[[2]string{string(f.Kind), f.Text}] = true
	}
	for _, f := range sub {
		if !in[[2]string{string(f.Kind), f.Text}] {
			return false
		}
	}
	return true
}

// checkCopyKeepsLedgers copies l's database into one whose compaction ids are taken: every
// ledger reads back the same under its new id.
func checkCopyKeepsLedgers(t *testing.T, ctx context.Context, l ledgerLife) {
	t.Helper()
	dst, _ := storetest.Open(t)
	if _, err := dst.Append(ctx, "other", lifesim.Generated(4), memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	if rep, err := compact.New(dst, storetest.ExtractiveCascade(t, dst), compact.Settings{TokenLimit: 1500}).Compact(ctx, "other", compact.Options{Force: true}); err != nil || rep.ID == 0 {
		t.Fatalf("compaction of the destination's thread: %v", err)
	}
	res, err := memory.Copy(ctx, l.s, dst)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Renumbered) == 0 {
		t.Fatalf("copy kept the ids (%s): want them renumbered", res.IDs)
	}
	src := compact.New(l.s, nil, compact.Settings{TokenLimit: 1500})
	c := compact.New(dst, nil, compact.Settings{TokenLimit: 1500})
	chained := 0
	for from, to := range res.Renumbered {
		want, _, err := src.StoredLedger(ctx, from)
		if err != nil {
			t.Fatal(err)
		}
		got, chain, err := c.StoredLedger(ctx, to)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("compaction %d copied as %d: %v, %d facts, want %d", from, to, err, len(got), len(want))
		}
		if chain > 0 {
			chained++
		}
	}
	if chained == 0 {
		t.Fatal("no copied ledger was read through a difference")
	}
}

// TestLedgerDifferenceOfSecondPass: a compaction of two passes, the second folding the first's
// summary in, writes its row's ledger as the difference from the summary the first pass folded
// (never from its own row), and reads back the ledger the same compaction stores whole.
func TestLedgerDifferenceOfSecondPass(t *testing.T) {
	ctx := context.Background()
	msgs := lifesim.Generated(40)
	tasks := func(from, to int) []chat.Message { return msgs[2+6*from : 2+6*to] }
	live := func(whole bool) (*memory.Store, []db.Compaction) {
		defer compact.SetWholeLedgers(whole)()
		s, _ := storetest.Open(t)
		if _, err := s.Append(ctx, "t", msgs[:2+6*24], memory.AppendOptions{Model: "gpt-4o"}); err != nil {
			t.Fatal(err)
		}
		a, err := s.Active(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		limit := a.Tokens / 2
		burst := false
		fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
			if burst { // while the second compaction's first pass summarizes, a burst: a second pass follows
				burst = false
				if _, err := s.Append(ctx, "t", tasks(28, 40), memory.AppendOptions{Model: "gpt-4o"}); err != nil {
					return llm.Response{}, err
				}
			}
			return llm.Response{Text: "The agent moved reservations.", FinishReason: "stop"}, nil
		}}
		c := compact.New(s, cascade.New(s.DB(), fakeEntry("f", fake, 0)), compact.Settings{TokenLimit: limit, SummaryMaxTokens: 300})
		if rep, err := c.Compact(ctx, "t", compact.Options{Force: true}); err != nil || rep.Status != memory.StatusApplied {
			t.Fatalf("first compaction: %v (%s)", err, rep.Status)
		}
		if _, err := s.Append(ctx, "t", tasks(24, 28), memory.AppendOptions{Model: "gpt-4o"}); err != nil {
			t.Fatal(err)
		}
		burst = true
		rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
		if err != nil || rep.Passes != 2 {
			t.Fatalf("second compaction: %v, %d passes, want 2", err, rep.Passes)
		}
		rows, err := s.DB().Q().ListAllCompactions(ctx)
		if err != nil || len(rows) != 2 {
			t.Fatalf("%d compactions (%v), want 2", len(rows), err)
		}
		return s, rows
	}
	olds, oldRows := live(true)
	s, rows := live(false)
	if !rows[1].LedgerBase.Valid || rows[1].LedgerBase.Int64 != rows[0].ID {
		t.Fatalf("the second compaction's ledger_base is %v, want %d", rows[1].LedgerBase, rows[0].ID)
	}
	oc, c := compact.New(olds, nil, compact.Settings{TokenLimit: 1000}), compact.New(s, nil, compact.Settings{TokenLimit: 1000})
	for i, r := range rows {
		want, _, err := oc.StoredLedger(ctx, oldRows[i].ID)
		if err != nil || len(want) == 0 {
			t.Fatalf("compaction %d stored whole: %d facts, %v", oldRows[i].ID, len(want), err)
		}
		got, _, err := c.StoredLedger(ctx, r.ID)
		if err != nil || !slices.Equal(got, want) {
			t.Fatalf("compaction %d: %v; the ledger read back differs from the whole one:\n got %v\nwant %v", r.ID, err, got, want)
		}
	}
}
