package memory_test

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// appendTurns appends to each thread its messages in turns of `turn` messages, the threads
// taking turns: their rows interleave in the database, as those of agents writing at once.
func appendTurns(t *testing.T, s *memory.Store, threads map[string][]chat.Message, turn int) {
	t.Helper()
	ctx := context.Background()
	names := slices.Sorted(func(yield func(string) bool) {
		for k := range threads {
			if !yield(k) {
				return
			}
		}
	})
	for at := 0; ; at += turn {
		more := false
		for _, name := range names {
			msgs := threads[name]
			if at >= len(msgs) {
				continue
			}
			more = true
			if _, err := s.Append(ctx, name, msgs[at:min(at+turn, len(msgs))], memory.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		if !more {
			return
		}
	}
}

func texts(role string, ss ...string) []chat.Message {
	var out []chat.Message
	for _, s := range ss {
		out = append(out, chat.TextMessage(role, s))
	}
	return out
}

// TestSearchThreadRanksAmongItsOwnRows: a thread's search ranks its hits by the thread's own
// statistics, so it gives the same hits in the same order whatever other threads hold. In the
// thread "alpha" is rare and "beta" in every row; in the other thread "alpha" is in every row
// and "beta" in none: ranked over the whole database, the row with "beta" twice comes first
// (SQLite's bm25 weighs each word by the rows of the whole index that hold it), ranked over
// the thread the row with "alpha" twice does.
func TestSearchThreadRanksAmongItsOwnRows(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	mine := texts("user", "alpha alpha beta pad", "alpha beta beta pad")
	for i := range 18 {
		mine = append(mine, chat.TextMessage("assistant", fmt.Sprintf("beta pad pad filler%d", i)))
	}
	var other []chat.Message
	for i := range 200 {
		other = append(other, chat.TextMessage("user", fmt.Sprintf("alpha pad pad other%d", i)))
	}
	alone, _ := storetest.Open(t)
	appendTurns(t, alone, map[string][]chat.Message{"mine": mine}, 5)
	among, _ := storetest.Open(t)
	appendTurns(t, among, map[string][]chat.Message{"mine": mine, "other": other}, 3)

	opt := memory.SearchOptions{Thread: "mine", Limit: 100}
	want, err := alone.Search(ctx, "alpha beta", opt)
	if err != nil {
		t.Fatal(err)
	}
	got, err := among.Search(ctx, "alpha beta", opt)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].Seq != 1 || got[1].Seq != 2 {
		t.Fatalf("the thread's hits %+v, want seq 1 (alpha twice) then 2", got)
	}
	if !slices.EqualFunc(got, want, sameHit) {
		t.Fatalf("the thread's hits among another thread:\n%+v\nalone:\n%+v", got, want)
	}
	global, err := among.Search(ctx, "alpha beta", memory.SearchOptions{Limit: 100})
	if err != nil {
		t.Fatal(err)
	}
	global = slices.DeleteFunc(global, func(h memory.SearchHit) bool { return h.Thread != "mine" })
	if len(global) != 2 {
		t.Fatalf("the thread's hits of a global search: %+v", global)
	}
	if testdb.Backend() == testdb.SQLite && global[0].Seq != 2 {
		// The case differs only if the whole database's statistics rank otherwise.
		t.Fatalf("a global search ranks seq %d first, want 2 (beta is rare in the database)", global[0].Seq)
	}
	// A query of one word every row of the thread holds: every row, the thread's only.
	got, err = among.Search(ctx, "pad", opt)
	if err != nil || len(got) != 20 {
		t.Fatalf("%d hits of a word of each of the thread's 20 rows (%v)", len(got), err)
	}
	for _, h := range got {
		if h.Thread != "mine" {
			t.Fatalf("hit of thread %q in a search of thread mine", h.Thread)
		}
	}
}

func sameHit(a, b memory.SearchHit) bool {
	return a.Thread == b.Thread && a.Seq == b.Seq && a.Role == b.Role && a.Archived == b.Archived &&
		a.InActiveContext == b.InActiveContext && a.Snippet == b.Snippet && a.CompactionID == b.CompactionID &&
		slices.Equal(a.Marks, b.Marks)
}

// TestSearchThreadInterleaved: threads whose appends interleave, compacted (summaries, archived
// messages): a thread's search finds exactly the thread's part of a global search (the same
// rows, snippets, flags and summaries), whatever its order.
func TestSearchThreadInterleaved(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	threads := map[string][]chat.Message{}
	for _, name := range []string{"a", "b", "c"} {
		msgs := texts("system", "You are an agent.")
		for i := 1; i <= 15; i++ {
			msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("question %d of %s about order W%06d: when does the carrier bring it?", i, name, i)),
				chat.TextMessage("assistant", fmt.Sprintf("answer %d of %s: order W%06d is on its way with the usual carrier", i, name, i)))
		}
		threads[name] = msgs
	}
	appendTurns(t, s, threads, 4)
	for _, name := range []string{"a", "b"} {
		c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 2048})
		if r, err := c.Compact(ctx, name, compact.Options{Force: true}); err != nil || r.Status != memory.StatusApplied {
			t.Fatalf("compaction of %s: %+v, %v", name, r, err)
		}
	}
	byPlace := func(a, b memory.SearchHit) int {
		return cmp.Or(cmp.Compare(a.CompactionID, b.CompactionID), cmp.Compare(a.Seq, b.Seq))
	}
	for _, query := range []string{"carrier", "W000003", "order W000002", "usual carrier"} {
		all, err := s.Search(ctx, query, memory.SearchOptions{Limit: memory.MaxSearchLimit})
		if err != nil {
			t.Fatal(err)
		}
		if len(all) == memory.MaxSearchLimit {
			t.Fatalf("%q: a global search filled its limit", query)
		}
		for _, name := range []string{"a", "b", "c"} {
			got, err := s.Search(ctx, query, memory.SearchOptions{Thread: name, Limit: memory.MaxSearchLimit})
			if err != nil {
				t.Fatal(err)
			}
			want := slices.DeleteFunc(slices.Clone(all), func(h memory.SearchHit) bool { return h.Thread != name })
			slices.SortFunc(got, byPlace)
			slices.SortFunc(want, byPlace)
			if len(want) == 0 || !slices.EqualFunc(got, want, sameHit) {
				t.Errorf("%q in thread %s:\n%+v\nthe thread's part of a global search:\n%+v", query, name, got, want)
			}
			archived, summaries := 0, 0
			for _, h := range got {
				if h.Archived {
					archived++
				}
				if h.CompactionID != 0 {
					summaries++
				}
			}
			if name != "c" && query == "W000003" && (archived == 0 || summaries == 0) {
				t.Errorf("%q in compacted thread %s: %d archived hits, %d summaries; want some of each", query, name, archived, summaries)
			}
		}
	}
}
