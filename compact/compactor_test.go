package compact_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
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
)

// checkActive asserts the invariants of an active context: it starts with the pinned system
// prompt, every tool result follows its call, every answered call keeps its result, and it
// fits limit.
func checkActive(t testing.TB, a memory.Active, firstRole string, limit int) {
	t.Helper()
	if len(a.Entries) == 0 || a.Entries[0].Message.Role != firstRole || a.Entries[0].CompactionID != 0 {
		t.Fatalf("active context does not start with the pinned %s message", firstRole)
	}
	open := map[string]bool{}
	for _, e := range a.Entries {
		m := e.Message
		if m.Role == chat.RoleTool {
			if !open[m.ToolCallID] {
				t.Fatalf("seq %d: tool result %q without its call in the active context", e.Seq, m.ToolCallID)
			}
			delete(open, m.ToolCallID)
		}
		for _, c := range m.ToolCalls {
			open[c.ID] = true
		}
	}
	if limit > 0 && a.Tokens > limit {
		t.Fatalf("active context has %d tokens, over the limit %d", a.Tokens, limit)
	}
}

// checkCallsAnswered asserts, replaying the history, that a call and its result are either
// both in the active context or both out of it.
func checkCallsAnswered(t testing.TB, a memory.Active, hist []memory.Entry) {
	t.Helper()
	active := map[int64]bool{}
	for _, e := range a.Entries {
		if e.CompactionID == 0 {
			active[e.Seq] = true
		}
	}
	open := map[string]int64{} // call id -> seq of the message with the unanswered call
	for _, e := range hist {
		if e.Message.Role == chat.RoleTool {
			call := open[e.Message.ToolCallID]
			delete(open, e.Message.ToolCallID)
			if active[call] != active[e.Seq] {
				t.Fatalf("call at seq %d (active %v) and its result at seq %d (active %v) were split", call, active[call], e.Seq, active[e.Seq])
			}
		}
		for _, c := range e.Message.ToolCalls {
			open[c.ID] = e.Seq
		}
	}
}

func exportAll(t testing.TB, s *memory.Store, thread string) []byte {
	t.Helper()
	h, err := s.History(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	msgs := make([]chat.Message, len(h))
	for i, e := range h {
		msgs[i] = e.Message
	}
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func TestCompactEveryConversation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, file := range corpus.Conversations(t) {
		for _, frac := range []float64{0.3, 0.5, 0.8} {
			name := fmt.Sprintf("%s/%.1f", filepath.Base(file), frac)
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				s, _ := storetest.Open(t)
				data := storetest.Import(t, s, "t", file)
				before, err := s.Active(ctx, "t")
				if err != nil {
					t.Fatal(err)
				}
				histBefore := exportAll(t, s, "t")
				limit := int(float64(before.Tokens) * frac)
				// The system prompt alone must fit the target share for a fair test.
				if before.Entries[0].Tokens > int(float64(limit)*0.4) {
					limit = int(float64(before.Entries[0].Tokens) / 0.4)
				}
				c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: limit, TargetRatio: 0.5, TriggerRatio: 0.8, SummaryMaxTokens: 2048})
				rep, err := c.Compact(ctx, "t", compact.Options{})
				if err != nil {
					t.Fatalf("compact: %v (report %+v)", err, rep)
				}
				if rep.Status != memory.StatusApplied {
					t.Fatalf("status %q (%s), want applied", rep.Status, rep.Detail)
				}
				after, err := s.Active(ctx, "t")
				if err != nil {
					t.Fatal(err)
				}
				checkActive(t, after, "system", limit)
				hist, _ := s.History(ctx, "t")
				checkCallsAnswered(t, after, hist)
				if rep.TokensAfter != after.Tokens || rep.MessagesAfter != len(after.Entries) {
					t.Fatalf("report says %d tokens / %d messages after, the store %d / %d", rep.TokensAfter, rep.MessagesAfter, after.Tokens, len(after.Entries))
				}
				if !bytes.Equal(exportAll(t, s, "t"), histBefore) {
					t.Fatal("export --all changed by compaction")
				}
				if got := corpus.Normalized(t, exportAll(t, s, "t")); len(got) != len(corpus.Normalized(t, data)) {
					t.Fatal("history lost messages")
				}
			})
		}
	}
}

