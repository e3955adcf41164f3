package cascade

import (
	"context"
	"fmt"
	"time"

	"github.com/memcascade/memcascade/db"
)

// ProviderStatus is one entry of the cascade with its cooldown state, as `memctl providers`
// shows it.
type ProviderStatus struct {
	Name          string `json:"name"`
	Type          string `json:"type"`
	Model         string `json:"model"`
	BaseURL       string `json:"base_url"`
	ContextWindow int    `json:"context_window"`
	// ContextWindowAuto: the window is read from the provider's server (context_window:
	// auto); ContextWindow is then the one cached from it, 0 until it was read.
	ContextWindowAuto bool `json:"context_window_auto,omitempty"`
	// CoolingUntil is the end of the cooldown, in UTC; nil when the provider is not cooling
	// down now.
	CoolingUntil        *time.Time `json:"cooling_until"`
	ConsecutiveFailures int        `json:"consecutive_failures"`
	LastError           string     `json:"last_error"` // redacted when stored
}

// Status lists each entry, in cascade order, with its cooldown state.
func (c *Cascade) Status(ctx context.Context) ([]ProviderStatus, error) {
	rows, err := c.db.Q().ListCooldowns(ctx)
	if err != nil {
		return nil, fmt.Errorf("cascade: list cooldowns: %w", err)
	}
	byName := make(map[string]db.ProviderCooldown, len(rows))
	for _, r := range rows {
		byName[r.Provider] = r
	}
	now := c.now().UnixMilli()
	out := make([]ProviderStatus, len(c.Entries))
	for i, e := range c.Entries {
		r := byName[e.Name]
		st := ProviderStatus{
			Name:                e.Name,
			Type:                e.Type,
			Model:               e.Model,
			BaseURL:             e.BaseURL,
			ContextWindow:       e.ContextWindow,
			ContextWindowAuto:   e.AutoWindow,
			ConsecutiveFailures: int(r.ConsecutiveFailures),
			LastError:           r.LastError,
		}
		if e.AutoWindow {
			st.ContextWindow = int(r.ContextWindow)
		}
		if r.CoolingUntil > now {
			t := time.UnixMilli(r.CoolingUntil).UTC()
			st.CoolingUntil = &t
		}
		out[i] = st
	}
	return out, nil
}

// Attempt is one row of the attempt log, as `memctl attempts` and `memctl report` show it:
// the one decoding of a cascade_attempts row, shared with memory's report.
type Attempt = db.Attempt

// Attempts reads the attempt log newest first: every provider's when provider is "", at most
// limit rows (limit <= 0: all).
func Attempts(ctx context.Context, h *db.Handle, provider string, limit int) ([]Attempt, error) {
	maxRows := int64(limit)
	if limit <= 0 {
		maxRows = -1 // SQLite: no limit
	}
	rows, err := h.Q().ListAttempts(ctx, db.ListAttemptsParams{Provider: provider, MaxRows: maxRows})
	if err != nil {
		return nil, fmt.Errorf("cascade: list attempts: %w", err)
	}
	return db.Attempts(rows), nil
}

// CompactionAttempts reads the attempts made for one compaction, oldest first.
func CompactionAttempts(ctx context.Context, h *db.Handle, compactionID int64) ([]Attempt, error) {
	rows, err := h.Q().ListCompactionAttempts(ctx, nullID(compactionID))
	if err != nil {
		return nil, fmt.Errorf("cascade: list attempts of compaction %d: %w", compactionID, err)
	}
	return db.Attempts(rows), nil
}

// Usage is what one compaction's requests cost, summed over its attempts (see Cascade.Count
// for the tokens counted locally).
type Usage = db.Usage

// CompactionUsage sums the usage of one compaction's attempts.
func CompactionUsage(ctx context.Context, h *db.Handle, compactionID int64) (Usage, error) {
	r, err := h.Q().CompactionUsage(ctx, nullID(compactionID))
	if err != nil {
		return Usage{}, fmt.Errorf("cascade: usage of compaction %d: %w", compactionID, err)
	}
	return db.UsageOf(r), nil
}
