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
// range.
func (s *Store) Messages(ctx context.Context, thread string, from, to int64) ([]Entry, error) {
	return s.messagesRange(ctx, thread, from, to, false)
}

// MessagesLight is Messages read as the compactor reads (see Store.ActiveLight): from the
// stored columns, without reading or decoding each message's JSON, so that a large message is
// held once, as its text. An entry's Message has role, name, tool calls and tool_call_id, no
// content or Extra: read its text with Entry.Text.
func (s *Store) MessagesLight(ctx context.Context, thread string, from, to int64) ([]Entry, error) {
	return s.messagesRange(ctx, thread, from, to, true)
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
