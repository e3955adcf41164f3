package postgres

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/memcascade/memcascade/db"
)

// TestAppendVersionWithOtherWriters: writers on other connections while an append holds the
// thread's row (its version read with the lock and kept, see LockThread). One that locks the
// row first (the thread's settings) waits for the append's COMMIT: the append's version is what
// a read after its COMMIT finds, and the settings land after it. One that does not (a pin)
// may commit meanwhile, unseen by the version the append returns; its tail is still what a
// read after the COMMIT finds, and the next append's version, read with the lock, has the pin:
// an append that expects the version returned before it finds it stale.
func TestAppendVersionWithOtherWriters(t *testing.T) {
	ctx := context.Background()
	h, err := OpenHandle(ctx, testURL(t), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if _, err := h.Q().InsertThread(ctx, db.InsertThreadParams{ID: "t", Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}", CreatedAt: 10, UpdatedAt: 10}); err != nil {
		t.Fatal(err)
	}
	msg := func(seq int64) db.InsertMessageParams {
		return db.InsertMessageParams{ThreadID: "t", Seq: seq, Role: "user", Content: sql.NullString{String: "hi", Valid: true},
			Raw: `{"role":"user"}`, Tokens: 3, CreatedAt: 20}
	}
	// appendOne appends a message at the next seq, runs meanwhile (if set) between the lock and
	// the writes, and returns the version it reads back after them.
	appendOne := func(updated int64, meanwhile func(pid uint32) error) db.ThreadVersionRow {
		t.Helper()
		var after db.ThreadVersionRow
		err := pipelined(ctx, h.DB, func(q db.Querier) error {
			th, err := q.LockThread(ctx, "t")
			if err != nil {
				return err
			}
			if meanwhile != nil {
				if err := meanwhile(q.(*pipe).pc.PgConn().PID()); err != nil {
					return err
				}
			}
			if err := q.InsertMessage(ctx, msg(th.LastSeq+1)); err != nil {
				return err
			}
			if err := q.SetThreadTail(ctx, db.SetThreadTailParams{LastSeq: th.LastSeq + 1, OpenCalls: "[]", UpdatedAt: updated, ID: "t"}); err != nil {
				return err
			}
			after, err = q.ThreadVersion(ctx, "t")
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		return after
	}
	fresh := func() db.ThreadVersionRow {
		t.Helper()
		v, err := h.Q().ThreadVersion(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		return v
	}
	if after, now := appendOne(20, nil), fresh(); after != now {
		t.Fatalf("an append alone returned %+v, a read after it %+v", after, now)
	}

	// waiting runs write on another connection and returns once it waits on the append's
	// backend (no sleep: the server is asked), its result on done.
	waiting := func(what string, write func() error, done chan error) func(pid uint32) error {
		return func(pid uint32) error {
			go func() { done <- write() }()
			for {
				var n int
				if err := h.DB.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
WHERE $1 = ANY(pg_blocking_pids(pid)) AND query LIKE $2`, int32(pid), "%"+what+"%").Scan(&n); err != nil {
					return err
				}
				if n > 0 {
					return nil
				}
				select {
				case err := <-done:
					return errors.Join(errors.New(what+": did not wait for the append's lock"), err)
				default:
				}
			}
		}
	}

	// The settings, from another connection, wait for the append's lock.
	done := make(chan error, 1)
	after := appendOne(30, waiting("UPDATE threads SET settings", func() error {
		_, err := h.Q().SetThreadSettings(ctx, db.SetThreadSettingsParams{Settings: `{"k":2}`, ID: "t"})
		return err
	}, done))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	now := fresh()
	if after.Settings == now.Settings || now.Settings != `{"k":2}` {
		t.Fatalf("settings %q returned by the append, %q read after: want the append's before the update", after.Settings, now.Settings)
	}
	after.Settings = now.Settings
	if after != now {
		t.Fatalf("the append returned %+v, a read after it and the settings %+v", after, now)
	}

	// A pin waits too: its row's key refers to the thread's, locked FOR UPDATE.
	after = appendOne(35, waiting("INSERT INTO pins", func() error {
		return h.Q().InsertPin(ctx, db.InsertPinParams{ThreadID: "t", Seq: 1, FromSeq: 1, ToSeq: 1, CreatedAt: 35})
	}, done))
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if now = fresh(); after.Pins != "" || now.Pins == "" {
		t.Fatalf("pins %q returned by the append, %q read after: want the append's before the pin", after.Pins, now.Pins)
	}
	if after.Pins = now.Pins; after != now {
		t.Fatalf("the append returned %+v, a read after it and the pin %+v", after, now)
	}

	// A compaction's row changed (a revert) does not wait: it commits while the append holds
	// the lock, which the version the append returns may not show; its tail is still right.
	var cid int64
	if err := h.DB.QueryRowContext(ctx, `INSERT INTO compactions (thread_id, status, reason, last_seq, token_limit, tokens_before,
    messages_before, created_at, updated_at) VALUES ('t', 'applied', 'forced', 3, 1000, 100, 3, 36, 36) RETURNING id`).Scan(&cid); err != nil {
		t.Fatal(err)
	}
	before := fresh()
	after = appendOne(40, func(uint32) error {
		_, err := h.DB.ExecContext(ctx, `UPDATE compactions SET status = 'reverted', updated_at = 38 WHERE id = $1`, cid)
		return err
	})
	now = fresh()
	if before.CompactionID != cid || now.CompactionID != 0 || after.LastSeq != now.LastSeq || after.UpdatedAt != now.UpdatedAt ||
		after.CreatedAt != now.CreatedAt || after.Settings != now.Settings || after.Pins != now.Pins {
		t.Fatalf("before %+v; the append returned %+v, a read after it and the revert %+v", before, after, now)
	}
	// The next append's version is read with its lock: the revert is there, so an append that
	// expects the version returned before it finds it stale.
	next := appendOne(50, nil)
	if next.CompactionID != now.CompactionID || next.CompactionUpdatedAt != now.CompactionUpdatedAt || next.LastSeq != now.LastSeq+1 {
		t.Fatalf("the next append returned %+v after %+v", next, now)
	}
	if now = fresh(); next != now {
		t.Fatalf("the next append returned %+v, a read after it %+v", next, now)
	}
}
