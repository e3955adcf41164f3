package memory_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"

	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/memory"
)

// TestHybridFactsKeptOrNamed: every ledger fact of the active context before a hybrid
// compaction is in the active context after it, or named in facts_dropped. Mask's digest keeps
// an amount as a bare number ("786" of "amount": 786); the summary planned on the masked view
// must not lose it silently.
func TestHybridFactsKeptOrNamed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, file := range conversations(t) {
		for _, limit := range []int{2000, 5000} {
			s, _ := openStore(t)
			importFile(t, s, "t", file)
			before, _ := s.Active(ctx, "t")
			ledger := facts.Extract(factMsgs(before.Entries))
			keptBefore := facts.Kept(ledger, activeText(before))
			c := memory.NewCompactor(s, extractiveCascade(t, s), memory.Settings{TokenLimit: limit, Strategy: memory.StrategyHybrid})
			rep, err := c.Compact(ctx, "t", memory.CompactOptions{Force: true})
			if err != nil && !errors.Is(err, memory.ErrOverLimit) {
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
