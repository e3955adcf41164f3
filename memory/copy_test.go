package memory_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// copySource fills s with what a copy must carry: three recorded conversations; one compacted
// twice (the second planned on the first: base_id), one with a failed compaction (attempts
// with errors, providers cooling down) and a reverted one, one with thread settings and a
// masking compaction (a view); an attempt of no compaction, and a provider's context window.
func copySource(t *testing.T, s *memory.Store) {
	t.Helper()
	ctx := context.Background()
	files := corpus.Conversations(t)
	threads := []string{"air", "swe", "tau"}
	for i, id := range threads {
		storetest.Import(t, s, id, files[i%len(files)])
	}
	compactWith := func(thread string, c *compact.Compactor) memory.Report {
		t.Helper()
		rep, err := c.Compact(ctx, thread, compact.Options{Force: true})
		if rep.ID == 0 {
			t.Fatalf("compact %s: nothing recorded: %+v, %v", thread, rep, err)
		}
		return rep
	}
	limit := func(thread string) int {
		a, err := s.Active(ctx, thread)
		if err != nil {
			t.Fatal(err)
		}
		return a.Tokens * 6 / 10
	}
	// air: applied, then applied again on top of it after more messages.
	first := compactWith("air", compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: limit("air")}))
	storetest.LongThread2(t, s, "air", 6, 400)
	second := compactWith("air", compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: limit("air")}))
	if first.Status != memory.StatusApplied || second.Status != memory.StatusApplied {
		t.Fatalf("air: %s then %s, want applied twice", first.Status, second.Status)
	}
	// swe: failed (every provider fails: attempts and cooldowns), applied, then reverted.
	if rep := compactWith("swe", compact.New(s, storetest.FailingCascade(s), compact.Settings{TokenLimit: limit("swe")})); rep.Status != memory.StatusFailed {
		t.Fatalf("swe: %s, want failed", rep.Status)
	}
	applied := compactWith("swe", compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: limit("swe")}))
	if _, err := s.Revert(ctx, "", applied.ID); err != nil {
		t.Fatal(err)
	}
	// tau: settings of its own, and a compaction that masks (a view).
	tl := limit("tau")
	if err := compact.SaveThreadSettings(ctx, s, "tau", compact.ThreadSettings{TokenLimit: &tl, Strategy: compact.StrategyHybrid, Model: "gpt-4o-mini"}); err != nil {
		t.Fatal(err)
	}
	compactWith("tau", compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 100000}))
	q := s.DB().Q()
	if _, err := q.InsertAttempt(ctx, db.InsertAttemptParams{Provider: "loose", Model: "m", StartedAt: 1700000000123,
		DurationMs: 42, Outcome: "error", HttpStatus: 503, ErrorClass: "server", Error: "unavailable", PromptTokens: 7}); err != nil {
		t.Fatal(err)
	}
	if err := q.SetContextWindow(ctx, db.SetContextWindowParams{Provider: "offline", ContextWindow: 32768, ContextWindowAt: 1700000000456}); err != nil {
		t.Fatal(err)
	}
}

// storeDump is everything a copy must keep, as the store shows it and as its rows hold it.
type storeDump struct {
	Threads  []memory.Thread
	Settings map[string]compact.ThreadSettings
	Export   map[string]string // thread -> export --all (JSON of the whole history)
	Active   map[string]string // thread -> the active context (JSON of memory.Active)
	Reports  map[int64]string  // compaction id -> JSON of Store.Report
	Search   string            // the hits of a search over messages and summaries

	ThreadRows  []db.Thread
	Messages    map[string][]db.Message // ids cleared: a message's id is the database's own
	Compactions []db.Compaction
	Attempts    []db.CascadeAttempt
	Cooldowns   []db.ProviderCooldown
}

