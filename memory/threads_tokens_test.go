package memory_test

import (
	"context"
	"strconv"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/lifesim"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// summedActiveTokens is what listing threads read before the totals were kept: for each
// thread, the tokens of its messages outside its current compaction's range, or its view's
// size plus the messages after its view_seq, summed from the messages.
const summedActiveTokens = `SELECT t.id, CAST(CASE WHEN cur.view <> '' THEN
        cur.view_tokens + (SELECT coalesce(sum(m.tokens), 0) FROM messages m WHERE m.thread_id = t.id AND m.seq > cur.view_seq)
    ELSE (SELECT coalesce(sum(m.tokens), 0) FROM messages m WHERE m.thread_id = t.id AND m.seq < coalesce(cur.from_seq, 1))
       + (SELECT coalesce(sum(m.tokens), 0) FROM messages m WHERE m.thread_id = t.id AND m.seq > coalesce(cur.to_seq, 0)) END AS BIGINT)
FROM threads t
LEFT JOIN compactions cur ON cur.id = (
    SELECT max(c2.id) FROM compactions c2 WHERE c2.thread_id = t.id AND c2.status = 'applied')`

// checkListedTokens fails t when a thread's listed active tokens are not those summed from
// its messages.
func checkListedTokens(t *testing.T, s *memory.Store, when string) {
	t.Helper()
	ctx := context.Background()
	rows, err := s.DB().Q().ListThreads(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]int64{}
	for _, r := range rows {
		listed[r.ID] = r.ActiveTokens
	}
	sums, err := s.DB().DB.QueryContext(ctx, summedActiveTokens)
	if err != nil {
		t.Fatal(err)
	}
	defer sums.Close()
	n := 0
	for sums.Next() {
		var id string
		var want int64
		if err := sums.Scan(&id, &want); err != nil {
			t.Fatal(err)
		}
		if got, ok := listed[id]; !ok || got != want {
			t.Fatalf("%s: thread %q listed with %d active tokens (listed: %v), its messages sum to %d", when, id, got, ok, want)
		}
		n++
	}
	if err := sums.Err(); err != nil || n != len(rows) {
		t.Fatalf("%s: %d threads summed (%v), %d listed", when, n, err, len(rows))
	}
}

// TestListedTokensKept: the active tokens listing threads reads from the kept totals (the
// thread's message tokens, a compaction's covered and view-prefix tokens) are those summed from
// the messages, through appends, compactions of every strategy (summaries, masks, windows,
// several summaries kept), several passes, reverts and a copy into a database whose ids are
// taken.
func TestListedTokensKept(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	msgs := lifesim.Generated(24)
	strategies := []string{compact.StrategySummarize, compact.StrategyMask, compact.StrategyWindow, compact.StrategyHybrid, compact.StrategyQueue}
	for i, strategy := range strategies {
		thread := "t-" + strategy
		c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 1500, Strategy: strategy})
		for k := 0; k < len(msgs); k += 7 {
			batch := msgs[k:min(k+7, len(msgs))]
			if _, err := s.Append(ctx, thread, batch, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
				t.Fatal(err)
			}
			checkListedTokens(t, s, thread+" after an append")
			c.Compact(ctx, thread, compact.Options{Force: true}) // one that cannot fit is refused: the listing is checked all the same
			checkListedTokens(t, s, thread+" after a compaction")
		}
		if i%2 == 0 {
			if _, err := s.Revert(ctx, thread, 0); err != nil {
				t.Fatalf("%s: revert: %v", thread, err)
			}
			checkListedTokens(t, s, thread+" after a revert")
		}
	}
	rows, err := s.DB().Q().ListAllCompactions(ctx)
	if err != nil {
		t.Fatal(err)
	}
	views, summaries, reverted := 0, 0, 0
	for _, r := range rows {
		switch {
		case r.Status == string(memory.StatusReverted):
			reverted++
		case r.Status != string(memory.StatusApplied):
		case r.View != "":
			views++
		default:
			summaries++
		}
	}
	if views == 0 || summaries == 0 || reverted == 0 {
		t.Fatalf("%d views, %d summaries applied, %d reverted: want some of each", views, summaries, reverted)
	}
	dst, _ := storetest.Open(t)
	if _, err := dst.Append(ctx, "other", msgs[:20], memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	if _, err := compact.New(dst, storetest.ExtractiveCascade(t, dst), compact.Settings{TokenLimit: 1500}).Compact(ctx, "other", compact.Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	res, err := memory.Copy(ctx, s, dst)
	if err != nil || len(res.Renumbered) == 0 {
		t.Fatalf("copy: %v, ids %s", err, res.IDs)
	}
	checkListedTokens(t, dst, "the copy")
}

// appending is a summarizer that appends a message to the thread while it writes, as an
// agent's turn taken while its thread compacts: the compaction's view_seq is then under the
// thread's last seq when its tokens are recorded.
type appending struct {
	s      *memory.Store
	thread string
	inner  compact.Summarizer
}

func (a appending) Run(ctx context.Context, id int64, task llm.Task) (llm.Result, error) {
	if _, err := a.s.Append(ctx, a.thread, []chat.Message{chat.TextMessage(chat.RoleUser, "one more turn, taken while the thread compacts")}, memory.AppendOptions{}); err != nil {
		return llm.Result{}, err
	}
	return a.inner.Run(ctx, id, task)
}

// TestViewPrefixTokensAfterAppendsMeanwhile: the view-prefix tokens of a compaction applied
// while messages were appended are those of the messages up to its view_seq, not the thread's
// message tokens (which count the messages after it too), and the listing stays right.
func TestViewPrefixTokensAfterAppendsMeanwhile(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	if _, err := s.Append(ctx, "t", lifesim.Generated(24), memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	c := compact.New(s, appending{s: s, thread: "t", inner: storetest.ExtractiveCascade(t, s)}, compact.Settings{TokenLimit: 1500})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compaction: %s, %v", rep.Status, err)
	}
	row, err := s.DB().Q().GetCompaction(ctx, rep.ID)
	if err != nil {
		t.Fatal(err)
	}
	th, err := s.DB().Q().GetThread(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if row.ViewSeq == 0 || row.ViewSeq >= th.LastSeq {
		t.Fatalf("view_seq %d, last seq %d: want a message appended after the view", row.ViewSeq, th.LastSeq)
	}
	var want int64
	if err := s.DB().DB.QueryRowContext(ctx, "SELECT coalesce(sum(tokens), 0) FROM messages WHERE thread_id = 't' AND seq <= "+strconv.FormatInt(row.ViewSeq, 10)).Scan(&want); err != nil {
		t.Fatal(err)
	}
	if row.ViewPrefixTokens != want {
		t.Fatalf("view-prefix tokens %d, the messages up to view_seq %d sum to %d", row.ViewPrefixTokens, row.ViewSeq, want)
	}
	checkListedTokens(t, s, "after a compaction with appends meanwhile")
}
