package compact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// transcriptOf returns the transcript part of a summarization request.
func transcriptOf(req llm.Request) string {
	u := req.Messages[len(req.Messages)-1].Content
	m := regexp.MustCompile(`\n<transcript-([0-9a-f]+)>\n`).FindStringSubmatchIndex(u)
	if m == nil {
		return ""
	}
	j := strings.LastIndex(u, "\n</transcript-"+u[m[2]:m[3]]+">")
	if j < m[1] {
		return ""
	}
	return u[m[1]:j]
}

func TestChunkingSmallWindow(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.LongThread(t, s, "t", 200, 400)
	a, _ := s.Active(ctx, "t")
	counter, _ := s.Counter(a.Thread.Encoding)
	settings := compact.Settings{TokenLimit: a.Tokens / 4, SummaryMaxTokens: 400}.WithDefaults()
	plan := compact.MakePlan(a.Entries, settings, int(float64(settings.TokenLimit)*0.5))
	window := plan.MiddleTokens / 10

	var mu sync.Mutex
	var maxTranscript int
	fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		mu.Lock()
		defer mu.Unlock()
		if n := counter.CountText(transcriptOf(req)); n > maxTranscript {
			maxTranscript = n
		}
		return llm.Response{Text: "Running summary: questions about lorem ipsum were answered.", FinishReason: "stop"}, nil
	}}
	c := compact.New(s, cascade.New(s.DB(), fakeEntry("small", fake, window)), settings)
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil {
		t.Fatalf("compact: %v", err)
	}
	if rep.Status != memory.StatusApplied || rep.Chunks < 10 {
		t.Fatalf("status %s with %d chunks, want applied with at least 10 (middle %d tokens, window %d)", rep.Status, rep.Chunks, plan.MiddleTokens, window)
	}
	if got := len(fake.Calls()); got != rep.Chunks {
		t.Fatalf("%d requests, report counts %d chunks", got, rep.Chunks)
	}
	if maxTranscript > window {
		t.Fatalf("a chunk of %d tokens was sent to a window of %d", maxTranscript, window)
	}
	// Every chunk after the first carries the running summary.
	for i, req := range fake.Calls()[1:] {
		if req.Running == "" || !strings.Contains(req.Messages[1].Content, "\n<summary_so_far-") {
			t.Fatalf("chunk %d does not carry the running summary", i+2)
		}
	}
}

func TestChunkingResplitsOnContextLength(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.LongThread(t, s, "t", 60, 400)
	a, _ := s.Active(ctx, "t")
	counter, _ := s.Counter(a.Thread.Encoding)
	// The provider claims a big window but rejects any transcript over 1500 tokens.
	fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if counter.CountText(transcriptOf(req)) > 1500 {
			return llm.Response{}, fmt.Errorf("this model's maximum context length is 2000 tokens: %w", llm.ErrContextLength)
		}
		return llm.Response{Text: "A short running summary.", FinishReason: "stop"}, nil
	}}
	casc := cascade.New(s.DB(), fakeEntry("liar", fake, 1_000_000))
	c := compact.New(s, casc, compact.Settings{TokenLimit: a.Tokens / 3, SummaryMaxTokens: 300})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %+v, %v", rep, err)
	}
	if rep.Chunks < 3 {
		t.Fatalf("%d chunks: the middle was not split smaller after context_length", rep.Chunks)
	}
	st, _ := casc.Status(ctx)
	if st[0].ConsecutiveFailures != 0 || st[0].CoolingUntil != nil {
		t.Fatalf("context_length put the provider on cooldown: %+v", st[0])
	}
	var ctxErrs int
	for _, at := range rep.Attempts {
		if cascade.Class(at.ErrorClass) == cascade.ClassContextLength {
			ctxErrs++
		}
	}
	if ctxErrs == 0 {
		t.Fatal("no context_length attempt logged")
	}
}

func TestMultiplePasses(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.LongThread(t, s, "t", 40, 400)
	a, _ := s.Active(ctx, "t")
	limit := a.Tokens / 2
	appended := false
	// While the first pass summarizes, the agent appends a burst that pushes the context back
	// over the limit: a second pass must follow.
	fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		if !appended {
			appended = true
			storetest.LongThread2(t, s, "t", 12, 600)
		}
		return llm.Response{Text: "Summary: questions and answers about lorem ipsum.", FinishReason: "stop"}, nil
	}}
	c := compact.New(s, cascade.New(s.DB(), fakeEntry("f", fake, 0)), compact.Settings{TokenLimit: limit, SummaryMaxTokens: 300})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil {
		t.Fatalf("compact: %v (%+v)", err, rep)
	}
	if rep.Passes != 2 {
		t.Fatalf("%d passes, want 2", rep.Passes)
	}
	after, _ := s.Active(ctx, "t")
	checkActive(t, after, "system", limit)
	// The second summary folds the first: one summary in the active context.
	n := 0
	for _, e := range after.Entries {
		if e.CompactionID != 0 {
			n++
		}
	}
	if n != 1 {
		t.Fatalf("%d summaries in the active context, want 1", n)
	}
}

