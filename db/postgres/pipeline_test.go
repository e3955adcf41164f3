package postgres

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/memcascade/memcascade/db"
)

// TestAppendTxPipelined: an append through AppendTx (its writes queued and sent with the next
// read or the COMMIT) commits what it wrote and reads it back in the transaction; a queued
// write that fails is returned by the read sent with it, naming it, and nothing of the
// transaction is committed; the connection serves the next transaction; an error of the
// caller, or its panic, rolls back what was queued and sent.
func TestAppendTxPipelined(t *testing.T) {
	ctx := context.Background()
	h, err := OpenHandle(ctx, testURL(t), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	h.DB.SetMaxOpenConns(1) // every transaction on the one connection: each finds it clean
	msg := func(thread string, seq int64, text string) db.InsertMessageParams {
		return db.InsertMessageParams{ThreadID: thread, Seq: seq, Role: "user", Content: sql.NullString{String: text, Valid: true},
			Raw: `{"role":"user"}`, Tokens: 3, CreatedAt: 20}
	}
	create := func(q db.Querier, thread string) error {
		if _, err := q.LockThread(ctx, thread); !errors.Is(err, sql.ErrNoRows) {
			return errors.Join(errors.New("LockThread of a new thread: want sql.ErrNoRows"), err)
		}
		_, err := q.InsertThread(ctx, db.InsertThreadParams{ID: thread, Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}", Settings: "{}", CreatedAt: 10, UpdatedAt: 10})
		return err
	}

	// Committed, and read back in the transaction.
	err = h.AppendTx(ctx, func(q db.Querier) error {
		if err := create(q, "t1"); err != nil {
			return err
		}
		for i, text := range []string{"first", "second"} {
			if err := q.InsertMessage(ctx, msg("t1", int64(i+1), text)); err != nil {
				return err
			}
		}
		if err := q.SetThreadTail(ctx, db.SetThreadTailParams{LastSeq: 2, OpenCalls: "[]", UpdatedAt: 30, ID: "t1"}); err != nil {
			return err
		}
		v, err := q.ThreadVersion(ctx, "t1")
		if err != nil || v.LastSeq != 2 || v.UpdatedAt != 30 {
			return errors.Join(errors.New("version read back after the writes"), err)
		}
		ms, err := q.ListMessages(ctx, "t1") // not pipelined: on the same connection, in the transaction
		if err != nil || len(ms) != 2 || ms[1].Content.String != "second" {
			return errors.Join(errors.New("messages read back after the writes"), err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	th, err := h.Q().GetThread(ctx, "t1")
	if err != nil || th.LastSeq != 2 || th.MessageTokens != 6 {
		t.Fatalf("after the commit: %+v, %v; want last seq 2, 6 tokens", th, err)
	}

	// A queued write that fails: its error comes with the read, named, and nothing is committed.
	var readErr error
	err = h.AppendTx(ctx, func(q db.Querier) error {
		if err := create(q, "t2"); err != nil {
			return err
		}
		if err := q.InsertMessage(ctx, msg("t2", 1, "kept?")); err != nil {
			return err
		}
		if err := q.InsertMessage(ctx, msg("t2", 1, "the same seq")); err != nil {
			return err // queued: not sent yet
		}
		_, readErr = q.ThreadVersion(ctx, "t2")
		return readErr
	})
	var pe *pgconn.PgError
	if err == nil || !errors.As(err, &pe) || pe.Code != "23505" || !strings.Contains(err.Error(), "InsertMessage") {
		t.Fatalf("a duplicate seq: %v; want the unique violation of InsertMessage", err)
	}
	if readErr == nil {
		t.Error("the read sent with the failed write returned no error")
	}
	if _, err := h.Q().GetThread(ctx, "t2"); !errors.Is(err, sql.ErrNoRows) {
		t.Fatalf("thread t2 after its transaction failed: %v; want none", err)
	}

	// The caller's error after writes were sent: rolled back. Then the connection is clean.
	stale := errors.New("stale")
	err = h.AppendTx(ctx, func(q db.Querier) error {
		if _, err := q.LockThread(ctx, "t1"); err != nil {
			return err
		}
		if err := q.InsertMessage(ctx, msg("t1", 3, "third")); err != nil {
			return err
		}
		if _, err := q.ThreadVersion(ctx, "t1"); err != nil {
			return err
		}
		return stale
	})
	if !errors.Is(err, stale) {
		t.Fatalf("the caller's error: %v", err)
	}
	if ms, err := h.Q().ListMessages(ctx, "t1"); err != nil || len(ms) != 2 {
		t.Fatalf("t1 after a rolled-back append: %d messages, %v; want 2", len(ms), err)
	}
	// A panic after writes were sent: the transaction is rolled back, not left open on the
	// connection for the next one to commit.
	func() {
		defer func() {
			if recover() == nil {
				t.Error("the panic did not come through")
			}
		}()
		_ = h.AppendTx(ctx, func(q db.Querier) error {
			if err := q.InsertMessage(ctx, msg("t1", 4, "after a panic")); err != nil {
				return err
			}
			if _, err := q.ThreadVersion(ctx, "t1"); err != nil {
				return err
			}
			panic("in the transaction")
		})
	}()
	err = h.AppendTx(ctx, func(q db.Querier) error {
		if _, err := q.LockThread(ctx, "t1"); err != nil {
			return err
		}
		if err := q.InsertMessage(ctx, msg("t1", 3, "third")); err != nil {
			return err
		}
		return q.SetThreadTail(ctx, db.SetThreadTailParams{LastSeq: 3, OpenCalls: "[]", UpdatedAt: 40, ID: "t1"})
	})
	if err != nil {
		t.Fatal(err)
	}
	if th, err := h.Q().GetThread(ctx, "t1"); err != nil || th.LastSeq != 3 || th.MessageTokens != 9 {
		t.Fatalf("t1 after the writes sent with the COMMIT: %+v, %v", th, err)
	}
	if ms, err := h.Q().ListMessages(ctx, "t1"); err != nil || len(ms) != 3 {
		t.Fatalf("t1: %d messages, %v; want 3 (none of the transaction that panicked)", len(ms), err)
	}
	if st := h.DB.Stats(); st.OpenConnections != 1 {
		t.Errorf("%d connections open; want the one, kept", st.OpenConnections)
	}
}

// TestAppendTxTwoRoundTrips: an append to a thread that exists is two pipelines, BEGIN with
// the lock and the version, then the writes with the COMMIT; the version read back after the
// writes is the one read with the lock with the new tail, as a read sent after the writes
// gives it; a write that fails is reported by the COMMIT, naming it, and nothing is committed.
func TestAppendTxTwoRoundTrips(t *testing.T) {
	ctx := context.Background()
	h, err := OpenHandle(ctx, testURL(t), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	err = h.WithTx(ctx, func(q db.Querier) error {
		if _, err := q.InsertThread(ctx, db.InsertThreadParams{ID: "t", Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}", Settings: "{}", CreatedAt: 10, UpdatedAt: 10}); err != nil {
			return err
		}
		_, err := q.SetThreadSettings(ctx, db.SetThreadSettingsParams{Settings: `{"k":1}`, ID: "t"})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	msg := func(seq int64) db.InsertMessageParams {
		return db.InsertMessageParams{ThreadID: "t", Seq: seq, Role: "user", Content: sql.NullString{String: "hi", Valid: true},
			Raw: `{"role":"user"}`, Tokens: 3, CreatedAt: 20}
	}
	var p *pipe
	var kept, read db.ThreadVersionRow
	err = pipelined(ctx, h.DB, func(q db.Querier) error {
		p = q.(*pipe)
		th, err := q.LockThread(ctx, "t")
		if err != nil {
			return err
		}
		if err := q.InsertMessage(ctx, msg(th.LastSeq+1)); err != nil {
			return err
		}
		if err := q.SetThreadTail(ctx, db.SetThreadTailParams{LastSeq: th.LastSeq + 1, OpenCalls: "[]", UpdatedAt: 30, ID: "t"}); err != nil {
			return err
		}
		if kept, err = q.ThreadVersion(ctx, "t"); err != nil {
			return err
		}
		if p.sent != 1 {
			t.Errorf("%d pipelines sent before the COMMIT; want 1 (the lock with the version)", p.sent)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if p.sent != 2 {
		t.Errorf("%d pipelines sent; want 2", p.sent)
	}
	if kept.LastSeq != 1 || kept.UpdatedAt != 30 || kept.CreatedAt != 10 || kept.Settings != `{"k":1}` {
		t.Errorf("version read back: %+v; want last seq 1, updated 30, created 10, the settings", kept)
	}
	// The same append, the version read by a query sent after the writes: the same version.
	err = pipelined(ctx, h.DB, func(q db.Querier) error {
		p = q.(*pipe)
		if _, err := q.LockThread(ctx, "t"); err != nil {
			return err
		}
		if err := q.InsertMessage(ctx, msg(2)); err != nil {
			return err
		}
		if err := q.SetThreadTail(ctx, db.SetThreadTailParams{LastSeq: 2, OpenCalls: "[]", UpdatedAt: 40, ID: "t"}); err != nil {
			return err
		}
		if kept, err = q.ThreadVersion(ctx, "t"); err != nil {
			return err
		}
		read, err = p.Querier.ThreadVersion(ctx, "t") // not pipelined: sent after the writes
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if kept != read || read.LastSeq != 2 {
		t.Errorf("version kept with the lock %+v, read after the writes %+v; want the same, last seq 2", kept, read)
	}

	// A write that fails: the version is still what the lock read, the COMMIT reports the
	// write, and nothing is committed.
	var verErr error
	err = pipelined(ctx, h.DB, func(q db.Querier) error {
		if _, err := q.LockThread(ctx, "t"); err != nil {
			return err
		}
		if err := q.InsertMessage(ctx, msg(2)); err != nil { // seq 2 is taken
			return err
		}
		if err := q.SetThreadTail(ctx, db.SetThreadTailParams{LastSeq: 3, OpenCalls: "[]", UpdatedAt: 50, ID: "t"}); err != nil {
			return err
		}
		_, verErr = q.ThreadVersion(ctx, "t")
		return verErr
	})
	var pe *pgconn.PgError
	if verErr != nil || !errors.As(err, &pe) || pe.Code != "23505" || !strings.Contains(err.Error(), "InsertMessage") {
		t.Fatalf("a duplicate seq: version read %v, append %v; want the version, then the unique violation of InsertMessage", verErr, err)
	}
	if th, err := h.Q().GetThread(ctx, "t"); err != nil || th.LastSeq != 2 || th.UpdatedAt != 40 {
		t.Fatalf("after the failed append: %+v, %v; want last seq 2, updated 40", th, err)
	}
}

// TestAppendTxTailTakesUsage: a reply's usage queued right before the thread's tail is sent
// with it as one UPDATE, and the row gets both (the usage counted, the cost added or left
// NULL, the tail and its tokens); a usage of another thread is not merged.
func TestAppendTxTailTakesUsage(t *testing.T) {
	ctx := context.Background()
	h, err := OpenHandle(ctx, testURL(t), db.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	for _, id := range []string{"t", "u"} {
		if _, err := h.Q().InsertThread(ctx, db.InsertThreadParams{ID: id, Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}", Settings: "{}", CreatedAt: 10, UpdatedAt: 10}); err != nil {
			t.Fatal(err)
		}
	}
	appendReply := func(seq int64, cost sql.NullInt64, usageOf string) (statements int) {
		t.Helper()
		err := pipelined(ctx, h.DB, func(q db.Querier) error {
			p := q.(*pipe)
			if _, err := q.LockThread(ctx, "t"); err != nil {
				return err
			}
			if err := q.InsertMessage(ctx, db.InsertMessageParams{ThreadID: "t", Seq: seq, Role: "assistant",
				Content: sql.NullString{String: "reply", Valid: true}, Raw: `{"role":"assistant"}`, Tokens: 5, CreatedAt: 20}); err != nil {
				return err
			}
			if err := q.AddReplyUsage(ctx, db.AddReplyUsageParams{PromptTokens: 100, CachedTokens: 40, CostMicros: cost, ID: usageOf}); err != nil {
				return err
			}
			if err := q.SetThreadTail(ctx, db.SetThreadTailParams{LastSeq: seq, OpenCalls: "[]", UpdatedAt: 30 + seq, ID: "t"}); err != nil {
				return err
			}
			statements = len(p.pending)
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		return statements
	}
	if n := appendReply(1, sql.NullInt64{}, "t"); n != 2 {
		t.Errorf("%d statements queued after the lock; want 2 (the message, the tail with the usage)", n)
	}
	th, err := h.Q().GetThread(ctx, "t")
	if err != nil || th.LastSeq != 1 || th.UpdatedAt != 31 || th.MessageTokens != 5 || th.Replies != 1 ||
		th.PromptTokens != 100 || th.CachedTokens != 40 || th.UpstreamCostMicros.Valid {
		t.Fatalf("after a reply with no cost: %+v, %v", th, err)
	}
	appendReply(2, sql.NullInt64{Int64: 7, Valid: true}, "t")
	if th, err = h.Q().GetThread(ctx, "t"); err != nil || th.LastSeq != 2 || th.MessageTokens != 10 || th.Replies != 2 ||
		th.PromptTokens != 200 || th.CachedTokens != 80 || th.UpstreamCostMicros != (sql.NullInt64{Int64: 7, Valid: true}) {
		t.Fatalf("after a priced reply: %+v, %v", th, err)
	}
	if n := appendReply(3, sql.NullInt64{Int64: 1, Valid: true}, "u"); n != 3 {
		t.Errorf("%d statements queued after the lock; want 3 (another thread's usage is not merged)", n)
	}
	u, uerr := h.Q().GetThread(ctx, "u")
	if th, err = h.Q().GetThread(ctx, "t"); err != nil || uerr != nil || th.LastSeq != 3 || th.Replies != 2 || u.Replies != 1 || u.UpstreamCostMicros.Int64 != 1 {
		t.Fatalf("after another thread's usage: t %+v, u %+v, %v, %v", th, u, err, uerr)
	}
}
