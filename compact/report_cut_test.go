package compact_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestCutReportClaimsNoSummary: a forced compaction whose plan has no room for a summary (a
// pinned message and the newest unit leave it no room; 1,870 is below the context the first
// compaction leaves) and whose results are cut to fit reports
// no message summarized and no deep summary size, only the cut.
func TestCutReportClaimsNoSummary(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", corpus.Airline)
	if _, err := s.Pin(ctx, "t", 2, compact.PinBudget(compact.Settings{})); err != nil {
		t.Fatal(err)
	}
	c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 2400})
	if rep, err := c.Compact(ctx, "t", compact.Options{Force: true}); err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("first compaction: %+v, %v", rep, err)
	}
	c.Settings.TokenLimit = 1870
	rep, _ := c.Compact(ctx, "t", compact.Options{Force: true})
	if rep.Status != memory.StatusApplied || !strings.Contains(rep.Detail, "results cut to fit") {
		t.Fatalf("second compaction: %s, %q; want the results cut", rep.Status, rep.Detail)
	}
	if rep.SummarizedMessages != 0 || strings.Contains(rep.Detail, "a summary of at most") {
		t.Fatalf("the cut claims a summary: %d summarized, detail %q", rep.SummarizedMessages, rep.Detail)
	}
}
