package compact_test

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// filler is a provider that writes prose with no fact at all, as long as it is allowed to: the
// worst case for the facts guarantee (every fact must be appended, and the budget is full).
func filler() *cascade.Fake {
	return &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		words := max(req.TargetTokens, req.MaxTokens) * 3 / 4
		return llm.Response{Text: strings.TrimSpace(strings.Repeat("the conversation went on. ", max(1, words/4))), FinishReason: "stop"}, nil
	}}
}

// checkFactsGuarantee asserts the facts guarantee of an applied compaction: every fact of
// every ledger of what was summarized is in the active context after it, or named in
// facts_dropped; and no value named in facts_dropped is in the active context (the report
// never claims a loss that did not happen, nor hides one).
func checkFactsGuarantee(t *testing.T, s *memory.Store, thread string, rep memory.Report, spans []compact.Span) (total int) {
	t.Helper()
	after, err := s.Active(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	text := activeText(after)
	seen := map[string]bool{}
	for _, sp := range spans {
		for i, ok := range facts.Kept(sp.Facts, text) {
			f := sp.Facts[i]
			if seen[f.Text] {
				continue
			}
			seen[f.Text] = true
			if !ok && !slices.Contains(rep.FactsDropped, f.Text) {
				t.Errorf("fact %q (%s) is neither in the active context nor in facts_dropped", f.Text, f.Kind)
			}
		}
	}
	for _, d := range rep.FactsDropped {
		for _, sp := range spans {
			for i, ok := range facts.Kept(sp.Facts, text) {
				if ok && sp.Facts[i].Text == d {
					t.Errorf("facts_dropped names %q, which is in the active context", d)
				}
			}
		}
	}
	stored, err := s.Report(context.Background(), rep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(stored.FactsDropped, rep.FactsDropped) {
		t.Errorf("stored facts_dropped %q, returned %q", stored.FactsDropped, rep.FactsDropped)
	}
	return len(seen)
}

// TestFactsKeptOrDropped compacts every recorded conversation at limits of 1500, 3000 and
// 8000 tokens, with the offline summarizer and with a provider whose prose holds no fact:
// after every applied compaction the facts guarantee holds.
func TestFactsKeptOrDropped(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, file := range corpus.Conversations(t) {
		for _, limit := range []int{1500, 3000, 8000} {
			for _, prov := range []string{"offline", "filler"} {
				name := fmt.Sprintf("%s/%d/%s", filepath.Base(file), limit, prov)
				t.Run(name, func(t *testing.T) {
					t.Parallel()
					s, _ := storetest.Open(t)
					storetest.Import(t, s, "t", file)
					var casc *cascade.Cascade
					if prov == "offline" {
						casc = storetest.ExtractiveCascade(t, s)
					} else {
						casc = cascade.New(s.DB(), fakeEntry("filler", filler(), 0))
					}
					var spans []compact.Span
					c := compact.NewWith(s, casc, compact.Settings{TokenLimit: limit}, compact.Config{OnSummarized: func(_ context.Context, sp compact.Span) error { spans = append(spans, sp); return nil }})
					rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
					if rep.Status != memory.StatusApplied {
						// Nothing was committed: only an ineffective plan may end so.
						if rep.Status != memory.StatusIneffective {
							t.Fatalf("compact: %s, %v", rep.Status, err)
						}
						t.Logf("FACTS %s: ineffective: %s", name, rep.Detail)
						return
					}
					total := checkFactsGuarantee(t, s, "t", rep, spans)
					t.Logf("FACTS %s: %d facts, %d dropped, tokens %d -> %d, summary %d tokens, err %v",
						name, total, len(rep.FactsDropped), rep.TokensBefore, rep.TokensAfter, rep.SummaryTokens, err)
				})
			}
		}
	}
}

// TestFactsMakeRoomBeforeDropping: a provider that fills summary_max_tokens with fact-free
// prose. The facts do not fit beside it; room is made (the facts take the budget ahead of
// the prose, up to what the limit allows) and none is dropped while the limit has room.
func TestFactsMakeRoomBeforeDropping(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", "../testdata/conversations/tau_bench_airline_gpt4o_task13_trial2_success.jsonl")
	before, _ := s.Active(ctx, "t")
	casc := cascade.New(s.DB(), fakeEntry("filler", filler(), 0))
	var spans []compact.Span
	c := compact.NewWith(s, casc, compact.Settings{TokenLimit: before.Tokens * 7 / 10, SummaryMaxTokens: 200}, compact.Config{OnSummarized: func(_ context.Context, sp compact.Span) error { spans = append(spans, sp); return nil }})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %+v, %v", rep, err)
	}
	if rep.FactsKept != 0 {
		t.Fatalf("the filler's prose held %d facts, want 0", rep.FactsKept)
	}
	if total := checkFactsGuarantee(t, s, "t", rep, spans); total < 20 {
		t.Fatalf("only %d facts: not a test of making room", total)
	}
	if len(rep.FactsDropped) != 0 {
		t.Fatalf("dropped %q although the limit had room for them", rep.FactsDropped)
	}
	if rep.SummaryTokens <= 200 {
		t.Fatalf("summary of %d tokens: the facts did not get room beyond summary_max_tokens", rep.SummaryTokens)
	}
}

// TestConstraintSurvivesTinyLimit: a user's constraint with ids and amounts, summarized at a
// limit so small that not every fact fits: the constraint is kept first, and whatever is left
// out is named in facts_dropped.
func TestConstraintSurvivesTinyLimit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	msgs := []chat.Message{chat.TextMessage("system", "You are a travel agent.")}
	msgs = append(msgs, chat.TextMessage("user", "I must never fly before 11 AM, my budget is $400, and my code is ZQ9XYZ."))
	for i := range 12 {
		msgs = append(msgs,
			chat.TextMessage("assistant", fmt.Sprintf("Option %d: flight HAT%03d on 2024-05-%02d at 1%d:30 for $%d, reservation R%05dX.", i, 100+i, 10+i, i%10, 300+i, 10000+i)),
			chat.TextMessage("user", fmt.Sprintf("Tell me more about option %d please.", i)))
	}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	var spans []compact.Span
	c := compact.NewWith(s, cascade.New(s.DB(), fakeEntry("filler", filler(), 0)), compact.Settings{TokenLimit: 300}, compact.Config{OnSummarized: func(_ context.Context, sp compact.Span) error { spans = append(spans, sp); return nil }})
	rep, _ := c.Compact(ctx, "t", compact.Options{Force: true})
	if rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %+v", rep)
	}
	checkFactsGuarantee(t, s, "t", rep, spans)
	after, _ := s.Active(ctx, "t")
	if text := activeText(after); !strings.Contains(text, "never fly before 11 AM") {
		t.Errorf("the user's constraint is not in the active context:\n%s", text)
	}
	if len(rep.FactsDropped) == 0 {
		t.Fatalf("at a 300-token limit every fact fit? summary %d tokens; not a test of dropping", rep.SummaryTokens)
	}
	t.Logf("dropped %d: %q", len(rep.FactsDropped), rep.FactsDropped)
}

