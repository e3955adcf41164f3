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

// paced is a cascade whose providers were measured slow: summarizing takes d.
type paced struct {
	*cascade.Cascade
	d time.Duration
}

func (p paced) TimeFor(ctx context.Context, tokens int) (time.Duration, bool) { return p.d, true }

// TestEmergencyBudgetFollowsMeasuredSpeed: an emergency compaction gives its summarizing the
// time the summarizer's measured speed needs when that is more than the fixed 20 s (a slow
// local model is not cut), and 20 s when it needs less.
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
		c := compact.New(s, paced{casc, tc.need}, compact.Settings{TokenLimit: before.Tokens})
		rep, err := c.Compact(ctx, "t", compact.Options{Emergency: true})
		if err != nil || !strings.Contains(rep.Detail, tc.want) {
			t.Fatalf("need %s: %v; detail %q, want %q", tc.need, err, rep.Detail, tc.want)
		}
	}
}
