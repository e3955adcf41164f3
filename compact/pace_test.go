package compact_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/internal/storetest"
)

// TestEmergencyBudgetFollowsMeasuredSpeed: an emergency compaction gives its summarizing the
// time the summarizer's measured speed needs (Config.Pace, here a cascade measured slow:
// summarizing takes need) when that is more than the fixed 20 s (a slow local model is not
// cut), and 20 s when it needs less.
func TestEmergencyBudgetFollowsMeasuredSpeed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		need time.Duration
		want string
	}{{95 * time.Second, "summarized within 1m35s"}, {3 * time.Second, "summarized within 20s"}} {
		s, _ := storetest.Open(t)
		storetest.LongThread(t, s, "t", 40, 400)
		casc := cascade.New(s.DB(), cascade.Entry{Name: "offline", Type: "extractive", Model: "extractive", Provider: extractive.Summarizer{}})
		before, _ := s.Active(ctx, "t")
		pace := func(context.Context, int) (time.Duration, bool) { return tc.need, true }
		c := compact.NewWith(s, casc, compact.Settings{TokenLimit: before.Tokens}, compact.Config{Pace: pace})
		rep, err := c.Compact(ctx, "t", compact.Options{Emergency: true})
		if err != nil || !strings.Contains(rep.Detail, tc.want) {
			t.Fatalf("need %s: %v; detail %q, want %q", tc.need, err, rep.Detail, tc.want)
		}
	}
}