// TestOverLimitIsNeverNotNeeded: a thread compacted at a large limit, then checked at a
// smaller one, is over its limit: it compacts, and ShouldCompact agrees. The same holds after
// an ineffective compaction at a large limit.
func TestOverLimitIsNeverNotNeeded(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", corpus.Airline)
	a, _ := s.Active(ctx, "t")
	big := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: a.Tokens * 2})
	rep, err := big.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || (rep.Status != memory.StatusApplied && rep.Status != memory.StatusIneffective) {
		t.Fatalf("first compaction: %+v, %v", rep, err)
	}
	if due, _ := big.ShouldCompact(ctx, "t"); due {
		t.Fatal("ShouldCompact true at the same large limit right after a compaction")
	}
	after, _ := s.Active(ctx, "t")
	small := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: after.Tokens / 2})
	due, err := small.ShouldCompact(ctx, "t")
	if err != nil || !due {
		t.Fatalf("ShouldCompact = %v, %v for a context of %d tokens at a limit of %d", due, err, after.Tokens, after.Tokens/2)
	}
	rep, err = small.Compact(ctx, "t", compact.Options{})
	if rep.Status == compact.StatusNotNeeded {
		t.Fatalf("a context over its limit was reported not_needed: %s", rep.Detail)
	}
	if rep.Status != memory.StatusApplied || err != nil {
		t.Fatalf("compaction at the smaller limit: %+v, %v", rep, err)
	}
	now, _ := s.Active(ctx, "t")
	if now.Tokens > after.Tokens/2 {
		t.Fatalf("%d tokens after, over the limit %d", now.Tokens, after.Tokens/2)
	}
}

