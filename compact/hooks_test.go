package compact_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// hookThread appends a thread whose oldest user message holds the fact factURL, then n pairs.
// It returns the tokens of the active context.
func hookThread(t *testing.T, s *memory.Store, thread string, n int) int {
	t.Helper()
	msgs := []chat.Message{chat.TextMessage("system", "You are a deployment assistant."),
		chat.TextMessage("user", "Deploy the release notes to "+factURL+" please."),
		chat.TextMessage("assistant", "Done, they are deployed.")}
	for i := range n {
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("question %d: %s", i, strings.Repeat("lorem ipsum dolor ", 12))),
			chat.TextMessage("assistant", fmt.Sprintf("answer %d: %s", i, strings.Repeat("sit amet consectetur ", 12))))
	}
	if _, err := s.Append(context.Background(), thread, msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	th, err := s.Thread(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	return th.ActiveTokens
}

const factURL = "https://deploy.example.com/releases/notes-42"

// summaryFake is a provider that answers a summary holding the fact, and records its requests.
func summaryFake() *cascade.Fake {
	return &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return llm.Response{Text: "## Work done\nThe notes were deployed to " + factURL + ".", FinishReason: "stop", Model: "m"}, nil
	}}
}

// rowCounts are the rows a compaction may write: its reports and the attempt log.
func rowCounts(t *testing.T, s *memory.Store, thread string) (reports, attempts int) {
	t.Helper()
	ctx := context.Background()
	reps, err := s.Reports(ctx, thread, 0)
	if err != nil {
		t.Fatal(err)
	}
	atts, err := s.Attempts(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	return len(reps), len(atts)
}

// TestHookInstructionsReachProvider: the call's instructions and the hook's are in the request
// the provider gets, redacted, after the fenced transcript; the hook is told the plan.
func TestHookInstructionsReachProvider(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	limit := hookThread(t, s, "t", 16)
	fake := summaryFake()
	secret := "sk-proj-" + strings.Repeat("Ab3dE", 8)
	var events []compact.HookEvent
	var after []memory.Report
	c := compact.NewWith(s, cascade.New(s.DB(), fakeEntry("p", fake, 0)), compact.Settings{TokenLimit: limit}, compact.Config{
		BeforeCompaction: func(_ context.Context, ev compact.HookEvent) (compact.HookDecision, error) {
			events = append(events, ev)
			return compact.HookDecision{Action: compact.HookProceed, Instructions: "HOOK-NOTE: keep the rollout plan; key " + secret}, nil
		},
		AfterCompaction: func(_ context.Context, r memory.Report) { after = append(after, r) },
	})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true, Instructions: "CALL-NOTE: the user moves to billing next"})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %+v, %v", rep, err)
	}
	calls := fake.Calls()
	if len(calls) != 1 {
		t.Fatalf("%d requests, want 1", len(calls))
	}
	body := calls[0].Messages[len(calls[0].Messages)-1].Content
	end := strings.LastIndex(body, "</transcript-")
	call, hook := strings.Index(body, "CALL-NOTE"), strings.Index(body, "HOOK-NOTE")
	if end < 0 || call < end || hook < call {
		t.Fatalf("the instructions are not after the fenced transcript, the call's first (transcript end %d, call %d, hook %d):\n%s", end, call, hook, body)
	}
	for _, m := range calls[0].Messages {
		if strings.Contains(m.Content, secret) {
			t.Fatalf("the hook's secret reached the provider:\n%s", m.Content)
		}
	}
	if len(events) != 1 {
		t.Fatalf("%d events", len(events))
	}
	ev := events[0]
	if ev.Thread != "t" || ev.Reason != compact.ReasonForced || ev.Turn != 17 || ev.FromSeq != rep.FromSeq || ev.ToSeq != rep.ToSeq ||
		ev.Tokens != rep.TokensBefore || ev.Limit != limit || !strings.Contains(ev.Instructions, "CALL-NOTE") {
		t.Fatalf("event %+v, report %+v", ev, rep)
	}
	var fs []struct{ Text string }
	if err := json.Unmarshal(ev.Facts, &fs); err != nil || !slices.ContainsFunc(fs, func(f struct{ Text string }) bool { return f.Text == factURL }) {
		t.Fatalf("event facts %s (%v): want %s among them", ev.Facts, err, factURL)
	}
	if len(after) != 1 || after[0].Status != memory.StatusApplied || after[0].ID == 0 || after[0].ID != rep.ID {
		t.Fatalf("AfterCompaction got %+v", after)
	}
}

