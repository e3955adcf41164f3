package compact_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/lifesim"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// summariesOf returns the compactions whose summaries thread's active context shows, in order.
func summariesOf(a memory.Active) []int64 {
	var ids []int64
	for _, e := range a.Entries {
		if e.CompactionID != 0 {
			ids = append(ids, e.CompactionID)
		}
	}
	return ids
}

// TestQueueLife: over a 60-turn life (a generated agent thread of 60 tasks, appended a
// message at a time and compacted whenever ShouldCompact says) at 4,096 tokens, the queue
// strategy holds at most queue_size summaries in the active context, each a block of its own
// in order, reaches that many and folds the oldest two when full; no fact of the original
// messages is lost unnamed and the newest user message is never out. On both backends.
func TestQueueLife(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, size := range []int{2, 3} {
		t.Run(fmt.Sprint("queue_size=", size), func(t *testing.T) {
			t.Parallel() // a store of its own
			const limit = 4096
			s, _ := storetest.Open(t)
			c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: limit, Strategy: compact.StrategyQueue, QueueSize: size})
			msgs := lifesim.Generated(60)
			most, applied, ineffective, newestUser := 0, 0, 0, ""
			for i, m := range msgs {
				if _, err := s.Append(ctx, "t", []chat.Message{m}, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
					t.Fatal(err)
				}
				if m.Role == "user" {
					newestUser = m.Text()
				}
				due, err := c.ShouldCompact(ctx, "t")
				if err != nil {
					t.Fatal(err)
				}
				if !due {
					continue
				}
				rep, err := c.Compact(ctx, "t", compact.Options{})
				if rep.Status == memory.StatusIneffective && err == nil {
					ineffective++ // nothing new to summarize: automatic compaction waits for more
					continue
				}
				if rep.Status != memory.StatusApplied {
					t.Fatalf("queue_size %d, message %d: %s %s, %v", size, i+1, rep.Status, rep.Detail, err)
				}
				applied++
				if testing.Verbose() {
					t.Logf("message %d: %s %d -> %d, summary %d tokens: %s", i+1, rep.Reason, rep.TokensBefore, rep.TokensAfter, rep.SummaryTokens, rep.Detail)
				}
				a := checkBlocks(t, s, "t", rep.Detail, nil...)
				n := len(summariesOf(a))
				most = max(most, n)
				if n > size {
					t.Fatalf("queue_size %d, message %d: %d summaries in the active context", size, i+1, n)
				}
				if !strings.Contains(lifesim.ActiveText(a), newestUser) {
					t.Fatalf("queue_size %d, message %d: the newest user message is out of the active context", size, i+1)
				}
				if lost := lifeLosses(t, s, "t", originalFacts(t, s, "t")); len(lost) > 0 {
					t.Fatalf("queue_size %d, message %d: %d facts lost that no report names: %v", size, i+1, len(lost), lost)
				}
			}
			reps, err := s.Reports(ctx, "t", 1000)
			if err != nil {
				t.Fatal(err)
			}
			// Each fold is a compaction of its own, chained before the one that summarizes the new
			// messages: its range starts where the oldest summary's did.
			folds := 0
			for _, r := range reps {
				if r.Status == memory.StatusApplied && r.Strategy == compact.StrategyQueue && r.SummarizedMessages >= 2 &&
					slices.ContainsFunc(reps, func(o memory.Report) bool { return o.ID < r.ID && o.FromSeq == r.FromSeq && o.ToSeq < r.ToSeq }) {
					folds++
				}
			}
			t.Logf("queue_size %d: %d applied compactions (%d ineffective) over %d messages (60 user turns), %d reports, %d folds, at most %d summaries",
				size, applied, ineffective, len(msgs), len(reps), folds, most)
			if most != size || applied < 2*size || folds == 0 {
				t.Errorf("queue_size %d: at most %d summaries over %d compactions, %d folds; want the queue full and folded", size, most, applied, folds)
			}
		})
	}
}

