package cascade_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/llm"
)

// defaultCascade builds, through the config and its defaults, a cascade of an
// OpenAI-compatible provider "first" at baseURL followed by the offline rung, with opt.
func defaultCascade(t *testing.T, sqldb *db.Handle, baseURL string, opt cascade.Options) *cascade.Cascade {
	t.Helper()
	cfg, err := config.Parse([]byte(fmt.Sprintf("cascade:\n  - name: first\n    model: llama3.2\n    base_url: %s/v1\n  - name: offline\n    type: extractive\n", baseURL)), "test.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c, err := cfg.NewCascade(sqldb, opt)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// TestRetryAfterBeyondMaxWaitFallsThrough: with the default settings, a 429 asking for two
// minutes is not waited for: the provider cools for the two minutes and the offline rung
// answers. No pause longer than max_wait is ever requested.
func TestRetryAfterBeyondMaxWaitFallsThrough(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "120")
		apiError(429, "rate_limit_exceeded", "requests", "Rate limit reached")(w, r)
	})
	sqldb, _ := openDB(t)
	h := harnessFor(t, sqldb, func(opt cascade.Options) *cascade.Cascade { return defaultCascade(t, sqldb, srv.URL, opt) }, cascade.Options{})
	c := h.c
	res, err := c.Complete(context.Background(), 0, userReq)
	if err != nil {
		t.Fatal(err)
	}
	if res.Provider != "offline" {
		t.Fatalf("answered by %q, want the offline rung", res.Provider)
	}
	for _, w := range h.recordedWaits() {
		if w > cascade.DefaultMaxWait {
			t.Errorf("a pause of %v was requested, longer than max_wait %v", w, cascade.DefaultMaxWait)
		}
	}
	if n := srv.hits.Load(); n != 1 {
		t.Errorf("the rate-limited server got %d requests, want 1", n)
	}
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st[0].CoolingUntil == nil || st[0].CoolingUntil.Sub(t0) < 120*time.Second {
		t.Errorf("first provider cooling until %v, want at least 120s after %v", st[0].CoolingUntil, t0)
	}
}

// TestHangingProviderWithinTotalBudget: a provider that never answers, with the default
// request and attempt timeouts (60s, 5m) and a total budget of 6s: its turn is cut before
// the budget ends, it is not cooled down (the budget was ours, it did not fail), and the
// offline rung answers within the budget.
func TestHangingProviderWithinTotalBudget(t *testing.T) {
	t.Parallel()
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	sqldb, _ := openDB(t)
	c := defaultCascade(t, sqldb, srv.URL, cascade.Options{})
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Second)
	defer cancel()
	res, err := c.Complete(ctx, 0, userReq)
	if err != nil {
		t.Fatal(err)
	}
	if res.Provider != "offline" {
		t.Fatalf("answered by %q, want the offline rung", res.Provider)
	}
	if ctx.Err() != nil {
		t.Error("the offline rung answered after the total budget; the budget kept no time for it")
	}
	rows, err := storeOn(t, sqldb).Attempts(context.Background(), "first", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rows) != 1 || cascade.Class(rows[0].ErrorClass) != cascade.ClassTimeout || !strings.Contains(rows[0].Error, "total timeout") {
		t.Fatalf("first provider's attempts = %+v, want one timeout naming the total timeout", rows)
	}
	st, err := c.Status(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if st[0].CoolingUntil != nil || st[0].ConsecutiveFailures != 0 {
		t.Errorf("the provider cut by the caller's budget is cooling down until %v (%d failures)", st[0].CoolingUntil, st[0].ConsecutiveFailures)
	}
}

// TestSpentBudgetStillTriesOffline: when the caller's deadline has already passed, a
// provider that needs the network is recorded as skipped for the budget (no request, no
// cooldown) and the offline rung still answers.
func TestSpentBudgetStillTriesOffline(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	online := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("never")}}
	offline := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("from the offline rung")}}
	off := fakeEntry("offline", offline)
	off.Offline = true
	h := newHarness(t, sqldb, fakeEntry("online", online), off)
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	res, err := h.c.Complete(ctx, 0, userReq)
	if err != nil || res.Provider != "offline" {
		t.Fatalf("%+v, %v; want the offline rung's answer", res, err)
	}
	if n := len(online.Calls()); n != 0 {
		t.Errorf("the online provider got %d requests with no time left", n)
	}
	rows := attempts(t, sqldb)
	if len(rows) != 2 || cascade.Outcome(rows[0].Outcome) != cascade.OutcomeSkippedBudget || !strings.Contains(rows[0].Error, "no time left") ||
		cascade.Outcome(rows[1].Outcome) != cascade.OutcomeOK {
		t.Fatalf("rows = %+v, want skipped_budget then ok", rows)
	}
	if _, ok := cooldown(t, sqldb, "online"); ok {
		t.Error("a provider never started for lack of time was put on cooldown")
	}
}

// TestSpentBudgetWithoutOfflineRung: with no offline rung to fall to, a passed deadline
// skips every provider and Run fails; it is not reported as a cancel.
func TestSpentBudgetWithoutOfflineRung(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	f := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("never")}}
	h := newHarness(t, sqldb, fakeEntry("a", f))
	ctx, cancel := context.WithDeadline(context.Background(), time.Now().Add(-time.Second))
	defer cancel()
	_, err := h.c.Complete(ctx, 0, userReq)
	if err == nil || errors.Is(err, context.Canceled) {
		t.Fatalf("err = %v, want a failure that is not a cancel", err)
	}
	if rows := attempts(t, sqldb); len(rows) != 1 || cascade.Outcome(rows[0].Outcome) != cascade.OutcomeSkippedBudget {
		t.Fatalf("rows = %+v, want one skipped_budget", rows)
	}
}

// TestWindowTooSmallSkipped: a task that finds the window too small leaves a skipped_window
// row saying why, no cooldown, and the cascade moves on.
func TestWindowTooSmallSkipped(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	small := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("never")}}
	next := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("from next")}}
	e := fakeEntry("small", small)
	e.ContextWindow = 512
	h := newHarness(t, sqldb, e, fakeEntry("next", next))
	res, err := h.c.Run(context.Background(), 0, func(ctx context.Context, tg llm.Target, k llm.Completer) (string, error) {
		if tg.ContextWindow == 512 {
			return "", fmt.Errorf("%w: a window of %d tokens, the request needs at least 900", llm.ErrWindowTooSmall, tg.ContextWindow)
		}
		resp, err := k.Complete(ctx, userReq)
		return resp.Text, err
	})
	if err != nil || res.Provider != "next" {
		t.Fatalf("%+v, %v", res, err)
	}
	rows := attempts(t, sqldb)
	if len(rows) != 2 || rows[0].Provider != "small" || cascade.Outcome(rows[0].Outcome) != cascade.OutcomeSkippedWindow ||
		!strings.Contains(rows[0].Error, "window of 512 tokens") || !strings.Contains(rows[0].Error, "needs at least 900") {
		t.Fatalf("rows = %+v, want skipped_window naming the window and the need", rows)
	}
	if _, ok := cooldown(t, sqldb, "small"); ok {
		t.Error("a window skip set a cooldown")
	}
	if n := len(small.Calls()); n != 0 {
		t.Errorf("the small provider got %d requests", n)
	}
	var kinds []string
	for _, ev := range h.recordedEvents() {
		kinds = append(kinds, ev.Provider+":"+string(ev.Kind))
	}
	if !strings.Contains(strings.Join(kinds, " "), "small:skip_window") {
		t.Errorf("events %v lack small:skip_window", kinds)
	}
}