func TestOverLimitNewestUnit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.LongThread(t, s, "t", 5, 200)
	huge := chat.TextMessage("user", strings.Repeat("enormous pasted log line ", 800))
	if _, err := s.Append(ctx, "t", []chat.Message{huge}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	fake := &cascade.Fake{}
	c := compact.New(s, cascade.New(s.DB(), fakeEntry("f", fake, 0)), compact.Settings{TokenLimit: 2000})
	rep, err := c.Compact(ctx, "t", compact.Options{})
	if !errors.Is(err, compact.ErrOverLimit) || !strings.Contains(err.Error(), "newest unit") {
		t.Fatalf("got %v, want ErrOverLimit naming the newest unit", err)
	}
	if rep.ID == 0 || rep.Error == "" {
		t.Fatalf("report %+v does not record the problem", rep)
	}
	if len(fake.Calls()) != 0 {
		t.Fatal("a provider was called for a compaction that cannot help")
	}
}

func TestConcurrentCompactionsOneWins(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.LongThread(t, s, "t", 30, 300)
	a, _ := s.Active(ctx, "t")
	before, _ := json.Marshal(a.Messages())
	var ready sync.WaitGroup
	ready.Add(2)
	release := make(chan struct{})
	fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		ready.Done()
		<-release // both compactions are summarizing at once
		return llm.Response{Text: "Summary of the lorem ipsum discussion.", FinishReason: "stop"}, nil
	}}
	c := compact.New(s, cascade.New(s.DB(), fakeEntry("f", fake, 0)), compact.Settings{TokenLimit: a.Tokens / 2})
	var wg sync.WaitGroup
	reps := make([]memory.Report, 2)
	errs := make([]error, 2)
	for i := range 2 {
		wg.Go(func() { reps[i], errs[i] = c.Compact(ctx, "t", compact.Options{Force: true}) })
	}
	ready.Wait()
	close(release)
	wg.Wait()
	applied, failed := 0, 0
	for i := range 2 {
		switch {
		case errs[i] == nil && reps[i].Status == memory.StatusApplied:
			applied++
		case memory.ErrorCode(errs[i]) == memory.CodeConflict && reps[i].Status == memory.StatusFailed && strings.Contains(reps[i].Error, "conflict"):
			failed++
		default:
			t.Errorf("compaction %d: %s, %v", i, reps[i].Status, errs[i])
		}
	}
	if applied != 1 || failed != 1 {
		t.Fatalf("%d applied, %d failed; want 1 and 1", applied, failed)
	}
	hist := exportAll(t, s, "t")
	var msgs []chat.Message
	json.Unmarshal(before, &msgs)
	if got := len(corpus.Normalized(t, hist)); got != len(msgs) {
		t.Fatalf("history has %d messages, want %d", got, len(msgs))
	}
}

func TestConcurrentCompactionsTwoProcesses(t *testing.T) {
	t.Parallel()
	if os.Getenv("MEMCASCADE_HELPER") == "compact-slowly" {
		helperCompactSlowly()
		return
	}
	ctx := context.Background()
	s, path := storetest.Open(t)
	storetest.LongThread(t, s, "t", 30, 300)
	s.Close()
	var cmds []*exec.Cmd
	var outs []*bytes.Buffer
	for range 2 {
		cmd := exec.Command(os.Args[0], "-test.run=^TestConcurrentCompactionsTwoProcesses$")
		cmd.Env = append(testdb.Environ(), "MEMCASCADE_HELPER=compact-slowly", "MEMCASCADE_DB="+path)
		var out bytes.Buffer
		cmd.Stdout, cmd.Stderr = &out, &out
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		cmds, outs = append(cmds, cmd), append(outs, &out)
	}
	for _, cmd := range cmds {
		cmd.Wait()
	}
	joined := outs[0].String() + outs[1].String()
	if strings.Count(joined, "status=applied") != 1 || strings.Count(joined, "status=failed") != 1 || !strings.Contains(joined, "conflict") {
		t.Fatalf("want one applied and one failed with a conflict:\n%s", joined)
	}
	s2, err := memory.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	if h, _ := s2.History(ctx, "t"); len(h) != 61 {
		t.Fatalf("history has %d messages, want 61", len(h))
	}
}

func helperCompactSlowly() {
	ctx := context.Background()
	s, err := memory.Open(ctx, os.Getenv("MEMCASCADE_DB"))
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	fake := &cascade.Fake{Script: []cascade.FakeStep{{Response: llm.Response{Text: "Summary of the lorem ipsum talk.", FinishReason: "stop"}, Delay: 1500 * time.Millisecond}}}
	a, _ := s.Active(ctx, "t")
	c := compact.New(s, cascade.New(s.DB(), fakeEntry("f", fake, 0)), compact.Settings{TokenLimit: a.Tokens / 2})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	fmt.Printf("status=%s err=%v\n", rep.Status, err)
	os.Exit(0)
}

