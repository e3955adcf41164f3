package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/memcascade/memcascade/db"
)

// A thread's metadata is one JSON object of what a host keeps about the thread beside its
// messages and settings, a member per key (memctl serve keeps its notice state under
// "serve_notice"). It is no part of the thread's Version, of its history or of its active
// context: writing it changes none of them, and an export never shows it.

// ThreadMeta returns the member key of the thread's metadata, nil when it has none.
func (s *Store) ThreadMeta(ctx context.Context, thread, key string) (json.RawMessage, error) {
	r, err := s.h.Q().GetThread(ctx, thread)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
	}
	if err != nil {
		return nil, fmt.Errorf("thread %q: read its metadata: %w", thread, err)
	}
	m, err := metaObject(thread, r.Metadata)
	if err != nil {
		return nil, err
	}
	return m[key], nil
}

// SetThreadMeta sets the member key of the thread's metadata to v, a JSON value (nil removes
// it), leaving its other members as they are. v that is not valid JSON is refused and
// nothing is written.
func (s *Store) SetThreadMeta(ctx context.Context, thread, key string, v json.RawMessage) error {
	if v != nil && !json.Valid(v) {
		return fmt.Errorf("thread %q: metadata %q: the value is not valid JSON", thread, key)
	}
	return s.h.WithTx(ctx, func(q db.Querier) error {
		r, err := q.LockThread(ctx, thread)
		if errors.Is(err, sql.ErrNoRows) {
			return fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
		}
		if err != nil {
			return fmt.Errorf("thread %q: read its metadata: %w", thread, err)
		}
		m, err := metaObject(thread, r.Metadata)
		if err != nil {
			return err
		}
		if v == nil {
			delete(m, key)
		} else {
			m[key] = v
		}
		b, err := json.Marshal(m)
		if err != nil {
			return fmt.Errorf("thread %q: metadata: %w", thread, err)
		}
		if _, err := q.SetThreadMetadata(ctx, db.SetThreadMetadataParams{Metadata: string(b), ID: thread}); err != nil {
			return fmt.Errorf("thread %q: write its metadata: %w", thread, err)
		}
		return nil
	})
}

// metaObject decodes a thread's metadata column: an empty object when none is stored.
func metaObject(thread, text string) (map[string]json.RawMessage, error) {
	m := map[string]json.RawMessage{}
	if text == "" {
		return m, nil
	}
	if err := json.Unmarshal([]byte(text), &m); err != nil {
		return nil, fmt.Errorf("thread %q: its metadata is not a JSON object: %v", thread, err)
	}
	if m == nil { // "null"
		m = map[string]json.RawMessage{}
	}
	return m, nil
}
