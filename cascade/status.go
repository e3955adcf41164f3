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
