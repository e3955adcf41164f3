package cascade

import (
	"context"
	"time"

	"github.com/memcascade/memcascade/db"
)

// Pacing of an emergency: how long summarizing takes at the speed the attempt log shows.
const (
	// paceAttempts is how many of a provider's latest attempts measure its speed.
	paceAttempts = 20
	// paceMargin multiplies the time the measured speed gives: a request's own cost and the
	// variance of a loaded machine.
	paceMargin = 2
)

// TimeFor returns how long the first provider the cascade would ask (not offline, not cooling
// down) takes to read and write tokens tokens at the speed of its latest successful attempts in
// the attempt log ((prompt + completion tokens) / duration), with a margin. ok is false when
// that provider has no successful attempt with usage, or no provider needs the network.
// A compactor given it as its pace (compact.Config.Pace) takes it as an emergency compaction's
// budget when it exceeds the fixed one, so a slow local model is given the time it needs
// instead of being cut.
func (c *Cascade) TimeFor(ctx context.Context, tokens int) (d time.Duration, ok bool) {
	for i := range c.Entries {
		e := &c.Entries[i]
		if e.offline() {
			continue
		}
		if row, err := c.cooldownRow(ctx, e.Name); err != nil || row.CoolingUntil > c.now().UnixMilli() {
			continue
		}
		// The cascade's own rows, newest first (a host reads the log through memory.Store).
		rows, err := c.db.Q().ListAttempts(ctx, db.ListAttemptsParams{Provider: e.Name, MaxRows: paceAttempts})
		if err != nil {
			return 0, false
		}
		var toks, ms int64
		for _, r := range rows {
			if Outcome(r.Outcome) == OutcomeOK && r.DurationMs > 0 && r.PromptTokens+r.CompletionTokens > 0 {
				toks += r.PromptTokens + r.CompletionTokens
				ms += r.DurationMs
			}
		}
		if toks == 0 {
			return 0, false
		}
		perToken := time.Duration(ms) * time.Millisecond / time.Duration(toks)
		return time.Duration(tokens) * max(perToken, 1) * paceMargin, true
	}
	return 0, false
}