func TestCompactAllProvidersFail(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", corpus.Airline)
	before, _ := s.Active(ctx, "t")
	beforeJSON, _ := json.Marshal(before.Messages())

	c := compact.New(s, storetest.FailingCascade(s), compact.Settings{TokenLimit: before.Tokens / 2})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err == nil || !errors.Is(err, compact.ErrSummarize) {
		t.Fatalf("got %v, want ErrSummarize", err)
	}
	var ce *cascade.Error
	if !errors.As(err, &ce) || len(ce.Causes) != 2 {
		t.Fatalf("error %v does not wrap both providers' causes", err)
	}
	if rep.Status != memory.StatusFailed || rep.ID == 0 {
		t.Fatalf("report %+v, want a recorded failed one", rep)
	}
	stored, err := s.Report(ctx, rep.ID)
	if err != nil || stored.Status != memory.StatusFailed || !strings.Contains(stored.Error, "a") || len(stored.Attempts) != 2 {
		t.Fatalf("stored report %+v (%v), want failed with 2 attempts", stored, err)
	}
	after, _ := s.Active(ctx, "t")
	afterJSON, _ := json.Marshal(after.Messages())
	if !bytes.Equal(beforeJSON, afterJSON) {
		t.Fatal("active context changed by a failed compaction")
	}
}

