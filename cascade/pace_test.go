package cascade_test

import (
	"context"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/db"
)

// TestTimeFor: the time to summarize comes from the first provider's successful attempts in
// the log (tokens per second, with a margin of 2); failed attempts and the offline rung do not
// count; a provider with no measure gives none.
func TestTimeFor(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	h, _ := openDB(t)
	c := cascade.New(h,
		cascade.Entry{Name: "slow", Type: "fake", Model: "m", Provider: &cascade.Fake{}, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute},
		cascade.Entry{Name: "offline", Type: "extractive", Model: "extractive", Provider: &cascade.Fake{}, Offline: true})
	if _, ok := c.TimeFor(ctx, 1000); ok {
		t.Fatal("a time without any measure")
	}
	for _, a := range []db.InsertAttemptParams{
		{Provider: "slow", Model: "m", DurationMs: 5000, Outcome: "ok", PromptTokens: 1000, CompletionTokens: 100},
		{Provider: "slow", Model: "m", DurationMs: 6000, Outcome: "ok", PromptTokens: 1100, CompletionTokens: 110},
		{Provider: "slow", Model: "m", DurationMs: 60000, Outcome: "error", ErrorClass: "timeout", PromptTokens: 900},
		{Provider: "offline", Model: "extractive", DurationMs: 1, Outcome: "ok", PromptTokens: 100000},
	} {
		if _, err := h.Q().InsertAttempt(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	// 2310 tokens in 11 s: 4.76 ms a token; 21,000 tokens take 100 s, 200 s with the margin.
	d, ok := c.TimeFor(ctx, 21000)
	if !ok || d < 199*time.Second || d > 201*time.Second {
		t.Fatalf("TimeFor(21000) = %s, %v; want 200s", d, ok)
	}
}
