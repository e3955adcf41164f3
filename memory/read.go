package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/memcascade/memcascade/db"
)

// Messages returns the messages from..to (both included) of a thread as they were appended,
// oldest first, archived ones included: what a compaction covered can always be read back. A
// range beyond the thread's messages is clipped; an empty one is an error naming the thread's
// range. They are read whole or light (ReadOptions.Light; at most one ReadOptions).
func (s *Store) Messages(ctx context.Context, thread string, from, to int64, opt ...ReadOptions) ([]Entry, error) {
	o, err := readOptions(thread, opt)
	if err != nil {
		return nil, err
	}
	if o.Live {
		return nil, fmt.Errorf("read %q: ReadOptions: Live is Active's, not Messages'", thread)
	}
	return s.messagesRange(ctx, thread, from, to, o.Light)
}

func (s *Store) messagesRange(ctx context.Context, thread string, from, to int64, light bool) ([]Entry, error) {
	return readTx(ctx, s, func(q db.Querier) ([]Entry, error) {
		r, err := q.GetThread(ctx, thread)
		if errors.Is(err, sql.ErrNoRows) {
			return nil, fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
		} else if err != nil {
			return nil, err
		}
		from, to = max(from, 1), min(to, r.LastSeq)
		if from > to {
			return nil, fmt.Errorf("%w: thread %q has messages 1..%d: no message in the range asked", ErrMessageNotFound, thread, r.LastSeq)
		}
		return s.messagesBetween(ctx, q, thread, from, to, light)
	})
}

// Shortened reports whether the entry is shown masked or cut by a compaction's view: the
// active context holds a placeholder or a part of the message, not the message.
func (e Entry) shortened() bool { return e.mark != nil }
