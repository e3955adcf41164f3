package compact_test

import (
	"context"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestCachePrefix: each applied compaction records the prompt prefix it kept of the context it
// was planned on (the entries before the first one it changed) and the rest of that context as
// the prefix it invalidated; the stored report reads both back, and they add up to its tokens
// before. A mask keeps what comes before the first result it masks; a summary then keeps the
// system prompt alone; a revert keeps the figures of the row.
func TestCachePrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", corpus.Airline)
	before, _ := s.Active(ctx, "t")
	prefix := func(before, after memory.Active) int {
		n := 0
		for i := 0; i < len(before.Entries) && i < len(after.Entries); i++ {
			b, a := before.Entries[i], after.Entries[i]
			if b.Seq != a.Seq || b.CompactionID != a.CompactionID || b.Tokens != a.Tokens || (b.Mark() == nil) != (a.Mark() == nil) {
				break
			}
			n += b.Tokens
		}
		return n
	}
	check := func(rep memory.Report, before, after memory.Active, what string) {
		t.Helper()
		want := prefix(before, after)
		for _, r := range []memory.Report{rep, stored(t, s, rep.ID)} {
			if r.CachePrefixTokens == nil || r.CacheInvalidatedTokens == nil {
				t.Fatalf("%s: report %d has no cache prefix", what, r.ID)
			}
			if *r.CachePrefixTokens != want || *r.CachePrefixTokens+*r.CacheInvalidatedTokens != r.TokensBefore {
				t.Errorf("%s: kept %d, invalidated %d of %d; want kept %d", what, *r.CachePrefixTokens, *r.CacheInvalidatedTokens, r.TokensBefore, want)
			}
		}
		if want == 0 || want >= rep.TokensBefore {
			t.Errorf("%s: a prefix of %d of %d tokens: nothing to tell", what, want, rep.TokensBefore)
		}
	}

	m := compact.New(s, noProvider{t}, compact.Settings{TokenLimit: before.Tokens * 9 / 10, Strategy: compact.StrategyMask})
	rep, err := m.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("mask: %v, %+v", err, rep)
	}
	mid, _ := s.Active(ctx, "t")
	check(rep, before, mid, "mask")
	sys := before.Entries[0].Tokens
	if *rep.CachePrefixTokens <= sys {
		t.Errorf("mask kept %d tokens, no more than the system prompt (%d): it masks results after the first", *rep.CachePrefixTokens, sys)
	}

	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: mid.Tokens / 2})
	rep2, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep2.Status != memory.StatusApplied {
		t.Fatalf("summarize: %v, %+v", err, rep2)
	}
	after, _ := s.Active(ctx, "t")
	check(rep2, mid, after, "summarize")
	if *rep2.CachePrefixTokens != sys {
		t.Errorf("summarize kept %d tokens, want the system prompt's %d", *rep2.CachePrefixTokens, sys)
	}

	if _, err := s.Revert(ctx, "t", rep2.ID); err != nil {
		t.Fatal(err)
	}
	if r := stored(t, s, rep2.ID); r.Status != memory.StatusReverted || r.CachePrefixTokens == nil || *r.CachePrefixTokens != sys {
		t.Errorf("reverted: %+v", r)
	}
}

func stored(t *testing.T, s *memory.Store, id int64) memory.Report {
	t.Helper()
	r, err := s.Report(context.Background(), id)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
