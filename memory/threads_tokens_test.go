package memory_test

import (
	"context"
	"encoding/json"
	"strconv"
	"strings"
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

// startingOver is a summarizer that starts its thread over while it writes (an agent's reset
// taken while the thread compacts), with more messages than the compaction planned on.
type startingOver struct {
	s      *memory.Store
	thread string
	msgs   []chat.Message
	inner  compact.Summarizer
}

func (a startingOver) Run(ctx context.Context, id int64, task llm.Task) (llm.Result, error) {
	if _, _, err := a.s.StartOver(ctx, a.thread, "", a.msgs, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		return llm.Result{}, err
	}
	return a.inner.Run(ctx, id, task)
}

// checkPrefixTokens fails t when a thread's message tokens are not the sum of its messages'
// or an applied compaction's view-prefix tokens are not the sum of those up to its view_seq;
// it returns the number of compactions applied.
func checkPrefixTokens(t *testing.T, s *memory.Store, when string) (applied int) {
	t.Helper()
	ctx := context.Background()
	threads, err := s.DB().DB.QueryContext(ctx, `SELECT t.id, t.message_tokens, (SELECT coalesce(sum(m.tokens), 0) FROM messages m WHERE m.thread_id = t.id)
FROM threads t`)
	if err != nil {
		t.Fatal(err)
	}
	defer threads.Close()
	for threads.Next() {
		var id string
		var kept, sum int64
		if err := threads.Scan(&id, &kept, &sum); err != nil {
			t.Fatal(err)
		}
		if kept != sum {
			t.Fatalf("%s: thread %q keeps %d message tokens, its messages sum to %d", when, id, kept, sum)
		}
	}
	if err := threads.Err(); err != nil {
		t.Fatal(err)
	}
	comps, err := s.DB().DB.QueryContext(ctx, `SELECT c.id, c.thread_id, c.view_seq, c.view_prefix_tokens,
    CAST((SELECT coalesce(sum(m.tokens), 0) FROM messages m WHERE m.thread_id = c.thread_id AND m.seq <= c.view_seq) AS BIGINT)
FROM compactions c WHERE c.status = 'applied'`)
	if err != nil {
		t.Fatal(err)
	}
	defer comps.Close()
	n := 0
	for comps.Next() {
		var id, viewSeq, kept, sum int64
		var thread string
		if err := comps.Scan(&id, &thread, &viewSeq, &kept, &sum); err != nil {
			t.Fatal(err)
		}
		if kept != sum {
			t.Fatalf("%s: compaction %d of %q keeps %d view-prefix tokens, its messages up to %d sum to %d", when, id, thread, kept, viewSeq, sum)
		}
		n++
	}
	if err := comps.Err(); err != nil {
		t.Fatal(err)
	}
	checkListedTokens(t, s, when)
	return n
}

// TestViewPrefixTokensThroughResets: a compaction's view-prefix tokens are the sum of its
// messages' up to its view_seq, and the thread's message tokens the sum of all of them, when
// the thread is started over while it compacts, started over (archived) then compacted,
// reverted then compacted, imported then compacted, and copied into another database.
func TestViewPrefixTokensThroughResets(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	msgs := lifesim.Generated(40)
	opt := memory.AppendOptions{Model: "gpt-4o"}
	turn := 0
	more := func(n int) []chat.Message { // n turns of plain text
		var out []chat.Message
		for range n {
			turn++
			out = append(out, chat.TextMessage(chat.RoleUser, "question "+strconv.Itoa(turn)+": what changed in the build since the last release, and why?"),
				chat.TextMessage(chat.RoleAssistant, "answer "+strconv.Itoa(turn)+": the linker flags, the cache of the test binaries and the order of the steps."))
		}
		return out
	}
	settings := compact.Settings{TokenLimit: 1500, Strategy: compact.StrategyHybrid}
	plain := compact.New(s, storetest.ExtractiveCascade(t, s), settings)

	// Started over, with more messages, while it compacts.
	if _, err := s.Append(ctx, "during", msgs[:26], opt); err != nil {
		t.Fatal(err)
	}
	during := compact.New(s, startingOver{s: s, thread: "during", msgs: msgs[:38], inner: storetest.ExtractiveCascade(t, s)}, compact.Settings{TokenLimit: 1500})
	during.Compact(ctx, "during", compact.Options{Force: true}) // its row goes with the old thread: it fails
	if th, err := s.DB().Q().GetThread(ctx, "during"); err != nil || th.LastSeq != 38 {
		t.Fatalf("the thread after its start over: last seq %d, %v; want 38", th.LastSeq, err)
	}
	checkPrefixTokens(t, s, "a start over while compacting")
	plain.Compact(ctx, "during", compact.Options{Force: true})
	checkPrefixTokens(t, s, "a compaction after a start over")

	// Compacted, started over with an archive, the new thread and the archive compacted.
	if _, err := s.Append(ctx, "reset", msgs[:32], opt); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Compact(ctx, "reset", compact.Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.StartOver(ctx, "reset", "reset-archive", msgs[:26], opt); err != nil {
		t.Fatal(err)
	}
	checkPrefixTokens(t, s, "a start over with an archive")
	for _, thread := range []string{"reset", "reset-archive"} {
		if _, err := s.Append(ctx, thread, more(3), opt); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Compact(ctx, thread, compact.Options{Force: true}); err != nil {
			t.Fatal(err)
		}
		checkPrefixTokens(t, s, "a compaction of "+thread+" after a start over")
	}

	// Reverted, appended to, then compacted again, twice.
	for range 2 {
		if _, err := s.Revert(ctx, "reset", 0); err != nil {
			t.Fatal(err)
		}
		checkPrefixTokens(t, s, "a revert")
		if _, err := s.Append(ctx, "reset", more(2), opt); err != nil {
			t.Fatal(err)
		}
		if _, err := plain.Compact(ctx, "reset", compact.Options{Force: true}); err != nil {
			t.Fatal(err)
		}
		checkPrefixTokens(t, s, "a compaction after a revert")
	}

	// Imported (JSON lines), then compacted.
	var lines strings.Builder
	for _, m := range msgs[:32] {
		b, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		lines.Write(b)
		lines.WriteByte('\n')
	}
	if _, err := s.Import(ctx, "imported", strings.NewReader(lines.String()), opt); err != nil {
		t.Fatal(err)
	}
	if _, err := plain.Compact(ctx, "imported", compact.Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	checkPrefixTokens(t, s, "an import then a compaction")

	// Copied, then compacted again in the copy.
	dst, _ := storetest.Open(t)
	if _, err := memory.Copy(ctx, s, dst); err != nil {
		t.Fatal(err)
	}
	checkPrefixTokens(t, dst, "the copy")
	for _, thread := range []string{"reset", "imported", "during"} {
		if _, err := dst.Append(ctx, thread, more(2), opt); err != nil {
			t.Fatal(err)
		}
		if _, err := compact.New(dst, storetest.ExtractiveCascade(t, dst), settings).Compact(ctx, thread, compact.Options{Force: true}); err != nil {
			t.Fatal(err)
		}
	}
	if n := checkPrefixTokens(t, dst, "compactions in the copy"); n < 4 {
		t.Fatalf("%d compactions applied: want some of each thread", n)
	}
}
