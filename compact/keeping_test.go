package compact_test

import (
	"context"
	"slices"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/lifesim"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// keepAll is a strategy of a program's own: it keeps every earlier summary as it is and
// summarizes what else lies before the kept part (compact.MakePlanKeeping).
type keepAll struct{}

func (keepAll) Name() string { return "test-keep-all" }

func (keepAll) Decide(in compact.StrategyInput) compact.Decision {
	p := compact.MakePlanKeeping(in.Entries, in.Settings, in.Keep, summaryIndexes(in.Entries))
	return compact.Decision{Plan: p, Summarize: true, Ineffective: p.Ineffective, Why: p.Why}
}

func init() { compact.Register(keepAll{}) }

// summaryIndexes are the indexes of the summary entries of an active context.
func summaryIndexes(es []memory.Entry) []int {
	var out []int
	for i, e := range es {
		if e.CompactionID != 0 {
			out = append(out, i)
		}
	}
	return out
}

// checkBlocks fails unless the summaries of thread's active context are the compactions ids,
// in that order, each a block of its own after the pinned messages (the newest user message
// the newest held before the newest), their ranges ascending and apart.
func checkBlocks(t *testing.T, s *memory.Store, thread, when string, ids ...int64) memory.Active {
	t.Helper()
	a, err := s.Active(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	var got []int64
	last := int64(0)
	pinned := memory.PinnedLen(a.Entries)
	for i, e := range a.Entries {
		if e.CompactionID == 0 {
			continue
		}
		got = append(got, e.CompactionID)
		if e.CoversFrom <= last || e.CoversTo < e.CoversFrom {
			t.Errorf("%s: summary %d covers %d-%d, after a summary that ends at %d", when, e.CompactionID, e.CoversFrom, e.CoversTo, last)
		}
		last = e.CoversTo
		if before := i - pinned - (len(got) - 1); before != 0 && (before != 1 || a.Entries[i-1].Message.Role != "user") {
			t.Errorf("%s: summary %d at %d: %d entries between the pinned messages and it that are not summaries", when, e.CompactionID, i, before)
		}
	}
	if ids != nil && !slices.Equal(got, ids) {
		t.Errorf("%s: summaries %v, want %v", when, got, ids)
	}
	return a
}

// TestPlanKeepingSummaries: a strategy that keeps earlier summaries as they are (Plan.Stay)
// leaves one more summary block at each compaction, on both backends; no fact of the original
// messages is lost unnamed, and a revert of the newest brings the context before it back.
func TestPlanKeepingSummaries(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	msgs := lifesim.Generated(12)
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 2500, Strategy: "test-keep-all"})
	var ids []int64
	for part := range 3 {
		if _, err := s.Append(ctx, "t", msgs[part*len(msgs)/3:(part+1)*len(msgs)/3], memory.AppendOptions{Model: "gpt-4o"}); err != nil {
			t.Fatal(err)
		}
		rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
		if err != nil || rep.Status != memory.StatusApplied {
			t.Fatalf("compaction %d: %s %s, %v", part+1, rep.Status, rep.Detail, err)
		}
		ids = append(ids, rep.ID)
		checkBlocks(t, s, "t", rep.Detail, ids...)
		if lost := lifeLosses(t, s, "t", originalFacts(t, s, "t")); len(lost) > 0 {
			t.Fatalf("compaction %d lost %d facts no report names: %v", part+1, len(lost), lost)
		}
	}
	before := checkBlocks(t, s, "t", "before revert", ids...)
	if _, err := s.Revert(ctx, "t", 0); err != nil {
		t.Fatal(err)
	}
	after := checkBlocks(t, s, "t", "after revert", ids[:2]...)
	if n := len(after.Entries); n <= len(before.Entries) {
		t.Errorf("after revert: %d entries, before %d: want the messages the newest summary covered back", n, len(before.Entries))
	}
}
