package compact_test

import (
	"context"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// TestBreakerHoldsAfterFailures: three failed compactions in a row (the second and third
// find every provider cooling down) hold the thread: an unforced compaction makes no provider
// request and writes nothing, and says how to release it; a changed limit and --force release
// it, and so does the context doubling since the hold.
func TestBreakerHoldsAfterFailures(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	clk := &clock{at: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)}
	s, _ := storetest.OpenWith(t, memory.Options{Now: clk.now})
	storetest.LongThread(t, s, "t", 12, 200)
	th, _ := s.Thread(ctx, "t")
	var ok atomic.Bool
	fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if ok.Load() {
			return llm.Response{Text: "## Work done\nQuestions were answered.", FinishReason: "stop", Model: "m"}, nil
		}
		return llm.Response{}, errors.New("connection reset")
	}}
	casc := cascade.NewWith(s.DB(), cascade.Options{Now: s.Now}, fakeEntry("p", fake, 0))
	limit := th.ActiveTokens * 11 / 10 // over the trigger: due
	c := compact.NewWith(s, casc, compact.Settings{TokenLimit: limit}, compact.Config{})

	for i := range 3 {
		rep, err := c.Compact(ctx, "t", compact.Options{})
		if err == nil || rep.Status != memory.StatusFailed {
			t.Fatalf("compaction %d: %+v, %v; want failed", i+1, rep.Status, err)
		}
	}
	requests := len(fake.Calls())
	reps0, atts0 := rowCounts(t, s, "t")
	rep, err := c.Compact(ctx, "t", compact.Options{})
	if !errors.Is(err, compact.ErrHeld) || rep.Status != compact.StatusHeld || rep.ID != 0 {
		t.Fatalf("fourth compaction: %s, %v; want held", rep.Status, err)
	}
	if !strings.Contains(rep.Detail, "--force") || !strings.Contains(err.Error(), "3 compactions") {
		t.Fatalf("held report says %q, error %v: want why and how to release", rep.Detail, err)
	}
	reps1, atts1 := rowCounts(t, s, "t")
	if len(fake.Calls()) != requests || reps1 != reps0 || atts1 != atts0 {
		t.Fatalf("a held compaction reached the provider or wrote: requests %d -> %d, reports %d -> %d, attempts %d -> %d",
			requests, len(fake.Calls()), reps0, reps1, atts0, atts1)
	}
	if due, err := c.ShouldCompact(ctx, "t"); due || err != nil {
		t.Fatalf("ShouldCompact of a held thread: %v, %v", due, err)
	}
	th, _ = s.Thread(ctx, "t")
	if why, _ := compact.Held(ctx, s, th, c.Settings.WithDefaults()); why == "" {
		t.Fatal("Held says the thread is not held")
	}

	// A changed limit releases it: the compaction runs (and fails again).
	other := limit + 1
	if rep, _ := c.Compact(ctx, "t", compact.Options{Override: compact.ThreadSettings{TokenLimit: &other}}); rep.Status != memory.StatusFailed {
		t.Fatalf("with another limit: %s; want it to run", rep.Status)
	}
	// --force releases it.
	clk.at = clk.at.Add(2 * time.Hour) // past the cooldowns: the provider is asked
	requests = len(fake.Calls())
	if rep, _ := c.Compact(ctx, "t", compact.Options{Force: true}); rep.Status != memory.StatusFailed || len(fake.Calls()) == requests {
		t.Fatalf("forced: %s, %d requests; want it to run", rep.Status, len(fake.Calls())-requests)
	}
	if rep, err := c.Compact(ctx, "t", compact.Options{}); rep.Status != compact.StatusHeld {
		t.Fatalf("after the forced failure: %s, %v; want held", rep.Status, err)
	}
	// The context doubling releases it.
	storetest.LongThread2(t, s, "t", 14, 200)
	clk.at = clk.at.Add(2 * time.Hour)
	ok.Store(true)
	rep, err = c.Compact(ctx, "t", compact.Options{})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("after the context doubled: %s, %v; want applied", rep.Status, err)
	}
	if due, _ := c.ShouldCompact(ctx, "t"); due {
		t.Fatal("due right after an applied compaction")
	}
	th, _ = s.Thread(ctx, "t")
	if why, _ := compact.Held(ctx, s, th, c.Settings.WithDefaults()); why != "" {
		t.Fatalf("held after an applied compaction: %s", why)
	}
}