func dumpStore(t *testing.T, s *memory.Store) storeDump {
	t.Helper()
	ctx := context.Background()
	d := storeDump{Settings: map[string]compact.ThreadSettings{}, Export: map[string]string{}, Active: map[string]string{},
		Reports: map[int64]string{}, Messages: map[string][]db.Message{}}
	var err error
	if d.Threads, err = s.Threads(ctx); err != nil {
		t.Fatal(err)
	}
	q := s.DB().Q()
	for _, th := range d.Threads {
		if d.Settings[th.ID], err = compact.ThreadSettingsOf(ctx, s, th.ID); err != nil {
			t.Fatal(err)
		}
		hist, err := s.History(ctx, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		msgs := []chat.Message{}
		for _, e := range hist {
			msgs = append(msgs, e.Message)
		}
		d.Export[th.ID] = asJSON(t, msgs)
		a, err := s.Active(ctx, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		d.Active[th.ID] = asJSON(t, a)
		rows, err := q.ListMessages(ctx, th.ID)
		if err != nil {
			t.Fatal(err)
		}
		for i := range rows {
			rows[i].ID = 0
		}
		d.Messages[th.ID] = rows
	}
	if d.Compactions, err = q.ListAllCompactions(ctx); err != nil {
		t.Fatal(err)
	}
	for _, c := range d.Compactions {
		r, err := s.Report(ctx, c.ID)
		if err != nil {
			t.Fatal(err)
		}
		d.Reports[c.ID] = asJSON(t, r)
	}
	hits, err := s.Search(ctx, "flight", memory.SearchOptions{Limit: 1000})
	if err != nil {
		t.Fatal(err)
	}
	// What was found, in an order of its own: the ranking and the snippets are the backend's.
	found := []string{}
	for _, h := range hits {
		found = append(found, fmt.Sprintf("%s/%d/%s/archived=%v/compaction=%d", h.Thread, h.Seq, h.Role, h.Archived, h.CompactionID))
	}
	slices.Sort(found)
	d.Search = strings.Join(found, "\n")
	if d.ThreadRows, err = q.ListAllThreads(ctx); err != nil {
		t.Fatal(err)
	}
	if d.Attempts, err = q.ListAllAttempts(ctx); err != nil {
		t.Fatal(err)
	}
	if d.Cooldowns, err = q.ListCooldowns(ctx); err != nil {
		t.Fatal(err)
	}
	return d
}

func asJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// sameDump fails t for each part of got that differs from want.
func sameDump(t *testing.T, what string, want, got storeDump) {
	t.Helper()
	parts := []struct {
		name      string
		want, got any
	}{
		{"threads", want.Threads, got.Threads}, {"thread settings", want.Settings, got.Settings},
		{"export --all", want.Export, got.Export}, {"active contexts", want.Active, got.Active},
		{"reports", want.Reports, got.Reports}, {"search", want.Search, got.Search},
		{"thread rows", want.ThreadRows, got.ThreadRows}, {"message rows", want.Messages, got.Messages},
		{"compaction rows", want.Compactions, got.Compactions}, {"attempt rows", want.Attempts, got.Attempts},
		{"cooldown rows", want.Cooldowns, got.Cooldowns},
	}
	for _, p := range parts {
		w, g := asJSON(t, p.want), asJSON(t, p.got)
		if w != g {
			t.Errorf("%s: %s differ:\nwant %s\n got %s", what, p.name, clip(w), clip(g))
		}
	}
}

// clip shortens a long JSON text for an error message, around its first difference when
// possible.
func clip(s string) string {
	if len(s) > 600 {
		return s[:600] + "..."
	}
	return s
}

func openAt(t *testing.T, name string) *memory.Store {
	t.Helper()
	s, err := memory.Open(context.Background(), name)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	return s
}

// TestCopyBetweenBackends: a store with compacted, reverted and failed conversations, thread
// settings, attempts and cooldowns, copied into a new SQLite file and into a new PostgreSQL
// schema, then back into a new store of the source's backend, is the same store each time:
// every thread's export byte for byte, its active context, every report, the search results
// and every row, ids included. The copy passes the destination's check, and the destination
// goes on: a new compaction and attempt take ids past the copied ones.
func TestCopyBetweenBackends(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := storetest.Open(t)
	copySource(t, src)
	want := dumpStore(t, src)
	if len(want.Compactions) < 5 || len(want.Attempts) < 4 || len(want.Cooldowns) < 3 {
		t.Fatalf("the source is too thin to test a copy: %d compactions, %d attempts, %d cooldowns",
			len(want.Compactions), len(want.Attempts), len(want.Cooldowns))
	}
	for _, backend := range []string{testdb.SQLite, testdb.Postgres} {
		t.Run(backend, func(t *testing.T) {
			var name string
			if backend == testdb.SQLite {
				name = filepath.Join(t.TempDir(), "copy.db")
			} else {
				name = testdb.Schema(t, os.Getenv(testdb.Env))
			}
			dst := openAt(t, name)
			res, err := memory.Copy(ctx, src, dst)
			if err != nil {
				t.Fatal(err)
			}
			var msgs int64
			for _, rows := range want.Messages {
				msgs += int64(len(rows))
			}
			if res.Threads != len(want.Threads) || res.Messages != msgs || res.Compactions != len(want.Compactions) ||
				res.Attempts != len(want.Attempts) || res.Cooldowns != len(want.Cooldowns) || res.IDs != memory.IDsKept ||
				res.Renumbered != nil || res.Destination != db.Display(name) {
				t.Fatalf("result %+v", res)
			}
			sameDump(t, "copy", want, dumpStore(t, dst))
			if err := dst.DB().Check(ctx); err != nil {
				t.Fatalf("the copy fails its check: %v", err)
			}

			back := openAt(t, testdb.Name(t, "back.db"))
			if _, err := memory.Copy(ctx, dst, back); err != nil {
				t.Fatal(err)
			}
			sameDump(t, "copied back", want, dumpStore(t, back))

			// The destination goes on after the copied ids.
			maxComp := want.Compactions[len(want.Compactions)-1].ID
			storetest.LongThread2(t, dst, "air", 6, 400)
			a, _ := dst.Active(ctx, "air")
			rep, err := compact.New(dst, storetest.ExtractiveCascade(t, dst), compact.Settings{TokenLimit: a.Tokens * 6 / 10}).
				Compact(ctx, "air", compact.Options{Force: true})
			if err != nil || rep.ID == 0 || rep.ID <= maxComp {
				t.Fatalf("a compaction after the copy: %+v, %v (copied ids up to %d)", rep, err, maxComp)
			}
			id, err := dst.DB().Q().InsertAttempt(ctx, db.InsertAttemptParams{Provider: "p", Model: "m", Outcome: "ok", StartedAt: 1})
			if err != nil || id <= want.Attempts[len(want.Attempts)-1].ID {
				t.Fatalf("an attempt after the copy: id %d, %v", id, err)
			}
		})
	}
}

// TestCopyRefusesHeldThreads: a destination holding one of the source's threads is refused,
// naming the thread and the destination, and is left exactly as it was.
func TestCopyRefusesHeldThreads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := storetest.Open(t)
	copySource(t, src)
	dstName := testdb.Name(t, "dst.db")
	dst := openAt(t, dstName)
	storetest.LongThread(t, dst, "mine", 3, 200)
	storetest.LongThread(t, dst, "swe", 2, 100)
	if _, err := dst.DB().Q().InsertAttempt(ctx, db.InsertAttemptParams{Provider: "p", Model: "m", Outcome: "ok", StartedAt: 1}); err != nil {
		t.Fatal(err)
	}
	before := dumpStore(t, dst)
	res, err := memory.Copy(ctx, src, dst)
	if !errors.Is(err, memory.ErrCopyConflict) {
		t.Fatalf("copy onto a held thread: %+v, %v", res, err)
	}
	for _, part := range []string{`"swe"`, db.Display(dstName), "1 of its 3 threads"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("the error %q does not name %s", err, part)
		}
	}
	if strings.Contains(err.Error(), `"air"`) {
		t.Errorf("the error %q names a thread the destination does not hold", err)
	}
	sameDump(t, "refused copy", before, dumpStore(t, dst))

	// A store onto its own file: refused before anything is read.
	if testdb.Backend() == testdb.SQLite {
		if _, err := memory.Copy(ctx, dst, dst); !errors.Is(err, memory.ErrCopySame) {
			t.Fatalf("copy onto itself: %v", err)
		}
	}
}

