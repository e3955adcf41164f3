package memory

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/memcascade/memcascade/db"
)

// A thread stores its compaction settings as one JSON object that the store keeps as it is
// given (Thread.Settings reads it back): their keys, rules and merging are package compact's
// (compact.ThreadSettingsOf, compact.SaveThreadSettings).

// SetThreadSettings replaces the settings stored on a thread with raw, a JSON object (see
// compact.SaveThreadSettings, which checks them first). Anything but an object is refused and
// nothing is written.
func (s *Store) SetThreadSettings(ctx context.Context, thread string, raw json.RawMessage) error {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(raw, &obj); err != nil || obj == nil {
		return fmt.Errorf("thread %q: settings must be a JSON object", thread)
	}
	// One row's UPDATE by its id, which locks the row: on PostgreSQL at READ COMMITTED
	// (LockedTx). SERIALIZABLE failed it on commit when many threads were set at once (the
	// window memctl serve recorded on each new thread's first turn, which the append that
	// creates the thread now writes: the 50 first turns of 50 agents at once), each failure
	// retried after a growing pause.
	return s.h.LockedTx(ctx, func(q db.Querier) error {
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
