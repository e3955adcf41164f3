package memory

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
)

// StartOver starts a thread over with msgs as its history, in one transaction: the thread's
// history is copied, as appended, to the new thread archive (which must not exist), with the
// thread's model and settings; the thread is deleted with its compaction reports; msgs are
// appended to it anew, and it keeps its settings. When anything fails (a message of msgs that
// is not valid: an *InputError naming it; archive taken) nothing is written. A thread that
// does not exist, or holds no message, is not archived: archived is false and msgs are
// appended as Append does.
func (s *Store) StartOver(ctx context.Context, thread, archive string, msgs []chat.Message, opt AppendOptions) (res AppendResult, archived bool, err error) {
	if len(msgs) == 0 {
		return AppendResult{}, false, fmt.Errorf("start %q over: %w", thread, errNoMessages)
	}
	produce := func(add func(chat.Message, []byte, int) error) error {
		for _, m := range msgs {
			if err := add(m, nil, 0); err != nil {
				return err
			}
		}
		return nil
	}
	err = s.h.LockedTx(ctx, func(q db.Querier) error {
		archived = false
		t, err := q.LockThread(ctx, thread)
		if err != nil && !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		if err == nil && t.LastSeq > 0 {
			if err := s.archiveTx(ctx, q, t, archive); err != nil {
				return err
			}
			archived = true
		}
		if err == nil {
			if _, err := q.DeleteThread(ctx, thread); err != nil {
				return err
			}
		}
		if res, err = s.appendTx(ctx, q, thread, opt, produce); err != nil {
			return err
		}
		if t.Settings != "" && t.Settings != "{}" {
			_, err = q.SetThreadSettings(ctx, db.SetThreadSettingsParams{Settings: t.Settings, ID: thread})
		}
		return err
	})
	if err != nil {
		return AppendResult{}, false, fmt.Errorf("start %q over: %w", thread, err)
	}
	return res, archived, nil
}

// archiveTx copies thread t's history to the new thread archive, with t's model and settings.
func (s *Store) archiveTx(ctx context.Context, q db.Querier, t db.Thread, archive string) error {
	if _, err := q.LockThread(ctx, archive); err == nil {
		return fmt.Errorf("the archive thread %q exists already", archive)
	} else if !errors.Is(err, sql.ErrNoRows) {
		return err
	}
	hist, err := s.messagesBetween(ctx, q, t.ID, 1, t.LastSeq, false)
	if err != nil {
		return err
	}
	if _, err := s.appendTx(ctx, q, archive, AppendOptions{Model: t.Model}, func(add func(chat.Message, []byte, int) error) error {
		for _, e := range hist {
			if err := add(e.Message, nil, 0); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		return fmt.Errorf("copy the history to %q: %w", archive, err)
	}
	if t.Settings != "" && t.Settings != "{}" {
		_, err = q.SetThreadSettings(ctx, db.SetThreadSettingsParams{Settings: t.Settings, ID: archive})
	}
	return err
}