// TestCopyRenumbers: into a destination that already has compactions and attempts of its own,
// the copied ones take new ids, in the same order; each report is the source's but for its id,
// base_id and the attempts' compaction ids follow the new ids, the active contexts name the new
// summaries, and the destination's own thread is untouched.
func TestCopyRenumbers(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := storetest.Open(t)
	copySource(t, src)
	want := dumpStore(t, src)
	dst := openAt(t, testdb.Name(t, "dst.db"))
	storetest.Import(t, dst, "other", corpus.Airline)
	a, _ := dst.Active(ctx, "other")
	for range 2 {
		if rep, err := compact.New(dst, storetest.ExtractiveCascade(t, dst), compact.Settings{TokenLimit: a.Tokens * 6 / 10}).
			Compact(ctx, "other", compact.Options{Force: true}); err != nil || rep.ID == 0 {
			t.Fatalf("%+v, %v", rep, err)
		}
	}
	own := dumpStore(t, dst)
	res, err := memory.Copy(ctx, src, dst)
	if err != nil {
		t.Fatal(err)
	}
	if res.IDs != memory.IDsRenumbered || res.CompactionIDs != memory.IDsRenumbered || res.AttemptIDs != memory.IDsRenumbered ||
		len(res.Renumbered) != len(want.Compactions) {
		t.Fatalf("result %+v", res)
	}
	got := dumpStore(t, dst)
	if got.Active["other"] != own.Active["other"] || got.Export["other"] != own.Export["other"] {
		t.Error("the destination's own thread changed")
	}
	mapped := func(id int64) int64 {
		n, ok := res.Renumbered[id]
		if !ok {
			t.Fatalf("compaction %d has no new id", id)
		}
		return n
	}
	var prev int64
	byID := map[int64]db.Compaction{}
	for _, c := range got.Compactions {
		byID[c.ID] = c
	}
	for _, c := range want.Compactions {
		n := mapped(c.ID)
		if n <= prev || n <= own.Compactions[len(own.Compactions)-1].ID {
			t.Fatalf("compaction %d became %d: not after the destination's and the previous ones", c.ID, n)
		}
		prev = n
		g, ok := byID[n]
		if !ok {
			t.Fatalf("compaction %d (was %d) is missing", n, c.ID)
		}
		if c.BaseID.Valid != g.BaseID.Valid || (c.BaseID.Valid && g.BaseID.Int64 != mapped(c.BaseID.Int64)) {
			t.Errorf("compaction %d: base_id %v, want the new id of %v", n, g.BaseID, c.BaseID)
		}
		if c.LedgerBase.Valid != g.LedgerBase.Valid || (c.LedgerBase.Valid && g.LedgerBase.Int64 != mapped(c.LedgerBase.Int64)) {
			t.Errorf("compaction %d: ledger_base %v, want the new id of %v", n, g.LedgerBase, c.LedgerBase)
		}
		wc, gc := c, g
		wc.ID, gc.ID, wc.BaseID, gc.BaseID = 0, 0, sql.NullInt64{}, sql.NullInt64{}
		wc.LedgerBase, gc.LedgerBase = sql.NullInt64{}, sql.NullInt64{}
		// A view names the compaction whose summary it holds: the new id.
		var v struct {
			Summary int64 `json:"summary"`
		}
		if json.Unmarshal([]byte(c.View), &v); v.Summary != 0 {
			wc.View = strings.Replace(wc.View, fmt.Sprintf(`"summary":%d,`, v.Summary), fmt.Sprintf(`"summary":%d,`, mapped(v.Summary)), 1)
		}
		if wc != gc {
			t.Errorf("compaction %d (was %d) differs:\nwant %+v\n got %+v", n, c.ID, wc, gc)
		}
		var wr, gr memory.Report
		json.Unmarshal([]byte(want.Reports[c.ID]), &wr)
		json.Unmarshal([]byte(got.Reports[n]), &gr)
		if gr.ID != n {
			t.Errorf("report %d has id %d", n, gr.ID)
		}
		wr.ID, gr.ID = 0, 0
		if asJSON(t, wr) != asJSON(t, gr) {
			t.Errorf("report %d (was %d) differs beyond its id:\nwant %s\n got %s", n, c.ID, clip(asJSON(t, wr)), clip(asJSON(t, gr)))
		}
	}
	// The attempts: the source's after the destination's, their compactions renumbered.
	gotAtt := got.Attempts[len(own.Attempts):]
	if len(gotAtt) != len(want.Attempts) || asJSON(t, got.Attempts[:len(own.Attempts)]) != asJSON(t, own.Attempts) {
		t.Fatalf("%d attempts after the copy, want %d + %d", len(got.Attempts), len(own.Attempts), len(want.Attempts))
	}
	for i, w := range want.Attempts {
		g := gotAtt[i]
		if w.CompactionID.Valid {
			w.CompactionID.Int64 = mapped(w.CompactionID.Int64)
		}
		w.ID, g.ID = 0, 0
		if w != g {
			t.Errorf("attempt %d differs:\nwant %+v\n got %+v", i, w, g)
		}
	}
	// The active contexts name the new compaction ids (of their summary, Current); otherwise the same.
	for id, js := range want.Active {
		var wa, ga memory.Active
		json.Unmarshal([]byte(js), &wa)
		json.Unmarshal([]byte(got.Active[id]), &ga)
		if wa.Summary != 0 {
			wa.Summary = mapped(wa.Summary)
		}
		if wa.Current != 0 {
			wa.Current = mapped(wa.Current)
		}
		for i := range wa.Entries {
			if wa.Entries[i].CompactionID != 0 {
				wa.Entries[i].CompactionID = mapped(wa.Entries[i].CompactionID)
			}
		}
		if asJSON(t, wa) != asJSON(t, ga) {
			t.Errorf("thread %s: active context differs:\nwant %s\n got %s", id, clip(asJSON(t, wa)), clip(asJSON(t, ga)))
		}
		if want.Export[id] != got.Export[id] {
			t.Errorf("thread %s: export differs", id)
		}
	}
	if err := dst.DB().Check(ctx); err != nil {
		t.Fatal(err)
	}
}

