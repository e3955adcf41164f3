package dbtest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"

	"github.com/memcascade/memcascade/db"
)

// write runs fn in a write transaction of h, failing t on its error.
func write(t *testing.T, h *db.Handle, fn func(ctx context.Context, q db.Querier) error) {
	t.Helper()
	ctx := context.Background()
	if err := h.WithTx(ctx, func(q db.Querier) error { return fn(ctx, q) }); err != nil {
		t.Fatal(err)
	}
}

// thread creates thread id holding one message per text, seq 1, 2, 3..., roles user and
// assistant in turn, indexed for search, with its tail set.
func thread(t *testing.T, h *db.Handle, id string, texts ...string) {
	t.Helper()
	write(t, h, func(ctx context.Context, q db.Querier) error {
		if n, err := q.InsertThread(ctx, db.InsertThreadParams{ID: id, Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}", Settings: "{}", CreatedAt: 1, UpdatedAt: 1}); err != nil || n != 1 {
			return fmt.Errorf("InsertThread(%s) = %d, %v, want 1 row", id, n, err)
		}
		for i, text := range texts {
			role := []string{"user", "assistant"}[i%2]
			if err := q.InsertMessage(ctx, db.InsertMessageParams{
				ThreadID: id, Seq: int64(i + 1), Role: role, Content: sql.NullString{String: text, Valid: true},
				Raw: fmt.Sprintf(`{"role":%q,"content":%q}`, role, text), Tokens: int64(10 + i), CreatedAt: int64(2 + i),
			}); err != nil {
				return err
			}
		}
		return q.SetThreadTail(ctx, db.SetThreadTailParams{LastSeq: int64(len(texts)), OpenCalls: "[]", UpdatedAt: int64(len(texts) + 2), ID: id})
	})
	if err := h.IndexPending(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func seqs(msgs []db.Message) []int64 {
	var out []int64
	for _, m := range msgs {
		out = append(out, m.Seq)
	}
	return out
}

// TestAppendReadBack: messages appended to a thread read back in order, whole, by every
// listing the active context is made of; a thread or a seq written twice is refused.
func TestAppendReadBack(t *testing.T) {
	Run(t, func(t *testing.T, h *db.Handle) {
		ctx := context.Background()
		texts := []string{"first", "second", "third", "fourth"}
		thread(t, h, "t1", texts...)
		thread(t, h, "t2", "other")

		th, err := h.Q().GetThread(ctx, "t1")
		if err != nil || th.LastSeq != 4 || th.Model != "gpt-4o" || th.OpenCalls != "[]" || th.Settings != "{}" {
			t.Fatalf("GetThread = %+v, %v", th, err)
		}
		all, err := h.Q().ListMessages(ctx, "t1")
		if err != nil {
			t.Fatal(err)
		}
		if got := seqs(all); !slices.Equal(got, []int64{1, 2, 3, 4}) {
			t.Fatalf("ListMessages seqs %v", got)
		}
		for i, m := range all {
			want := fmt.Sprintf(`{"role":%q,"content":%q}`, m.Role, texts[i])
			if m.ThreadID != "t1" || m.Content.String != texts[i] || m.Raw != want || m.Tokens != int64(10+i) || m.Name.Valid {
				t.Errorf("message %d = %+v", i+1, m)
			}
		}
		after, err := h.Q().ListMessagesAfter(ctx, db.ListMessagesAfterParams{ThreadID: "t1", AfterSeq: 2})
		if err != nil || !slices.Equal(seqs(after), []int64{3, 4}) {
			t.Errorf("ListMessagesAfter(2) = %v, %v", seqs(after), err)
		}
		before, err := h.Q().ListMessagesBefore(ctx, db.ListMessagesBeforeParams{ThreadID: "t1", BeforeSeq: 2})
		if err != nil || !slices.Equal(seqs(before), []int64{1}) {
			t.Errorf("ListMessagesBefore(2) = %v, %v", seqs(before), err)
		}
		between, err := h.Q().ListMessagesBetween(ctx, db.ListMessagesBetweenParams{ThreadID: "t1", FromSeq: 2, ToSeq: 3})
		if err != nil || !slices.Equal(seqs(between), []int64{2, 3}) {
			t.Errorf("ListMessagesBetween(2, 3) = %v, %v", seqs(between), err)
		}
		none, err := h.Q().ListMessages(ctx, "missing")
		if err != nil || none == nil || len(none) != 0 {
			t.Errorf("ListMessages(missing) = %#v, %v, want an empty list", none, err)
		}
		if _, err := h.Q().GetThread(ctx, "missing"); !errors.Is(err, sql.ErrNoRows) {
			t.Errorf("GetThread(missing): %v, want sql.ErrNoRows", err)
		}

		write(t, h, func(ctx context.Context, q db.Querier) error {
			n, err := q.InsertThread(ctx, db.InsertThreadParams{ID: "t1", Model: "m", Encoding: "e", Metadata: "{}", Settings: "{}", CreatedAt: 9, UpdatedAt: 9})
			if err != nil || n != 0 {
				return fmt.Errorf("InsertThread of an existing thread = %d, %v, want 0 rows", n, err)
			}
			return nil
		})
		err = h.WithTx(ctx, func(q db.Querier) error {
			return q.InsertMessage(ctx, db.InsertMessageParams{ThreadID: "t1", Seq: 2, Role: "user", Raw: "{}", CreatedAt: 9})
		})
		if err == nil {
			t.Error("a second message with seq 2 was stored")
		}
		if again, _ := h.Q().ListMessages(ctx, "t1"); len(again) != 4 {
			t.Errorf("after the refused insert the thread holds %d messages, want 4", len(again))
		}
	})
}

// TestSearchFindsWord: a word of a message finds it and not the others, as a prefix too, in
// every thread or in one; a word no message holds finds nothing; user text is never query
// syntax.
func TestSearchFindsWord(t *testing.T) {
	Run(t, func(t *testing.T, h *db.Handle) {
		ctx := context.Background()
		thread(t, h, "t1", "the quick brown fox", "a lazy dog sleeps")
		thread(t, h, "t2", "quick thinking")
		search := func(text, threadID string) []string {
			t.Helper()
			rows, err := h.Q().SearchMessages(ctx, db.SearchMessagesParams{MarkOpen: "[", MarkClose: "]", Query: h.Match(text), ThreadID: threadID, MaxRows: 10})
			if err != nil {
				t.Fatalf("search %q: %v", text, err)
			}
			var out []string
			for _, r := range rows {
				out = append(out, fmt.Sprintf("%s/%d", r.ThreadID, r.Seq))
			}
			slices.Sort(out)
			return out
		}
		for _, tc := range []struct {
			text, thread string
			want         []string
		}{
			{"fox", "", []string{"t1/1"}},
			{"quick", "", []string{"t1/1", "t2/1"}},
			{"quick", "t2", []string{"t2/1"}},
			{"laz*", "", []string{"t1/2"}},
			{"lazy fox", "", nil},
			{"cat", "", nil},
			{`fox" OR "dog`, "", nil},
		} {
			if got := search(tc.text, tc.thread); !slices.Equal(got, tc.want) {
				t.Errorf("search %q (thread %q) = %v, want %v", tc.text, tc.thread, got, tc.want)
			}
		}
		rows, err := h.Q().SearchMessages(ctx, db.SearchMessagesParams{MarkOpen: "[", MarkClose: "]", Query: h.Match("fox"), MaxRows: 10})
		if err != nil || len(rows) != 1 || rows[0].Role != "user" || rows[0].Archived != 0 || !containsMark(rows[0].Snippet, "[fox]") {
			t.Errorf("search fox = %+v, %v: want one user message, not archived, snippet marking fox", rows, err)
		}
		if h.Match("  *  ") != "" {
			t.Errorf("Match of no word = %q, want \"\"", h.Match("  *  "))
		}
	})
}

func containsMark(s, mark string) bool {
	for i := 0; i+len(mark) <= len(s); i++ {
		if s[i:i+len(mark)] == mark {
			return true
		}
	}
	return false
}

// compaction records a running compaction of thread id planned on base.
func compaction(t *testing.T, h *db.Handle, id string, base int64, updated int64) int64 {
	t.Helper()
	var cid int64
	write(t, h, func(ctx context.Context, q db.Querier) error {
		var err error
		cid, err = q.InsertCompaction(ctx, db.InsertCompactionParams{
			ThreadID: id, Status: "running", Reason: "forced", Strategy: "summarize", BaseID: sql.NullInt64{Int64: base, Valid: base != 0},
			LastSeq: 4, TokenLimit: 1000, TokensBefore: 46, MessagesBefore: 4, LeaseUntil: updated + 30000, CreatedAt: updated, UpdatedAt: updated,
		})
		return err
	})
	return cid
}

// TestCompactionApplyRevert: an applied compaction is the thread's current one and archives the
// messages it covers from search; reverted, the one before it is current again; a status change
// from a status the row no longer has changes nothing.
func TestCompactionApplyRevert(t *testing.T) {
	Run(t, func(t *testing.T, h *db.Handle) {
		ctx := context.Background()
		thread(t, h, "t1", "alpha one", "beta two", "gamma three", "delta four")
		if _, err := h.Q().CurrentCompaction(ctx, "t1"); !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("CurrentCompaction of a new thread: %v, want sql.ErrNoRows", err)
		}
		apply := func(cid, to int64, summary string) {
			t.Helper()
			write(t, h, func(ctx context.Context, q db.Querier) error {
				n, err := q.ApplyCompaction(ctx, db.ApplyCompactionParams{
					FromSeq: sql.NullInt64{Int64: 1, Valid: true}, ToSeq: sql.NullInt64{Int64: to, Valid: true},
					Summary: sql.NullString{String: summary, Valid: true}, SummaryRole: sql.NullString{String: "user", Valid: true},
					SummaryTokens: 5, TokensAfter: 20, MessagesAfter: 3, SummarizedMessages: to, FactsDropped: "[]", UpdatedAt: 100, ID: cid,
				})
				if err != nil || n != 1 {
					return fmt.Errorf("ApplyCompaction(%d) = %d, %v, want 1 row", cid, n, err)
				}
				return nil
			})
		}
		first := compaction(t, h, "t1", 0, 50)
		apply(first, 1, "summary of alpha")
		second := compaction(t, h, "t1", first, 60)
		apply(second, 2, "summary of alpha and beta")

		cur, err := h.Q().CurrentCompaction(ctx, "t1")
		if err != nil || cur.ID != second || cur.Status != "applied" || cur.Summary.String != "summary of alpha and beta" || cur.ToSeq.Int64 != 2 {
			t.Fatalf("CurrentCompaction = %+v, %v, want %d applied", cur, err, second)
		}
		archived := func(word string) int64 {
			t.Helper()
			rows, err := h.Q().SearchMessages(ctx, db.SearchMessagesParams{MarkOpen: "[", MarkClose: "]", Query: h.Match(word), ThreadID: "t1", MaxRows: 10})
			if err != nil || len(rows) != 1 {
				t.Fatalf("search %s = %+v, %v", word, rows, err)
			}
			return rows[0].Archived
		}
		if archived("beta") != 1 || archived("gamma") != 0 {
			t.Errorf("archived: beta %d (want 1, summarized), gamma %d (want 0)", archived("beta"), archived("gamma"))
		}

		revert := func(id int64, from string) int64 {
			t.Helper()
			var n int64
			write(t, h, func(ctx context.Context, q db.Querier) error {
				var err error
				n, err = q.SetCompactionStatus(ctx, db.SetCompactionStatusParams{NewStatus: "reverted", UpdatedAt: 200, ID: id, OldStatus: from})
				return err
			})
			return n
		}
		if n := revert(second, "applied"); n != 1 {
			t.Fatalf("revert = %d rows, want 1", n)
		}
		if n := revert(second, "applied"); n != 0 {
			t.Errorf("revert of a reverted compaction = %d rows, want 0", n)
		}
		cur, err = h.Q().CurrentCompaction(ctx, "t1")
		if err != nil || cur.ID != first {
			t.Errorf("after the revert CurrentCompaction = %d, %v, want %d", cur.ID, err, first)
		}
		if archived("beta") != 0 || archived("alpha") != 1 {
			t.Errorf("after the revert: beta archived %d (want 0), alpha %d (want 1)", archived("beta"), archived("alpha"))
		}
		got, err := h.Q().GetCompaction(ctx, second)
		if err != nil || got.Status != "reverted" || got.UpdatedAt != 200 {
			t.Errorf("GetCompaction(reverted) = %+v, %v", got, err)
		}
		list, err := h.Q().ListCompactions(ctx, db.ListCompactionsParams{ThreadID: "t1", MaxRows: 10})
		if err != nil || len(list) != 2 || list[0].ID != second || list[1].ID != first {
			t.Errorf("ListCompactions: %d rows, %v, want newest first", len(list), err)
		}
	})
}

// TestCooldownSetRead: a provider's cooldown reads back as set, is replaced by the next one, and
// a reset clears it; a provider never cooled has no row.
func TestCooldownSetRead(t *testing.T) {
	Run(t, func(t *testing.T, h *db.Handle) {
		ctx := context.Background()
		if _, err := h.Q().GetCooldown(ctx, "openai"); !errors.Is(err, sql.ErrNoRows) {
			t.Fatalf("GetCooldown of a provider never cooled: %v, want sql.ErrNoRows", err)
		}
		set := func(p db.UpsertCooldownParams) {
			write(t, h, func(ctx context.Context, q db.Querier) error { return q.UpsertCooldown(ctx, p) })
		}
		set(db.UpsertCooldownParams{Provider: "openai", CoolingUntil: 1000, ConsecutiveFailures: 1, LastError: "rate limited", UpdatedAt: 10})
		set(db.UpsertCooldownParams{Provider: "openai", CoolingUntil: 5000, ConsecutiveFailures: 2, LastError: "rate limited again", UpdatedAt: 20})
		set(db.UpsertCooldownParams{Provider: "local", CoolingUntil: 700, ConsecutiveFailures: 1, LastError: "down", UpdatedAt: 30})
		c, err := h.Q().GetCooldown(ctx, "openai")
		want := db.ProviderCooldown{Provider: "openai", CoolingUntil: 5000, ConsecutiveFailures: 2, LastError: "rate limited again", UpdatedAt: 20}
		if err != nil || c != want {
			t.Fatalf("GetCooldown = %+v, %v, want %+v", c, err, want)
		}
		write(t, h, func(ctx context.Context, q db.Querier) error {
			return q.SetContextWindow(ctx, db.SetContextWindowParams{Provider: "openai", ContextWindow: 128000, ContextWindowAt: 40})
		})
		var n int64
		write(t, h, func(ctx context.Context, q db.Querier) error {
			var err error
			n, err = q.ResetCooldown(ctx, db.ResetCooldownParams{UpdatedAt: 50, Provider: "openai"})
			return err
		})
		c, err = h.Q().GetCooldown(ctx, "openai")
		want = db.ProviderCooldown{Provider: "openai", UpdatedAt: 50, ContextWindow: 128000, ContextWindowAt: 40}
		if n != 1 || err != nil || c != want {
			t.Errorf("after ResetCooldown (%d rows): %+v, %v, want %+v", n, c, err, want)
		}
		all, err := h.Q().ListCooldowns(ctx)
		if err != nil || len(all) != 2 || all[0].Provider != "local" || all[1].Provider != "openai" {
			t.Errorf("ListCooldowns = %+v, %v, want local then openai", all, err)
		}
	})
}

// TestAttemptsLog: attempts read back newest first, of every provider or of one, limited,
// and per compaction with the usage its requests sum to (skips send no request).
func TestAttemptsLog(t *testing.T) {
	Run(t, func(t *testing.T, h *db.Handle) {
		ctx := context.Background()
		thread(t, h, "t1", "hello")
		cid := compaction(t, h, "t1", 0, 10)
		var ids []int64
		for _, a := range []db.InsertAttemptParams{
			{CompactionID: sql.NullInt64{Int64: cid, Valid: true}, Provider: "a", Model: "m1", StartedAt: 11, Outcome: "error", HttpStatus: 429, ErrorClass: "rate_limit", Error: "slow down", PromptTokens: 100},
			{CompactionID: sql.NullInt64{Int64: cid, Valid: true}, Provider: "b", Model: "m2", StartedAt: 12, Outcome: "skipped_cooldown"},
			{CompactionID: sql.NullInt64{Int64: cid, Valid: true}, Provider: "b", Model: "m2", StartedAt: 13, Outcome: "ok", HttpStatus: 200, PromptTokens: 120, CompletionTokens: 30, UsageEstimated: 1},
			{Provider: "a", Model: "m1", StartedAt: 14, Outcome: "ok", HttpStatus: 200},
		} {
			write(t, h, func(ctx context.Context, q db.Querier) error {
				id, err := q.InsertAttempt(ctx, a)
				ids = append(ids, id)
				return err
			})
		}
		if !slices.IsSorted(ids) || len(slices.Compact(slices.Clone(ids))) != 4 {
			t.Fatalf("attempt ids %v, want increasing", ids)
		}
		idsOf := func(rows []db.CascadeAttempt) []int64 {
			var out []int64
			for _, r := range rows {
				out = append(out, r.ID)
			}
			return out
		}
		all, err := h.Q().ListAttempts(ctx, db.ListAttemptsParams{MaxRows: 10})
		if err != nil || !slices.Equal(idsOf(all), []int64{ids[3], ids[2], ids[1], ids[0]}) {
			t.Errorf("ListAttempts = %v, %v, want newest first", idsOf(all), err)
		}
		if all[3].Error != "slow down" || all[3].HttpStatus != 429 || all[3].ErrorClass != "rate_limit" || all[3].CompactionID.Int64 != cid {
			t.Errorf("first attempt read back as %+v", all[3])
		}
		ofA, err := h.Q().ListAttempts(ctx, db.ListAttemptsParams{Provider: "a", MaxRows: 1})
		if err != nil || !slices.Equal(idsOf(ofA), []int64{ids[3]}) {
			t.Errorf("ListAttempts(a, 1) = %v, %v, want [%d]", idsOf(ofA), err, ids[3])
		}
		ofC, err := h.Q().ListCompactionAttempts(ctx, sql.NullInt64{Int64: cid, Valid: true})
		if err != nil || !slices.Equal(idsOf(ofC), ids[:3]) {
			t.Errorf("ListCompactionAttempts = %v, %v, want %v", idsOf(ofC), err, ids[:3])
		}
		u, err := h.Q().CompactionUsage(ctx, sql.NullInt64{Int64: cid, Valid: true})
		want := db.CompactionUsageRow{Requests: 2, PromptTokens: 220, CompletionTokens: 30, Estimated: 1}
		if err != nil || u != want {
			t.Errorf("CompactionUsage = %+v, %v, want %+v", u, err, want)
		}
	})
}

// TestHousekeeping: prune lists the settled reports older than its cutoff (never the applied
// one, never the one an applied compaction was planned on or whose ledger it is written
// against), deletes them with their attempts,
// and counts and deletes loose attempts before its cutoff.
func TestHousekeeping(t *testing.T) {
	Run(t, func(t *testing.T, h *db.Handle) {
		ctx := context.Background()
		thread(t, h, "t1", "one", "two")
		settle := func(id int64, status string, at int64) {
			write(t, h, func(ctx context.Context, q db.Querier) error {
				n, err := q.FinishCompaction(ctx, db.FinishCompactionParams{Status: status, Error: status, UpdatedAt: at, ID: id})
				if err != nil || n != 1 {
					return fmt.Errorf("FinishCompaction(%d, %s) = %d, %v", id, status, n, err)
				}
				return nil
			})
		}
		base := compaction(t, h, "t1", 0, 10)
		settle(base, "failed", 11) // an applied compaction was planned on it: kept
		ledgerBase := compaction(t, h, "t1", 0, 12)
		settle(ledgerBase, "reverted", 13) // an applied compaction's ledger is written against it: kept
		old := compaction(t, h, "t1", 0, 20)
		settle(old, "failed", 21)
		recent := compaction(t, h, "t1", 0, 900)
		settle(recent, "failed", 901) // after the cutoff: kept
		applied := compaction(t, h, "t1", base, 30)
		write(t, h, func(ctx context.Context, q db.Querier) error {
			_, err := q.ApplyCompaction(ctx, db.ApplyCompactionParams{FromSeq: sql.NullInt64{Int64: 1, Valid: true}, ToSeq: sql.NullInt64{Int64: 1, Valid: true},
				Summary: sql.NullString{String: "s", Valid: true}, FactsDropped: "[]", UpdatedAt: 31, ID: applied,
				LedgerBase: sql.NullInt64{Int64: ledgerBase, Valid: true}})
			return err
		})
		for _, a := range []db.InsertAttemptParams{
			{CompactionID: sql.NullInt64{Int64: old, Valid: true}, Provider: "a", StartedAt: 20, Outcome: "error"},
			{CompactionID: sql.NullInt64{Int64: old, Valid: true}, Provider: "b", StartedAt: 20, Outcome: "error"},
			{Provider: "a", StartedAt: 40, Outcome: "ok"},
			{Provider: "a", StartedAt: 950, Outcome: "ok"},
		} {
			write(t, h, func(ctx context.Context, q db.Querier) error { _, err := q.InsertAttempt(ctx, a); return err })
		}

		prunable, err := h.Q().PrunableCompactions(ctx, 500)
		want := []db.PrunableCompactionsRow{{ID: old, ThreadID: "t1", Status: "failed", UpdatedAt: 21, Attempts: 2}}
		if err != nil || !slices.Equal(prunable, want) {
			t.Fatalf("PrunableCompactions(500) = %+v, %v, want %+v", prunable, err, want)
		}
		loose, err := h.Q().CountLooseAttempts(ctx, 500)
		if err != nil || loose != 1 {
			t.Errorf("CountLooseAttempts(500) = %d, %v, want 1", loose, err)
		}
		write(t, h, func(ctx context.Context, q db.Querier) error {
			if n, err := q.DeletePrunableCompaction(ctx, old); err != nil || n != 1 {
				return fmt.Errorf("DeletePrunableCompaction = %d, %v", n, err)
			}
			if n, err := q.DeletePrunableCompaction(ctx, applied); err != nil || n != 0 {
				return fmt.Errorf("DeletePrunableCompaction(applied) = %d, %v, want 0 rows", n, err)
			}
			if n, err := q.DeleteLooseAttempts(ctx, 500); err != nil || n != 1 {
				return fmt.Errorf("DeleteLooseAttempts = %d, %v", n, err)
			}
			return nil
		})
		if _, err := h.Q().GetCompaction(ctx, old); !errors.Is(err, sql.ErrNoRows) {
			t.Errorf("the pruned compaction: %v, want sql.ErrNoRows", err)
		}
		left, err := h.Q().ListAttempts(ctx, db.ListAttemptsParams{MaxRows: 10})
		if err != nil || len(left) != 1 || left[0].StartedAt != 950 {
			t.Errorf("attempts left: %+v, %v, want only the one after the cutoff", left, err)
		}
		if size, err := h.Size(ctx); err != nil || size <= 0 {
			t.Errorf("Size = %d, %v", size, err)
		}
		if err := h.Check(ctx); err != nil {
			t.Errorf("Check: %v", err)
		}
		if err := h.Vacuum(ctx); err != nil {
			t.Errorf("Vacuum: %v", err)
		}
	})
}
