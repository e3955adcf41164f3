package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/db"
)

// A host that serves a thread turn after turn (memctl serve) keeps what it read of it, its
// history and its active context (a live read: Store.Active with ReadOptions.Live), and checks before each turn that the thread is still what it
// read: Version is what the active context is made from, read by one query of indexed rows.
// Any change by any process (an append, a compaction applied or reverted, a pin, new settings,
// the thread deleted and made again) changes it.

// Version identifies the stored state a thread's history and active context are made from.
// Two versions of a thread are equal when nothing that makes them changed in between.
type Version struct {
	// Found is false when the thread does not exist (the other fields are then zero).
	Found bool
	// CreatedAt is the thread's creation time (Unix milliseconds): a thread deleted and made
	// again is another thread. LastSeq is its newest message.
	CreatedAt, LastSeq int64
	// Compaction is the current (newest applied) compaction's id, 0 for none, and
	// CompactionUpdated the time its row last changed.
	Compaction, CompactionUpdated int64
	// Pins lists the thread's pins (seq:from:to, by seq).
	Pins string
	// Settings is the thread's stored settings, as stored (a JSON object).
	Settings string
}

// SameContext reports whether the active context of two versions is the same, whatever their
// settings.
func (v Version) SameContext(o Version) bool {
	v.Settings, o.Settings = "", ""
	return v == o
}

// ErrStale is the error of an append given a version (AppendOptions.Expect) that is no
// longer the thread's: nothing was written.
var ErrStale = errors.New("the thread changed since it was read")

// Version reads the thread's version; a thread that does not exist has Found false.
func (s *Store) Version(ctx context.Context, thread string) (Version, error) {
	return threadVersion(ctx, s.h.Q(), thread)
}

func threadVersion(ctx context.Context, q db.Querier, thread string) (Version, error) {
	r, err := q.ThreadVersion(ctx, thread)
	if errors.Is(err, sql.ErrNoRows) {
		return Version{}, nil
	}
	if err != nil {
		return Version{}, fmt.Errorf("thread %q: read its version: %w", thread, err)
	}
	return Version{Found: true, CreatedAt: r.CreatedAt, LastSeq: r.LastSeq, Compaction: r.CompactionID,
		CompactionUpdated: r.CompactionUpdatedAt, Pins: r.Pins, Settings: r.Settings}, nil
}

// readLive is Active with ReadOptions.Live in q's transaction: the active context with the
// thread's whole history and the version of both. The active context's messages that are
// stored messages shown as stored share their memory with History's.
func (s *Store) readLive(ctx context.Context, q db.Querier, thread string) (Active, error) {
	v, err := threadVersion(ctx, q, thread)
	if err != nil {
		return Active{}, err
	}
	if !v.Found {
		return Active{}, fmt.Errorf("%w: %q", ErrThreadNotFound, thread)
	}
	rows, err := q.ListMessages(ctx, thread)
	if err != nil {
		return Active{}, err
	}
	hist, err := entries(rows)
	if err != nil {
		return Active{}, err
	}
	a, err := s.active(ctx, q, thread)
	if err != nil {
		return Active{}, err
	}
	a.Version, a.History = v, make([]chat.Message, len(hist))
	for i, e := range hist {
		a.History[i] = e.Message
	}
	for i, e := range a.Entries {
		if e.Seq >= 1 && e.Seq <= int64(len(hist)) && e.mark == nil && e.CompactionID == 0 {
			a.Entries[i].Message = a.History[e.Seq-1]
		}
	}
	return a, nil
}

// createdLive is what readLive reads of a thread after the append res that created it, made
// from the append: t is the thread's row as created (its updated_at the append's time, which
// its new tail sets again), msgs the messages appended. A new thread's active context is its
// messages, whole and in order (it has no compaction and no pin: a thread deleted has its
// rows deleted with it), each as appended.
func createdLive(t db.Thread, res AppendResult, msgs []chat.Message) Active {
	a := Active{Thread: threadFromRow(t.ID, t.Model, t.Encoding, res.LastSeq, t.CreatedAt, t.UpdatedAt)}
	a.Thread.Settings = settingsJSON(t.Settings)
	a.History = slices.Clone(msgs)
	a.Entries = slices.Clone(res.Entries)
	for i := range a.Entries {
		a.Entries[i].Message = a.History[i]
	}
	a.Tokens = PromptTokens(a.Entries)
	a.Thread.ActiveMessages, a.Thread.ActiveTokens = len(a.Entries), a.Tokens
	a.Version = res.After
	return a
}

// appendLive is Append with AppendOptions.Live: it also reports what a host that keeps the
// thread needs to follow it without reading it again (AppendResult's Entries, Raw, Before,
// After and Read). On SQLite, concurrent calls are committed together (group commit,
// batch.go), each all or nothing. With opt.Expect set, the append is made only when the
// thread's active context is that of *opt.Expect (Version.SameContext; a Version with Found
// false: the thread does not exist yet); otherwise it returns ErrStale and writes nothing.
func (s *Store) appendLive(ctx context.Context, thread string, msgs []chat.Message, opt AppendOptions) (AppendResult, error) {
	if err := checkThreadID(thread); err != nil {
		return AppendResult{}, err
	}
	expect := opt.Expect
	var out AppendResult
	err := s.writeTx(ctx, func(ctx context.Context, q db.Querier) error {
		out = AppendResult{Entries: make([]Entry, 0, len(msgs)), Raw: make([]json.RawMessage, 0, len(msgs))}
		kept := func(raw string, tokens int) {
			i := len(out.Entries)
			out.Entries = append(out.Entries, Entry{Tokens: tokens, Message: msgs[i]})
			out.Raw = append(out.Raw, json.RawMessage(raw))
		}
		var row db.Thread
		res, err := s.appendRows(ctx, q, thread, opt, func(add func(chat.Message, []byte, int) error) error {
			for _, m := range msgs {
				if err := add(m, nil, 0); err != nil {
					return err
				}
			}
			return nil
		}, kept, &row)
		if err != nil {
			return err
		}
		// Read after the writes: on PostgreSQL the thread's row is locked by then, so what
		// this reads of the rest is at least as new as what the writes were based on.
		after, err := threadVersion(ctx, q, thread)
		if err != nil {
			return err
		}
		before := after
		before.LastSeq = res.FirstSeq - 1
		if res.Created {
			before = Version{}
		}
		if expect != nil && !before.SameContext(*expect) {
			return ErrStale
		}
		for i := range out.Entries {
			out.Entries[i].Seq = res.FirstSeq + int64(i)
		}
		res.Entries, res.Raw, res.Before, res.After = out.Entries, out.Raw, before, after
		if res.Created {
			a := createdLive(row, res, msgs)
			res.Read = &a
		}
		out = res
		return nil
	})
	if err != nil {
		return AppendResult{}, fmt.Errorf("append to %q: %w", thread, err)
	}
	return out, nil
}
