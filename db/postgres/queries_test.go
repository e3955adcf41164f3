package postgres

import (
	"context"
	"database/sql"
	"strings"
	"testing"
)

func ns(s string) sql.NullString { return sql.NullString{String: s, Valid: true} }
func ni(n int64) sql.NullInt64   { return sql.NullInt64{Int64: n, Valid: true} }

// The generated queries run on PostgreSQL: a thread, its messages, a compaction that covers
// some of them, search with prefix and hostile words, and the counts memctl threads reads.
func TestQueriesSmoke(t *testing.T) {
	ctx := context.Background()
	sqldb := openTest(t, testURL(t))
	q := New(sqldb)
	if _, err := q.InsertThread(ctx, InsertThreadParams{ID: "t1", Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}", Settings: "{}", CreatedAt: 10, UpdatedAt: 10}); err != nil {
		t.Fatal(err)
	}
	texts := []struct {
		role, content string
		tokens        int64
	}{
		{"user", "the deploy key is OBUT9V, remember it", 12},
		{"assistant", "Noted: hello world", 8},
		{"user", `tricky a'b OR NOT "x" text`, 9},
		{"assistant", "unrelated reply", 5},
	}
	err := WithTx(ctx, sqldb, func(tx *sql.Tx) error {
		qt := q.WithTx(tx)
		for i, m := range texts {
			if err := qt.InsertMessage(ctx, InsertMessageParams{ThreadID: "t1", Seq: int64(i + 1), Role: m.role,
				Content: ns(m.content), Raw: `{}`, Tokens: m.tokens, CreatedAt: 20}); err != nil {
				return err
			}
		}
		return qt.SetThreadTail(ctx, SetThreadTailParams{LastSeq: int64(len(texts)), OpenCalls: "[]", UpdatedAt: 20, ID: "t1"})
	})
	if err != nil {
		t.Fatal(err)
	}
	// The seq of a thread is unique.
	if err := q.InsertMessage(ctx, InsertMessageParams{ThreadID: "t1", Seq: 2, Role: "user", Raw: "{}", Tokens: 1, CreatedAt: 1}); err == nil {
		t.Fatal("a second message with seq 2 was accepted")
	}
	msgs, err := q.ListMessagesAfter(ctx, ListMessagesAfterParams{ThreadID: "t1", AfterSeq: 1})
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) != 3 || msgs[0].Seq != 2 || msgs[0].Content.String != "Noted: hello world" {
		t.Fatalf("ListMessagesAfter: %+v", msgs)
	}

	search := func(text string) []SearchMessagesRow {
		t.Helper()
		rows, err := q.SearchMessages(ctx, SearchMessagesParams{Query: TSQuery(text), MarkOpen: "<<", MarkClose: `>"`, MaxRows: 20})
		if err != nil {
			t.Fatalf("search %q: %v", text, err)
		}
		return rows
	}
	hits := search("obut*")
	if len(hits) != 1 || hits[0].Seq != 1 || hits[0].Archived != 0 {
		t.Fatalf("prefix search obut*: %+v", hits)
	}
	if !strings.Contains(hits[0].Snippet, `<<OBUT9V>"`) {
		t.Fatalf("snippet %q does not mark the match with the given marks", hits[0].Snippet)
	}
	if hits := search("obut"); len(hits) != 0 {
		t.Fatalf("whole-word search obut matched %+v", hits)
	}
	if hits := search("HELLO wor*"); len(hits) != 1 || hits[0].Seq != 2 {
		t.Fatalf("search HELLO wor*: %+v", hits)
	}
	// Hostile text is words, never syntax: it runs, and finds the message that has them.
	hits = search(`a'b OR NOT "x" :* (`)
	if len(hits) != 1 || hits[0].Seq != 3 {
		t.Fatalf(`search a'b OR NOT "x" :* (: %+v`, hits)
	}
	for _, hostile := range []string{`'):* | !`, `\`, `(((`, "' & ! |", "x' | 'y"} {
		if _, err := q.SearchMessages(ctx, SearchMessagesParams{Query: TSQuery(hostile), MaxRows: 5}); err != nil {
			t.Errorf("search %q: %v", hostile, err)
		}
	}
	if hits := search("x' | 'unrelated"); len(hits) != 0 {
		t.Fatalf("a quote in a word opened an OR: %+v", hits)
	}

	// A compaction that summarizes seq 1..2.
	id, err := q.InsertCompaction(ctx, InsertCompactionParams{ThreadID: "t1", Status: "running", Reason: "forced", Strategy: "summarize",
		LastSeq: 4, TokenLimit: 100, TokensBefore: 34, MessagesBefore: 4, CreatedAt: 30, UpdatedAt: 30})
	if err != nil {
		t.Fatal(err)
	}
	n, err := q.ApplyCompaction(ctx, ApplyCompactionParams{FromSeq: ni(1), ToSeq: ni(2), Summary: ns("summary: the deploy key OBUT9V"),
		SummaryRole: ns("user"), SummaryTokens: 6, TokensAfter: 20, MessagesAfter: 3, FactsDropped: "[]", UpdatedAt: 31, ID: id})
	if err != nil || n != 1 {
		t.Fatalf("ApplyCompaction: %d rows, %v", n, err)
	}
	if err := q.SetCompactionTokens(ctx, id); err != nil {
		t.Fatal(err)
	}
	hits = search("obut*")
	if len(hits) != 1 || hits[0].Archived != 1 {
		t.Fatalf("message 1 after a summary covers it: %+v, want archived", hits)
	}
	sums, err := q.SearchSummaries(ctx, SearchSummariesParams{Query: TSQuery("OBUT9V"), MarkOpen: "[", MarkClose: "]", MaxRows: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums[0].ID != id || sums[0].Superseded != 0 || !strings.Contains(sums[0].Snippet, "[OBUT9V]") {
		t.Fatalf("SearchSummaries: %+v", sums)
	}

	threads, err := q.ListThreads(ctx, "")
	if err != nil {
		t.Fatal(err)
	}
	// Active context: summary (6) + messages 3 and 4 (9 + 5).
	if len(threads) != 1 || threads[0].Compacted != 1 || threads[0].ActiveMessages != 2 || threads[0].ActiveTokens != 14 ||
		threads[0].SummaryTokens != 6 || threads[0].Compactions != 1 {
		t.Fatalf("ListThreads: %+v", threads)
	}

	// A view that leaves out message 3 and masks message 4 archives both.
	vid, err := q.InsertCompaction(ctx, InsertCompactionParams{ThreadID: "t1", Status: "running", Reason: "forced", Strategy: "mask",
		LastSeq: 4, TokenLimit: 100, TokensBefore: 20, MessagesBefore: 3, CreatedAt: 40, UpdatedAt: 40})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := q.ApplyView(ctx, ApplyViewParams{FromSeq: ni(1), ToSeq: ni(2), View: `{"omitted":[[3,3]],"masked":[{"seq":4}]}`,
		ViewSeq: 4, ViewTokens: 8, ViewMessages: 1, FactsDropped: "[]", UpdatedAt: 41, ID: vid}); err != nil {
		t.Fatal(err)
	}
	if err := q.SetCompactionTokens(ctx, vid); err != nil {
		t.Fatal(err)
	}
	// Active context: the view (8), nothing after its view_seq.
	if threads, err := q.ListThreads(ctx, "t1"); err != nil || len(threads) != 1 || threads[0].Compacted != 0 || threads[0].ActiveTokens != 8 {
		t.Fatalf("ListThreads under a view: %+v, %v", threads, err)
	}
	for _, word := range []string{"tricky", "unrelated", "hello"} {
		hits := search(word)
		if len(hits) != 1 || hits[0].Archived != 1 {
			t.Errorf("search %s under a view omitting 3 and masking 4: %+v, want archived", word, hits)
		}
	}
	sums, err = q.SearchSummaries(ctx, SearchSummariesParams{Query: TSQuery("OBUT9V"), MaxRows: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(sums) != 1 || sums[0].Superseded != 1 {
		t.Fatalf("summary after a newer applied compaction: %+v, want superseded", sums)
	}

	// Attempts, usage and cooldowns.
	for _, outcome := range []string{"ok", "error", "skipped_cooldown"} {
		if _, err := q.InsertAttempt(ctx, InsertAttemptParams{CompactionID: ni(id), Provider: "local", Model: "m", StartedAt: 50,
			Outcome: outcome, PromptTokens: 100, CompletionTokens: 10, UsageEstimated: 1}); err != nil {
			t.Fatal(err)
		}
	}
	usage, err := q.CompactionUsage(ctx, ni(id))
	if err != nil {
		t.Fatal(err)
	}
	if usage.Requests != 2 || usage.PromptTokens != 200 || usage.CompletionTokens != 20 || usage.Estimated != 1 {
		t.Fatalf("CompactionUsage: %+v", usage)
	}
	if err := q.UpsertCooldown(ctx, UpsertCooldownParams{Provider: "local", CoolingUntil: 99, ConsecutiveFailures: 2, LastError: "429", UpdatedAt: 60}); err != nil {
		t.Fatal(err)
	}
	if err := q.SetContextWindow(ctx, SetContextWindowParams{Provider: "local", ContextWindow: 8192, ContextWindowAt: 61}); err != nil {
		t.Fatal(err)
	}
	cd, err := q.GetCooldown(ctx, "local")
	if err != nil {
		t.Fatal(err)
	}
	if cd.CoolingUntil != 99 || cd.ConsecutiveFailures != 2 || cd.ContextWindow != 8192 {
		t.Fatalf("GetCooldown: %+v", cd)
	}
	if n, err := q.ResetAllCooldowns(ctx, 70); err != nil || n != 1 {
		t.Fatalf("ResetAllCooldowns: %d, %v", n, err)
	}

	// Deleting the thread takes everything with it.
	if n, err := q.DeleteThread(ctx, "t1"); err != nil || n != 1 {
		t.Fatalf("DeleteThread: %d, %v", n, err)
	}
	var left int
	if err := sqldb.QueryRow("SELECT (SELECT count(*) FROM messages) + (SELECT count(*) FROM compactions) + (SELECT count(*) FROM cascade_attempts)").Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Fatalf("%d rows left after deleting the thread", left)
	}
}

// The search queries repeat the expressions of the GIN indexes exactly, so the planner can use
// them (sequential scans are turned off to ask whether it can).
func TestSearchUsesIndexes(t *testing.T) {
	ctx := context.Background()
	sqldb := openTest(t, testURL(t))
	for _, c := range []struct {
		name, query, index string
		args               []any
	}{
		{"SearchMessages", searchMessages, "messages_fts", []any{"[", "]", "'hello':*", "", int64(5)}},
		{"SearchSummaries", searchSummaries, "summaries_fts", []any{"[", "]", "'hello':*", "", int64(5)}},
	} {
		err := WithTx(ctx, sqldb, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, "SET LOCAL enable_seqscan = off"); err != nil {
				return err
			}
			rows, err := tx.QueryContext(ctx, "EXPLAIN "+c.query, c.args...)
			if err != nil {
				return err
			}
			defer rows.Close()
			var plan strings.Builder
			for rows.Next() {
				var line string
				if err := rows.Scan(&line); err != nil {
					return err
				}
				plan.WriteString(line + "\n")
			}
			if err := rows.Err(); err != nil {
				return err
			}
			if !strings.Contains(plan.String(), c.index) {
				t.Errorf("%s does not use index %s:\n%s", c.name, c.index, plan.String())
			}
			return nil
		})
		if err != nil {
			t.Fatalf("%s: %v", c.name, err)
		}
	}
}

// ThreadVersion reads the newest applied compaction (not a newer one of another status, nor
// an older applied one, nor another thread's) and the pins in seq order, and zero and ” when
// there are none.
func TestThreadVersion(t *testing.T) {
	ctx := context.Background()
	sqldb := openTest(t, testURL(t))
	q := New(sqldb)
	for _, id := range []string{"t1", "t2"} {
		if _, err := q.InsertThread(ctx, InsertThreadParams{ID: id, Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}", Settings: "{}", CreatedAt: 10, UpdatedAt: 11}); err != nil {
			t.Fatal(err)
		}
	}
	v, err := q.ThreadVersion(ctx, "t1")
	if err != nil {
		t.Fatal(err)
	}
	if v != (ThreadVersionRow{CreatedAt: 10, UpdatedAt: 11, Settings: "{}"}) {
		t.Fatalf("a thread with no compaction and no pin: %+v", v)
	}
	for _, c := range []struct {
		id        int64
		thread    string
		status    string
		updatedAt int64
	}{
		{1, "t1", "applied", 100},
		{2, "t1", "applied", 200}, // the newest applied of t1
		{3, "t1", "failed", 300},
		{4, "t2", "applied", 400},
		{5, "t1", "reverted", 500},
	} {
		if _, err := sqldb.ExecContext(ctx, `INSERT INTO compactions (id, thread_id, status, reason, last_seq, token_limit,
tokens_before, messages_before, created_at, updated_at) VALUES ($1, $2, $3, 'forced', 1, 1, 1, 1, 1, $4)`,
			c.id, c.thread, c.status, c.updatedAt); err != nil {
			t.Fatal(err)
		}
	}
	for _, p := range [][3]int64{{12, 11, 13}, {3, 3, 3}, {7, 6, 7}} {
		if _, err := sqldb.ExecContext(ctx, `INSERT INTO pins (thread_id, seq, from_seq, to_seq, created_at) VALUES ('t1', $1, $2, $3, 1)`,
			p[0], p[1], p[2]); err != nil {
			t.Fatal(err)
		}
	}
	if v, err = q.ThreadVersion(ctx, "t1"); err != nil {
		t.Fatal(err)
	}
	if v.CompactionID != 2 || v.CompactionUpdatedAt != 200 || v.Pins != "3:3:3,7:6:7,12:11:13" {
		t.Fatalf("t1: %+v", v)
	}
	if v, err = q.ThreadVersion(ctx, "t2"); err != nil {
		t.Fatal(err)
	}
	if v.CompactionID != 4 || v.CompactionUpdatedAt != 400 || v.Pins != "" {
		t.Fatalf("t2: %+v", v)
	}
	if _, err := q.ThreadVersion(ctx, "none"); err != sql.ErrNoRows {
		t.Fatalf("no thread: %v", err)
	}
}