func TestCompactIneffectiveNoLoop(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	big := strings.Repeat("policy ", 3000)
	msgs := []chat.Message{chat.TextMessage("system", big), chat.TextMessage("user", "hi"), chat.TextMessage("assistant", "hello"), chat.TextMessage("user", "bye")}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	a, _ := s.Active(ctx, "t")
	fake := &cascade.Fake{}
	casc := cascade.New(s.DB(), cascade.Entry{Name: "f", Provider: fake, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
	c := compact.New(s, casc, compact.Settings{TokenLimit: a.Tokens + 100, TargetRatio: 0.5, TriggerRatio: 0.8})
	rep, err := c.Compact(ctx, "t", compact.Options{})
	if err != nil {
		t.Fatal(err)
	}
	if rep.Status != memory.StatusIneffective || rep.ID == 0 {
		t.Fatalf("report %+v, want a recorded ineffective one", rep)
	}
	if n := len(fake.Calls()); n != 0 {
		t.Fatalf("%d provider requests for an ineffective compaction", n)
	}
	if ok, err := c.ShouldCompact(ctx, "t"); ok || err != nil {
		t.Fatalf("ShouldCompact = %v, %v right after an ineffective compaction, want false", ok, err)
	}
	rep, err = c.Compact(ctx, "t", compact.Options{})
	if err != nil || rep.Status != compact.StatusNotNeeded || rep.ID != 0 {
		t.Fatalf("second unforced compaction: %+v, %v; want not_needed, nothing recorded", rep, err)
	}
	reps, _ := s.Reports(ctx, "t", 0)
	if len(reps) != 1 {
		t.Fatalf("%d reports, want 1", len(reps))
	}
	// A new message ends the wait.
	if _, err := s.Append(ctx, "t", []chat.Message{chat.TextMessage("assistant", "ok")}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	if ok, _ := c.ShouldCompact(ctx, "t"); !ok {
		t.Fatal("ShouldCompact still false after a new message")
	}
}

func TestCompactNotNeededAndDryRun(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", "../testdata/conversations/tau_bench_airline_gpt4o_task13_trial2_success.jsonl")
	a, _ := s.Active(ctx, "t")
	fake := &cascade.Fake{}
	casc := cascade.New(s.DB(), cascade.Entry{Name: "f", Provider: fake, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
	c := compact.New(s, casc, compact.Settings{TokenLimit: a.Tokens * 2})
	rep, err := c.Compact(ctx, "t", compact.Options{})
	if err != nil || rep.Status != compact.StatusNotNeeded {
		t.Fatalf("got %+v, %v; want not_needed", rep, err)
	}
	c.Settings.TokenLimit = a.Tokens
	rep, err = c.Compact(ctx, "t", compact.Options{Force: true, DryRun: true})
	if err != nil || rep.Status != compact.StatusPlanned || rep.ID != 0 {
		t.Fatalf("got %+v, %v; want planned", rep, err)
	}
	if rep.SummarizedMessages == 0 || rep.FromSeq == 0 || rep.SummaryBudget == 0 {
		t.Fatalf("dry run does not say what it would summarize: %+v", rep)
	}
	if len(fake.Calls()) != 0 {
		t.Fatal("a dry run called a provider")
	}
	if reps, _ := s.Reports(ctx, "", 0); len(reps) != 0 {
		t.Fatal("a dry run recorded a report")
	}
}

func TestCompactHooks(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", "../testdata/conversations/sweagent_marshmallow1867_function_calling.jsonl")
	a, _ := s.Active(ctx, "t")
	var hookErrs []error
	var reports []memory.Report
	var spans []compact.Span
	c := compact.NewWith(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: a.Tokens}, compact.Config{
		OnReport: func(_ context.Context, r memory.Report) error {
			reports = append(reports, r)
			return errors.New("metrics down")
		},
		OnSummarized: func(_ context.Context, sp compact.Span) error { spans = append(spans, sp); panic("memory store down") },
		HookError:    func(err error) { hookErrs = append(hookErrs, err) },
	})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("a failing hook failed the compaction: %+v, %v", rep, err)
	}
	if len(reports) != 1 || reports[0].Status != memory.StatusApplied {
		t.Fatalf("OnReport got %d reports", len(reports))
	}
	if len(spans) != 1 || len(spans[0].Messages) != rep.SummarizedMessages || spans[0].Summary == "" {
		t.Fatalf("OnSummarized got %+v", spans)
	}
	if len(hookErrs) != 2 {
		t.Fatalf("HookError got %v, want the error and the panic", hookErrs)
	}
}

// TestCompactKilledMidSummary kills a process while its provider is answering, then reopens
// the store: the thread is as it was, and the report is failed (interrupted).
func TestCompactKilledMidSummary(t *testing.T) {
	t.Parallel()
	if os.Getenv("MEMCASCADE_HELPER") == "compact-and-hang" {
		helperCompactAndHang()
		return
	}
	ctx := context.Background()
	s, path := storetest.Open(t)
	storetest.Import(t, s, "t", corpus.Airline)
	before, _ := s.Active(ctx, "t")
	beforeJSON, _ := json.Marshal(before.Messages())

	cmd := exec.Command(os.Args[0], "-test.run=^TestCompactKilledMidSummary$")
	cmd.Env = append(testdb.Environ(), "MEMCASCADE_HELPER=compact-and-hang", "MEMCASCADE_DB="+path)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	n, _ := out.Read(buf) // the helper says "summarizing" once its provider is called
	if !strings.Contains(string(buf[:n]), "summarizing") {
		t.Fatalf("helper said %q", buf[:n])
	}
	reps, _ := s.Reports(ctx, "t", 0)
	if len(reps) != 1 || reps[0].Status != memory.StatusRunning {
		t.Fatalf("reports while running: %+v", reps)
	}
	cmd.Process.Kill()
	cmd.Wait()

	s2, err := memory.Open(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer s2.Close()
	r, err := s2.Report(ctx, reps[0].ID)
	if err != nil || r.Status != memory.StatusFailed || r.Error != "interrupted" {
		t.Fatalf("after reopening: %+v, %v; want failed (interrupted)", r, err)
	}
	after, _ := s2.Active(ctx, "t")
	afterJSON, _ := json.Marshal(after.Messages())
	if !bytes.Equal(beforeJSON, afterJSON) {
		t.Fatal("active context changed by a killed compaction")
	}
}

func helperCompactAndHang() {
	ctx := context.Background()
	s, err := memory.Open(ctx, os.Getenv("MEMCASCADE_DB"))
	if err != nil {
		fmt.Println(err)
		os.Exit(3)
	}
	fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		fmt.Println("summarizing")
		<-ctx.Done()
		return llm.Response{}, ctx.Err()
	}}
	casc := cascade.New(s.DB(), cascade.Entry{Name: "slow", Provider: fake, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
	c := compact.New(s, casc, compact.Settings{TokenLimit: 8000})
	c.Compact(ctx, "t", compact.Options{Force: true})
	os.Exit(0)
}