// TestQueueRevert: a revert of the newest queue compaction brings back the active context as
// it was before it (plus nothing, nothing was appended), the summaries it kept as they were.
func TestQueueRevert(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 1500, Strategy: compact.StrategyQueue, QueueSize: 3})
	msgs := lifesim.Generated(16)
	for part := range 4 {
		if _, err := s.Append(ctx, "t", msgs[part*len(msgs)/4:(part+1)*len(msgs)/4], memory.AppendOptions{Model: "gpt-4o"}); err != nil {
			t.Fatal(err)
		}
		before, err := s.Active(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
		if err != nil || rep.Status != memory.StatusApplied {
			t.Fatalf("compaction %d: %s %s, %v", part+1, rep.Status, rep.Detail, err)
		}
		after := checkBlocks(t, s, "t", rep.Detail, nil...)
		if got, want := len(summariesOf(after)), min(part+1, 3); got != want {
			t.Errorf("compaction %d: %d summaries, want %d", part+1, got, want)
		}
		if part < 3 {
			continue
		}
		// The fourth found the queue full: it folded the two oldest, then summarized. Reverting
		// both brings the context before them back.
		for k := range 2 {
			if _, err := s.Revert(ctx, "t", 0); err != nil {
				t.Fatal(err)
			}
			// The first revert undoes the summary of the new messages: the fold's context, the
			// two oldest summaries as one, the newest as it was.
			if k == 0 {
				if mid := checkBlocks(t, s, "t", "after one revert", nil...); len(summariesOf(mid)) != 2 || summariesOf(mid)[1] != summariesOf(before)[2] {
					t.Errorf("after one revert: summaries %v, before the compaction %v; want the two oldest folded, the newest kept", summariesOf(mid), summariesOf(before))
				}
			}
		}
		back, err := s.Active(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(summariesOf(back), summariesOf(before)) || back.Tokens != before.Tokens || len(back.Entries) != len(before.Entries) {
			t.Errorf("after revert: summaries %v, %d tokens, %d entries; before: %v, %d, %d",
				summariesOf(back), back.Tokens, len(back.Entries), summariesOf(before), before.Tokens, len(before.Entries))
		}
		for i := range back.Entries {
			if b, w := back.Entries[i], before.Entries[i]; b.Seq != w.Seq || b.CompactionID != w.CompactionID || b.Text() != w.Text() {
				t.Errorf("after revert: entry %d is seq %d / summary %d, before seq %d / summary %d", i, b.Seq, b.CompactionID, w.Seq, w.CompactionID)
			}
		}
	}
}

// TestQueueThenOtherStrategies: a context the queue left with several summaries, compacted by
// summarize, hybrid or window: summarize folds every block into one (the oldest as the summary
// to update), each leaves the summaries as blocks in order and loses no fact unnamed.
func TestQueueThenOtherStrategies(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, strategy := range []string{compact.StrategySummarize, compact.StrategyHybrid, compact.StrategyWindow} {
		s, _ := storetest.Open(t)
		c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 1500, Strategy: compact.StrategyQueue, QueueSize: 3})
		msgs := lifesim.Generated(12)
		for part := range 3 {
			if _, err := s.Append(ctx, "t", msgs[part*len(msgs)/3:(part+1)*len(msgs)/3], memory.AppendOptions{Model: "gpt-4o"}); err != nil {
				t.Fatal(err)
			}
			if rep, err := c.Compact(ctx, "t", compact.Options{Force: true}); err != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("%s: queue compaction %d: %s %s, %v", strategy, part+1, rep.Status, rep.Detail, err)
			}
		}
		if a := checkBlocks(t, s, "t", "queue", nil...); len(summariesOf(a)) < 2 {
			t.Fatalf("%s: the queue left %d summaries, want several", strategy, len(summariesOf(a)))
		}
		rep, err := c.Compact(ctx, "t", compact.Options{Force: true, Override: compact.ThreadSettings{Strategy: strategy}})
		// Summarize folds the blocks; hybrid and window may find nothing to do within the limit.
		if err != nil || rep.Status != memory.StatusApplied && (strategy == compact.StrategySummarize || rep.Status != memory.StatusIneffective) {
			t.Fatalf("%s: %s %s, %v", strategy, rep.Status, rep.Detail, err)
		}
		t.Logf("%s after the queue: %s, %d -> %d tokens", strategy, rep.Status, rep.TokensBefore, rep.TokensAfter)
		a := checkBlocks(t, s, "t", strategy, nil...)
		if n := len(summariesOf(a)); strategy == compact.StrategySummarize && n != 1 {
			t.Errorf("%s: %d summaries after, want 1", strategy, n)
		}
		if lost := lifeLosses(t, s, "t", originalFacts(t, s, "t")); len(lost) > 0 {
			t.Errorf("%s: %d facts lost that no report names: %v", strategy, len(lost), lost)
		}
	}
}