// TestCopyCooldownsMerge: a provider in both databases keeps the later cooling_until, and the
// context window reported last.
func TestCopyCooldownsMerge(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src, _ := storetest.Open(t)
	dst := openAt(t, testdb.Name(t, "dst.db"))
	now := time.Now().UnixMilli()
	put := func(s *memory.Store, provider string, until, failures int64, window, windowAt int64) {
		t.Helper()
		q := s.DB().Q()
		if err := q.UpsertCooldown(ctx, db.UpsertCooldownParams{Provider: provider, CoolingUntil: until, ConsecutiveFailures: failures,
			LastError: provider + " failed", UpdatedAt: until - 1000}); err != nil {
			t.Fatal(err)
		}
		if err := q.SetContextWindow(ctx, db.SetContextWindowParams{Provider: provider, ContextWindow: window, ContextWindowAt: windowAt}); err != nil {
			t.Fatal(err)
		}
	}
	put(src, "a", now+60000, 3, 8000, now-10) // cools longer in the source, older window
	put(dst, "a", now+1000, 1, 16000, now)
	put(src, "b", now+1000, 1, 4000, now) // cools longer in the destination, newer window
	put(dst, "b", now+90000, 5, 2000, now-10)
	put(src, "c", 0, 0, 0, 0) // only in the source
	res, err := memory.Copy(ctx, src, dst)
	if err != nil || res.Cooldowns != 3 {
		t.Fatalf("%+v, %v", res, err)
	}
	rows, err := dst.DB().Q().ListCooldowns(ctx)
	if err != nil {
		t.Fatal(err)
	}
	want := []db.ProviderCooldown{
		{Provider: "a", CoolingUntil: now + 60000, ConsecutiveFailures: 3, LastError: "a failed", UpdatedAt: now + 59000, ContextWindow: 16000, ContextWindowAt: now},
		{Provider: "b", CoolingUntil: now + 90000, ConsecutiveFailures: 5, LastError: "b failed", UpdatedAt: now + 89000, ContextWindow: 4000, ContextWindowAt: now},
		{Provider: "c", LastError: "c failed", UpdatedAt: -1000},
	}
	if asJSON(t, rows) != asJSON(t, want) {
		t.Fatalf("cooldowns after the copy:\n got %+v\nwant %+v", rows, want)
	}
}