// genConversation generates a random valid conversation: tool-call fan-out and parallel
// calls, ids reused after their answer, huge tool results, and maybe a pending call at the end.
func genConversation(r *rand.Rand, n int) []chat.Message {
	msgs := []chat.Message{chat.TextMessage("system", "System prompt. "+strings.Repeat("rule ", r.IntN(400)))}
	if r.IntN(3) == 0 {
		msgs = append(msgs, chat.TextMessage("developer", "Developer note."))
	}
	word := func() string { return fmt.Sprintf("fact-%d", r.IntN(1_000_000)) }
	for len(msgs) < n {
		switch r.IntN(3) {
		case 0:
			msgs = append(msgs, chat.TextMessage("user", "please "+word()+" "+strings.Repeat("x ", r.IntN(300))))
		case 1:
			msgs = append(msgs, chat.TextMessage("assistant", "ok "+word()+" "+strings.Repeat("y ", r.IntN(300))))
		default:
			calls := 1 + r.IntN(4)
			m := chat.Message{Role: "assistant", Content: json.RawMessage("null")}
			for range calls {
				id := fmt.Sprintf("call_%d", r.IntN(3)) // few ids: reused once answered
				for _, c := range m.ToolCalls {
					if c.ID == id {
						id += fmt.Sprintf("_%d", len(m.ToolCalls))
					}
				}
				m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: id, Type: "function",
					Function: chat.FunctionCall{Name: "lookup", Arguments: fmt.Sprintf(`{"key":%q}`, word())}})
			}
			msgs = append(msgs, m)
			if len(msgs) >= n && r.IntN(2) == 0 {
				return msgs // pending calls at the end
			}
			for _, c := range r.Perm(calls) {
				size := r.IntN(200)
				if r.IntN(10) == 0 {
					size = 20000 // a huge tool result
				}
				res := chat.TextMessage("tool", word()+" "+strings.Repeat("z ", size))
				res.ToolCallID = m.ToolCalls[c].ID
				msgs = append(msgs, res)
			}
		}
	}
	return msgs
}

// TestPropertyGrowingThreads compacts generated threads as they grow, checking the invariants
// of the active context after every step and that the history only ever grows. The default
// run keeps seeds 0 to 2, each with every check; -tags heavy runs seeds 0 to 11.
func TestPropertyGrowingThreads(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seeds := 3
	if storetest.Heavy {
		seeds = 12
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) {
			t.Parallel()
			r := rand.New(rand.NewPCG(uint64(seed), 7))
			s, _ := storetest.Open(t)
			msgs := genConversation(r, 40+r.IntN(120))
			total, _ := s.Counter(tokencount.EncodingO200k)
			limit := max(total.CountMessages(msgs)/3, 4*total.CountMessage(msgs[0])+3000)
			c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: limit, SummaryMaxTokens: 600})
			var prev []byte
			applied := 0
			for i := 0; i < len(msgs); {
				step := 1 + r.IntN(12)
				batch := msgs[i:min(i+step, len(msgs))]
				if _, err := s.Append(ctx, "t", batch, memory.AppendOptions{}); err != nil {
					t.Fatalf("append at %d: %v", i, err)
				}
				i += len(batch)
				rep, err := c.Compact(ctx, "t", compact.Options{})
				if err != nil && !errors.Is(err, compact.ErrOverLimit) {
					t.Fatalf("compact after %d messages: %v", i, err)
				}
				if rep.Status == memory.StatusApplied {
					applied++
				}
				a, _ := s.Active(ctx, "t")
				checkActive(t, a, "system", 0)
				if err == nil && rep.Status == memory.StatusApplied && a.Tokens > limit {
					t.Fatalf("applied, yet %d tokens over the limit %d", a.Tokens, limit)
				}
				hist := exportAll(t, s, "t")
				if !bytes.HasPrefix(hist[:len(hist)-1], prev[:max(len(prev)-1, 0)]) {
					t.Fatal("history changed: it must only grow")
				}
				prev = hist
				h, _ := s.History(ctx, "t")
				checkCallsAnswered(t, a, h)
			}
			if applied == 0 {
				t.Fatal("the thread grew past its limit and was never compacted")
			}
			t.Logf("%d messages, limit %d, %d compactions applied", len(msgs), limit, applied)
			// Every generated fact is still in the full history.
			for _, m := range msgs {
				for _, tc := range m.ToolCalls {
					if !bytes.Contains(prev, []byte(strings.ReplaceAll(tc.Function.Arguments, `"`, `\"`))) {
						t.Fatalf("history lost %s", tc.Function.Arguments)
					}
				}
			}
		})
	}
}