// TestOverLimitNothingToSummarize: over the limit with nothing that can be summarized, an
// unforced compaction never says not_needed, even right after the same ineffective one: it
// records ineffective and fails saying why.
func TestOverLimitNothingToSummarize(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	msgs := []chat.Message{chat.TextMessage("system", strings.Repeat("policy ", 3000)), chat.TextMessage("user", "hi")}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	c := compact.New(s, cascade.New(s.DB(), fakeEntry("f", &cascade.Fake{}, 0)), compact.Settings{TokenLimit: 1000})
	for i := range 2 {
		if due, _ := c.ShouldCompact(ctx, "t"); !due {
			t.Fatalf("run %d: ShouldCompact false over the limit", i)
		}
		rep, err := c.Compact(ctx, "t", compact.Options{})
		if rep.Status != memory.StatusIneffective || err == nil || !strings.Contains(err.Error(), "pinned messages") {
			t.Fatalf("run %d: %s, %v; want ineffective and an error naming the pinned messages", i, rep.Status, err)
		}
		if rep.TokensAfter != rep.TokensBefore || rep.MessagesAfter != rep.MessagesBefore {
			t.Fatalf("run %d: a compaction that changed nothing reports tokens %d -> %d, messages %d -> %d",
				i, rep.TokensBefore, rep.TokensAfter, rep.MessagesBefore, rep.MessagesAfter)
		}
	}
}

