package cascade_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
)

// TestAttemptCost: a task that finds a provider over its spending limit (llm.ErrOverCost)
// skips it (outcome skipped_cost, event skip_cost, no request, no cooldown, no cost); a priced
// provider's attempt costs its reported tokens at its price (1000 × 0.15 + 100 × 0.6 = 210
// micro-dollars); an offline rung's price is ignored: its task sees none and its attempt has
// no cost.
func TestAttemptCost(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	answer := cascade.FakeStep{Response: llm.Response{Text: "summary", FinishReason: "stop", PromptTokens: 1000, CompletionTokens: 100}}
	dear := &cascade.Fake{Script: []cascade.FakeStep{answer}}
	paid := &cascade.Fake{Script: []cascade.FakeStep{answer}}
	offline := &cascade.Fake{Script: []cascade.FakeStep{answer}}
	d, p, o := fakeEntry("dear", dear), fakeEntry("paid", paid), fakeEntry("offline", offline)
	d.Price = &llm.Price{Input: 1000, Output: 1000}
	p.Price = &llm.Price{Input: 0.15, Output: 0.6}
	o.Price, o.Offline = &llm.Price{Input: 5, Output: 5}, true
	h := newHarness(t, sqldb, d, p, o)
	var prices []*llm.Price
	task := func(ctx context.Context, tg llm.Target, c llm.Completer) (string, error) {
		prices = append(prices, tg.Price)
		if tg.Price != nil && tg.Price.Input > 100 {
			return "", fmt.Errorf("%w: estimated at $9, over max_cost $1", llm.ErrOverCost)
		}
		resp, err := c.Complete(ctx, userReq)
		if err == nil && tg.Name == "paid" {
			err = fmt.Errorf("%w: try the next one", llm.ErrBadResponse) // the paid attempt is logged; go on to offline
		}
		return resp.Text, err
	}
	res, err := h.c.Run(context.Background(), 0, task)
	if err != nil || res.Provider != "offline" {
		t.Fatalf("%+v, %v; want the offline rung's answer", res, err)
	}
	if len(prices) != 3 || prices[0] == nil || prices[1] == nil || *prices[1] != *p.Price || prices[2] != nil {
		t.Errorf("the task saw the prices %v; want dear's, paid's, none for the offline rung", prices)
	}
	if n := len(dear.Calls()); n != 0 {
		t.Errorf("the dear provider got %d requests", n)
	}
	rows := attempts(t, sqldb)
	if len(rows) != 3 {
		t.Fatalf("rows = %+v, want three", rows)
	}
	if r := rows[0]; cascade.Outcome(r.Outcome) != cascade.OutcomeSkippedCost || r.Cost != nil || r.Error == "" {
		t.Errorf("dear: %+v; want skipped_cost with the reason and no cost", r)
	}
	if r := rows[1]; r.Provider != "paid" || r.Cost == nil || int64(*r.Cost*1e6+0.5) != 210 {
		t.Errorf("paid: %+v; want a cost of 210 micro-dollars", r)
	}
	if r := rows[2]; r.Provider != "offline" || r.Cost != nil {
		t.Errorf("offline: %+v; want no cost", r)
	}
	if _, ok := cooldown(t, sqldb, "dear"); ok {
		t.Error("a provider skipped for its cost was put on cooldown")
	}
	var skips int
	for _, ev := range h.recordedEvents() {
		if ev.Kind == cascade.EventSkipCost && ev.Provider == "dear" {
			skips++
		}
	}
	if skips != 1 {
		t.Errorf("%d skip_cost events for dear, want 1", skips)
	}
}