// TestHookSkipWritesNothing: a hook that says skip leaves a skipped report and no row, no
// attempt, no change of the thread.
func TestHookSkipWritesNothing(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	limit := hookThread(t, s, "t", 16)
	fake := summaryFake()
	var after []memory.Report
	c := compact.NewWith(s, cascade.New(s.DB(), fakeEntry("p", fake, 0)), compact.Settings{TokenLimit: limit}, compact.Config{
		BeforeCompaction: func(context.Context, compact.HookEvent) (compact.HookDecision, error) {
			return compact.HookDecision{Action: compact.HookSkip}, nil
		},
		AfterCompaction: func(_ context.Context, r memory.Report) { after = append(after, r) },
	})
	before, _ := s.Active(ctx, "t")
	reps0, atts0 := rowCounts(t, s, "t")
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != compact.StatusSkipped || rep.ID != 0 {
		t.Fatalf("compact: %+v, %v; want skipped, no id", rep, err)
	}
	reps1, atts1 := rowCounts(t, s, "t")
	if reps1 != reps0 || atts1 != atts0 || len(fake.Calls()) != 0 {
		t.Fatalf("a skipped compaction wrote: reports %d -> %d, attempts %d -> %d, %d requests", reps0, reps1, atts0, atts1, len(fake.Calls()))
	}
	now, _ := s.Active(ctx, "t")
	if now.Tokens != before.Tokens || now.Current != before.Current {
		t.Fatalf("the active context changed: %d tokens (current %d), was %d (%d)", now.Tokens, now.Current, before.Tokens, before.Current)
	}
	if len(after) != 1 || after[0].Status != compact.StatusSkipped {
		t.Fatalf("AfterCompaction got %+v", after)
	}
}

// TestHookSummaryNamesMissingFacts: the hook's summary is used instead of the provider's, and
// the fact it misses is named in facts_dropped (the ledger check passes on it as on a
// provider's).
func TestHookSummaryNamesMissingFacts(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	limit := hookThread(t, s, "t", 16)
	fake := summaryFake()
	const own = "The user asked for a deployment and it went well."
	c := compact.NewWith(s, cascade.New(s.DB(), fakeEntry("p", fake, 0)), compact.Settings{TokenLimit: limit}, compact.Config{
		BeforeCompaction: func(context.Context, compact.HookEvent) (compact.HookDecision, error) {
			return compact.HookDecision{Summary: own}, nil
		},
	})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %+v, %v", rep, err)
	}
	if len(fake.Calls()) != 0 {
		t.Fatalf("the provider was asked %d times; the hook gave the summary", len(fake.Calls()))
	}
	if rep.Provider != compact.HookProvider || rep.Summary == nil || !strings.Contains(*rep.Summary, own) {
		t.Fatalf("report provider %q, summary %v: want the hook's", rep.Provider, rep.Summary)
	}
	if strings.Contains(*rep.Summary, factURL) || !slices.Contains(rep.FactsDropped, factURL) {
		t.Fatalf("facts_dropped %q, summary %q: want %s named dropped and not added", rep.FactsDropped, *rep.Summary, factURL)
	}
}

// TestHookFailureProceeds: a hook that errors, panics, or answers an unknown action is
// reported, and the compaction proceeds through the provider.
func TestHookFailureProceeds(t *testing.T) {
	t.Parallel()
	for name, hook := range map[string]func(context.Context, compact.HookEvent) (compact.HookDecision, error){
		"error": func(context.Context, compact.HookEvent) (compact.HookDecision, error) {
			return compact.HookDecision{}, errors.New("hook down")
		},
		"panic": func(context.Context, compact.HookEvent) (compact.HookDecision, error) { panic("hook bug") },
		"action": func(context.Context, compact.HookEvent) (compact.HookDecision, error) {
			return compact.HookDecision{Action: "later"}, nil
		},
	} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			s, _ := storetest.Open(t)
			limit := hookThread(t, s, "t", 16)
			fake := summaryFake()
			var hookErrs []error
			c := compact.NewWith(s, cascade.New(s.DB(), fakeEntry("p", fake, 0)), compact.Settings{TokenLimit: limit}, compact.Config{
				BeforeCompaction: hook,
				HookError:        func(err error) { hookErrs = append(hookErrs, err) },
			})
			rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if err != nil || rep.Status != memory.StatusApplied || len(fake.Calls()) != 1 {
				t.Fatalf("compact: %+v, %v, %d requests", rep, err, len(fake.Calls()))
			}
			if len(hookErrs) != 1 || !strings.Contains(hookErrs[0].Error(), compact.HookBefore) {
				t.Fatalf("HookError got %v", hookErrs)
			}
		})
	}
}

// TestInstructionsRefused: instructions over their size are refused, naming the problem.
func TestInstructionsRefused(t *testing.T) {
	t.Parallel()
	s, _ := storetest.Open(t)
	limit := hookThread(t, s, "t", 2)
	c := compact.New(s, summaryFakeCascade(s), compact.Settings{TokenLimit: limit})
	_, err := c.Compact(context.Background(), "t", compact.Options{Force: true, Instructions: strings.Repeat("x", compact.MaxInstructionBytes+1)})
	if !errors.Is(err, compact.ErrInstructions) || memory.ErrorCode(err) != memory.CodeInvalid || !strings.Contains(err.Error(), "bytes") {
		t.Fatalf("err %v", err)
	}
}

func summaryFakeCascade(s *memory.Store) *cascade.Cascade {
	return cascade.New(s.DB(), fakeEntry("p", summaryFake(), 0))
}

// clock is a settable clock for the store and its cascade.
type clock struct{ at time.Time }

func (c *clock) now() time.Time { return c.at }
