package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/memcascade/memcascade/db"
)

// A thread stores its compaction settings as one JSON object that the store keeps as it is
// given: their keys, rules and merging are package compact's (compact.ThreadSettings,
// compact.SaveThreadSettings).

// ThreadSettings returns the settings stored on a thread, a JSON object ({} for a thread that
// never had any).
func (s *Store) ThreadSettings(ctx context.Context, thread string) (json.RawMessage, error) {
	r, err := s.h.Q().GetThread(ctx, thread)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
	}
	if err != nil {
		return nil, err
	}
	return settingsJSON(r.Settings), nil
}

// SetThreadSettings replaces the settings stored on a thread with raw, a JSON object (see
// compact.SaveThreadSettings, which checks them first). Anything but an object is refused and
// nothing is written.
func (s *Store) SetThreadSettings(ctx context.Context, thread string, raw json.RawMessage) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return fmt.Errorf("thread %q: settings must be a JSON object", thread)
	}
	return s.h.WithTx(ctx, func(q db.Querier) error {
		n, err := q.SetThreadSettings(ctx, db.SetThreadSettingsParams{Settings: string(raw), ID: thread})
		if err != nil {
			return fmt.Errorf("thread %q: set settings: %w", thread, err)
		}
		if n == 0 {
			return fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
		}
		return nil
	})
}

// settingsJSON is a thread's settings column as JSON: {} when none are stored.
func settingsJSON(text string) json.RawMessage {
	if text == "" {
		return json.RawMessage("{}")
	}
	return json.RawMessage(text)
}