// TestReportsAreTrue: an ineffective compaction shows the context as it was and stores its
// explanation; a failed one too; chunks counts the requests of the provider whose summary was
// used, requests every request.
func TestReportsAreTrue(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.LongThread(t, s, "t", 40, 400)
	// The first provider splits the middle into several chunks and fails on the last one; the
	// second has no window limit and answers in one request.
	var n int
	first := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		n++
		if req.Accept != nil {
			return llm.Response{}, &cascade.ProviderError{Class: cascade.ClassServer, HTTPStatus: 500, Err: errors.New("boom")}
		}
		return llm.Response{Text: "running summary", FinishReason: "stop"}, nil
	}}
	second := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return llm.Response{Text: "the summary", FinishReason: "stop"}, nil
	}}
	casc := cascade.New(s.DB(), fakeEntry("small", first, 2048), fakeEntry("big", second, 0))
	c := compact.New(s, casc, compact.Settings{TokenLimit: 8000})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied || rep.Provider != "big" {
		t.Fatalf("compact: %+v, %v", rep, err)
	}
	if n < 2 {
		t.Fatalf("the first provider got %d requests; the test needs it to chunk", n)
	}
	if rep.Chunks != 1 || rep.Requests != n+1 {
		t.Fatalf("chunks %d requests %d; want 1 (the winner's) and %d (all)", rep.Chunks, rep.Requests, n+1)
	}

	s2, _ := storetest.Open(t)
	msgs := []chat.Message{chat.TextMessage("system", strings.Repeat("policy ", 3000)), chat.TextMessage("user", "hi"),
		chat.TextMessage("assistant", "hello"), chat.TextMessage("user", "bye")}
	if _, err := s2.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	c2 := compact.New(s2, cascade.New(s2.DB(), fakeEntry("f", &cascade.Fake{}, 0)), compact.Settings{TokenLimit: 100000})
	rep, err = c2.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusIneffective {
		t.Fatalf("compact: %+v, %v", rep, err)
	}
	stored, err := s2.Report(ctx, rep.ID)
	if err != nil {
		t.Fatal(err)
	}
	if stored.TokensAfter != stored.TokensBefore || stored.MessagesAfter != stored.MessagesBefore {
		t.Fatalf("ineffective report: tokens %d -> %d, messages %d -> %d", stored.TokensBefore, stored.TokensAfter, stored.MessagesBefore, stored.MessagesAfter)
	}
	if stored.Detail == "" || stored.Detail != rep.Detail {
		t.Fatalf("stored detail %q, printed %q", stored.Detail, rep.Detail)
	}

	// Every provider fails: the report shows the context unchanged.
	s3, _ := storetest.Open(t)
	storetest.LongThread(t, s3, "t", 40, 400)
	down := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return llm.Response{}, &cascade.ProviderError{Class: cascade.ClassServer, HTTPStatus: 503, Err: errors.New("down")}
	}}
	c3 := compact.New(s3, cascade.New(s3.DB(), fakeEntry("down", down, 0)), compact.Settings{TokenLimit: 8000})
	rep, err = c3.Compact(ctx, "t", compact.Options{Force: true})
	if err == nil || rep.Status != memory.StatusFailed {
		t.Fatalf("compact: %+v, %v", rep, err)
	}
	if rep.TokensAfter != rep.TokensBefore || rep.MessagesAfter != rep.MessagesBefore || rep.Requests != 1 || rep.Chunks != 0 {
		t.Fatalf("failed report: tokens %d -> %d, messages %d -> %d, requests %d, chunks %d",
			rep.TokensBefore, rep.TokensAfter, rep.MessagesBefore, rep.MessagesAfter, rep.Requests, rep.Chunks)
	}
}

// TestLiveCompactionKeepsItsLease: a compaction that runs longer than its lease renews it, so
// a store opened meanwhile (another process, another container) does not mark it interrupted,
// and the compaction applies.
func TestLiveCompactionKeepsItsLease(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	lease := 600 * time.Millisecond
	s, path := storetest.OpenWith(t, memory.Options{Lease: lease})
	storetest.LongThread(t, s, "t", 40, 400)
	release := make(chan struct{})
	slow := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		<-release
		return llm.Response{Text: "the summary", FinishReason: "stop"}, nil
	}}
	c := compact.New(s, cascade.New(s.DB(), fakeEntry("slow", slow, 0)), compact.Settings{TokenLimit: 8000})
	done := make(chan memory.Report)
	go func() {
		rep, _ := c.Compact(ctx, "t", compact.Options{Force: true})
		done <- rep
	}()
	// Wait until the first lease has run out and a renewed one is still valid, then open.
	var running memory.Report
	start := time.Now()
	for {
		reps, _ := s.Reports(ctx, "t", 1)
		if len(reps) == 1 && reps[0].LeaseUntil != nil && time.Since(start) > 2*lease && time.Until(*reps[0].LeaseUntil) > 300*time.Millisecond {
			running = reps[0]
			break
		}
		if time.Since(start) > 20*time.Second {
			t.Fatalf("no renewed lease seen: %+v", reps)
		}
		time.Sleep(20 * time.Millisecond)
	}
	other, err := memory.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	if r, _ := other.Report(ctx, running.ID); r.Status != memory.StatusRunning {
		t.Fatalf("a live compaction holding its lease was marked %s (%s)", r.Status, r.Error)
	}
	close(release)
	if rep := <-done; rep.Status != memory.StatusApplied {
		t.Fatalf("the live compaction ended %s: %s", rep.Status, rep.Error)
	}
}
