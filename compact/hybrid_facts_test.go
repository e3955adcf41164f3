package compact_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/lifesim"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestHybridFactsKeptOrNamed: every ledger fact of the active context before a hybrid
// compaction is in the active context after it, or named in facts_dropped. Mask's digest keeps
// an amount as a bare number ("786" of "amount": 786); the summary planned on the masked view
// must not lose it silently.
func TestHybridFactsKeptOrNamed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, file := range corpus.Conversations(t) {
		for _, limit := range []int{2000, 5000} {
			s, _ := storetest.Open(t)
			storetest.Import(t, s, "t", file)
			before, _ := s.Active(ctx, "t")
			ledger := facts.Extract(factMsgs(before.Entries))
			keptBefore := facts.Kept(ledger, activeText(before))
			c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: limit, Strategy: compact.StrategyHybrid})
			rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if err != nil && !errors.Is(err, compact.ErrOverLimit) {
				t.Fatalf("%s %d: %v", filepath.Base(file), limit, err)
			}
			if rep.Status != memory.StatusApplied {
				continue
			}
			named := map[string]bool{}
			for _, f := range rep.FactsDropped {
				named[f] = true
			}
			after, _ := s.Active(ctx, "t")
			var lost []string
			for i, ok := range facts.Kept(ledger, activeText(after)) {
				if keptBefore[i] && !ok && !named[ledger[i].Text] {
					lost = append(lost, string(ledger[i].Kind)+" "+ledger[i].Text)
				}
			}
			if len(lost) > 0 {
				t.Errorf("%s at %d: %d facts left the active context unnamed in facts_dropped (%d named), e.g. %q",
					filepath.Base(file), limit, len(lost), len(rep.FactsDropped), lost[:min(5, len(lost))])
			}
		}
	}
}

// TestSummaryOfMaskedViewKeepsOrNamesFacts: a summary that folds in results an earlier
// compaction masked checks their facts, not only what their placeholders show as facts. A
// digest writes an amount as a bare number ("1505" of "price": 1505), which the placeholder's
// own text does not show as an amount: the summary's ledger must still hold it, so that it is
// kept or named in facts_dropped. The ledger is read from the originals of the masked results
// (the same holds for a window that leaves a masked result out).
func TestSummaryOfMaskedViewKeepsOrNamesFacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, strategy := range []string{compact.StrategySummarize, compact.StrategyWindow} {
		t.Run(strategy, func(t *testing.T) {
			s, _ := storetest.Open(t)
			storetest.Import(t, s, "t", corpus.Airline)
			original := originalFacts(t, s, "t")
			mask := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 6000, Strategy: compact.StrategyMask})
			if rep, err := mask.Compact(ctx, "t", compact.Options{Force: true}); err != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("mask: %s, %v", rep.Status, err)
			}
			if lost := lifeLosses(t, s, "t", original); len(lost) > 0 {
				t.Fatalf("the mask lost %d facts unnamed: %v", len(lost), lost)
			}
			p, err := lifesim.Provider(s, "nofacts", 0)
			if err != nil {
				t.Fatal(err)
			}
			c := compact.New(s, p, compact.Settings{TokenLimit: 3000, Strategy: strategy})
			rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if err != nil && !errors.Is(err, compact.ErrOverLimit) {
				t.Fatal(err)
			}
			if rep.Status != memory.StatusApplied {
				t.Fatalf("%s after the mask: %s (%s)", strategy, rep.Status, rep.Detail)
			}
			if lost := lifeLosses(t, s, "t", original); len(lost) > 0 {
				var texts []string
				for _, f := range lost {
					texts = append(texts, string(f.Kind)+" "+f.Text)
				}
				t.Errorf("%s of the masked view lost %d facts unnamed: %q", strategy, len(lost), texts)
			}
		})
	}
}
