package compact_test

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/lifesim"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// originalFacts returns the ledger of a thread's original messages, as appended.
func originalFacts(t testing.TB, s *memory.Store, thread string) []facts.Fact {
	t.Helper()
	f, err := lifesim.OriginalFacts(context.Background(), s, thread)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// lifeLosses returns the facts of the original messages that are neither in the thread's active
// context nor named in the facts_dropped of any of its compactions: the losses no report owns.
func lifeLosses(t testing.TB, s *memory.Store, thread string, original []facts.Fact) []facts.Fact {
	t.Helper()
	lost, err := lifesim.Losses(context.Background(), s, thread, original)
	if err != nil {
		t.Fatal(err)
	}
	return lost
}

// TestLedgerSurvivesRecompaction is the life of issue 20 in four compactions: a recorded
// airline thread compacted at 3,000 tokens, then forced three times more, each compaction
// folding the previous summary in. After each one, every fact of the original messages is in
// the active context or named in some report's facts_dropped: the check runs against the
// ledger stored with the summary, never against a re-reading of the summary's text.
func TestLedgerSurvivesRecompaction(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, file := range corpus.Conversations(t) {
		if !strings.Contains(file, "airline") {
			continue
		}
		t.Run(filepath.Base(file), func(t *testing.T) {
			t.Parallel() // a store of its own
			s, _ := storetest.Open(t)
			storetest.Import(t, s, "t", file)
			original := originalFacts(t, s, "t")
			c := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 3000})
			var last int64
			for i := range 4 {
				rep, err := c.Compact(ctx, "t", compact.Options{Force: i > 0})
				if rep.Status == memory.StatusApplied {
					last = rep.ID
				} else if i == 0 || rep.Status != memory.StatusFailed && rep.Status != memory.StatusIneffective {
					// A summary that has nothing left to save may fail or be ineffective, and
					// change nothing; the first compaction must apply.
					t.Fatalf("compaction %d: %s, %v", i+1, rep.Status, err)
				}
				if lost := lifeLosses(t, s, "t", original); len(lost) > 0 {
					texts := make([]string, len(lost))
					for k, f := range lost {
						texts[k] = f.Text
					}
					t.Fatalf("compaction %d lost %d facts of the original messages that no report names: %q", i+1, len(lost), texts)
				}
				checkWritesKept(t, s, "t", original, "update_reservation_flights(")
			}
			if _, err := s.Revert(ctx, "", last); err != nil {
				t.Fatalf("revert: %v", err)
			}
			if lost := lifeLosses(t, s, "t", original); len(lost) > 0 {
				t.Fatalf("after a revert, %d facts of the original messages are lost", len(lost))
			}
		})
	}
}

// checkWritesKept asserts that every call of the original messages whose text starts with
// prefix (a write action) is in the active context on one line with its key arguments.
func checkWritesKept(t testing.TB, s *memory.Store, thread string, original []facts.Fact, prefix string) {
	t.Helper()
	a, err := s.Active(context.Background(), thread)
	if err != nil {
		t.Fatal(err)
	}
	var writes []facts.Fact
	for _, f := range original {
		if f.Kind == facts.KindToolCall && strings.HasPrefix(f.Text, prefix) {
			writes = append(writes, f)
		}
	}
	if len(writes) == 0 {
		t.Fatalf("no %s call in the original messages", prefix)
	}
	for i, ok := range facts.Kept(writes, activeText(a)) {
		if !ok {
			t.Errorf("the write action %s is not in the active context on one line with its arguments", writes[i].Text)
		}
	}
}

// TestViewLeavingSummaryOutNamesItsLedger: a view change that leaves a summary out of the
// active context (the window strategy, on_failure fit) names the facts of the summary's stored
// ledger that the view no longer holds, not only those its text shows as facts. The summary of
// a generated thread holds the user's constraint and the tool calls, which its own text does
// not read as facts (a constraint is a user's sentence, a tool call an assistant's call).
func TestViewLeavingSummaryOutNamesItsLedger(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, tc := range []struct {
		name     string
		settings compact.Settings
		failing  bool // the cascade fails, so on_failure fit shapes the view
	}{
		{"window", compact.Settings{TokenLimit: 1000, Strategy: compact.StrategyWindow}, false},
		{"fit", compact.Settings{TokenLimit: 1000, OnFailure: compact.OnFailureFit}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a store of its own
			s, _ := storetest.Open(t)
			if _, err := s.Append(ctx, "t", generatedLife(8), memory.AppendOptions{Model: "gpt-4o"}); err != nil {
				t.Fatal(err)
			}
			original := originalFacts(t, s, "t")
			summarize := compact.New(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: 2000})
			if rep, err := summarize.Compact(ctx, "t", compact.Options{Force: true}); err != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("summarize: %s, %v", rep.Status, err)
			}
			if lost := lifeLosses(t, s, "t", original); len(lost) > 0 {
				t.Fatalf("the summary lost %d facts unnamed: %v", len(lost), lost)
			}
			p := storetest.ExtractiveCascade(t, s)
			if tc.failing {
				p = storetest.FailingCascade(s)
			}
			rep, err := compact.New(s, p, tc.settings).Compact(ctx, "t", compact.Options{Force: true})
			if rep.Status != memory.StatusApplied {
				t.Fatalf("%s: %s, %v", tc.name, rep.Status, err)
			}
			a, err := s.Active(ctx, "t")
			if err != nil {
				t.Fatal(err)
			}
			if slices.ContainsFunc(a.Entries, func(e memory.Entry) bool { return e.CompactionID != 0 }) {
				t.Fatalf("%s kept the summary in the view (%s): not a test of leaving it out", tc.name, rep.Detail)
			}
			if lost := lifeLosses(t, s, "t", original); len(lost) > 0 {
				texts := make([]string, len(lost))
				for k, f := range lost {
					texts[k] = string(f.Kind) + " " + f.Text
				}
				t.Errorf("%s left the summary out and lost %d facts that no report names: %q", tc.name, len(lost), texts)
			}
		})
	}
}

// TestFactLeftOutStaysNamedOrChecked: a fact a compaction left out is named in its report as
// long as the ledger stored with its summary marks it dropped, and the compaction that later
// folds the summary in checks it again otherwise. Hybrid masks a result of 60 fares, whose
// digest holds the first ones only: the last fare, 1059, is left out. Written again as a bare
// number, which a later ledger does not read as that amount, it is back in the context while
// the compaction runs: in a message appended meanwhile (not in what the compaction made of the
// messages it saw, so its report names it, also when the context stays over the limit and a fit
// of the view follows the summary), or in the summary's prose (the compaction made it back, so
// its report does not name it and its ledger keeps it needed). A second compaction then
// summarizes it away: 1059 must be named by some report.
func TestFactLeftOutStaysNamedOrChecked(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	const repeated = "Seat 1059 please." // 1059 as a bare number: no fact of its own
	hybrid := compact.Settings{TokenLimit: 1000, Strategy: compact.StrategyHybrid}
	for _, tc := range []struct {
		name     string
		settings compact.Settings
		appended string // appended while the summary is written ("": the summary's prose repeats it)
	}{
		{"appended", hybrid, repeated},
		{"summary", hybrid, ""},
		{"appended, then fit", compact.Settings{TokenLimit: 1000, Strategy: compact.StrategyHybrid, OnFailure: compact.OnFailureFit, MaxPasses: 1},
			repeated + strings.Repeat(" lorem ipsum dolor", 300)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel() // a store of its own
			s, _ := storetest.Open(t)
			if _, err := s.Append(ctx, "t", faresThread(60), memory.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			var once sync.Once
			p := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
				if tc.appended == "" {
					return llm.Response{Text: "The user looked for fares. " + repeated, FinishReason: "stop"}, nil
				}
				once.Do(func() {
					if _, err := s.Append(ctx, "t", []chat.Message{chat.TextMessage("user", tc.appended)}, memory.AppendOptions{}); err != nil {
						t.Error(err)
					}
				})
				return filler().Func(ctx, req)
			}}
			c := compact.New(s, cascade.New(s.DB(), fakeEntry("fake", p, 0)), tc.settings)
			rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if rep.Status != memory.StatusApplied || rep.Passes == 0 {
				t.Fatalf("hybrid: %s, %d passes, %v", rep.Status, rep.Passes, err)
			}
			if tc.settings.OnFailure == compact.OnFailureFit && !strings.Contains(rep.Detail, "on_failure fit") {
				t.Fatalf("no fit of the view after the summary: %s", rep.Detail)
			}
			original := originalFacts(t, s, "t")
			if lost := lifeLosses(t, s, "t", original); len(lost) > 0 {
				t.Fatalf("hybrid lost %d facts unnamed: %v", len(lost), lost)
			}
			if a, _ := s.Active(ctx, "t"); !strings.Contains(activeText(a), repeated) {
				t.Fatalf("%q is not in the active context after hybrid: not a test of a fact back", repeated)
			}
			if got, want := slices.Contains(rep.FactsDropped, "1059"), tc.appended != ""; got != want {
				t.Errorf("hybrid's facts_dropped names 1059: %v, want %v (%q)", got, want, rep.FactsDropped)
			}
			var later []chat.Message // the repeat is no longer the newest user message, nor kept
			for i := range 4 {
				later = append(later, chat.TextMessage("user", fmt.Sprintf("question %d: %s", 20+i, strings.Repeat("lorem ipsum dolor ", 10))),
					chat.TextMessage("assistant", strings.Repeat("sit amet consectetur ", 10)))
			}
			if _, err := s.Append(ctx, "t", later, memory.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			summarize := compact.New(s, cascade.New(s.DB(), fakeEntry("filler", filler(), 0)), compact.Settings{TokenLimit: 600})
			if rep, err := summarize.Compact(ctx, "t", compact.Options{Force: true}); rep.Status != memory.StatusApplied {
				t.Fatalf("summarize: %s, %v", rep.Status, err)
			}
			if a, _ := s.Active(ctx, "t"); strings.Contains(activeText(a), repeated) {
				t.Fatalf("%q is still in the active context: not a test of summarizing it away", repeated)
			}
			if lost := lifeLosses(t, s, "t", original); len(lost) > 0 {
				texts := make([]string, len(lost))
				for k, f := range lost {
					texts[k] = string(f.Kind) + " " + f.Text
				}
				t.Errorf("the fact back in the context was then lost, no report names it: %q", texts)
			}
		})
	}
}

// faresThread is a thread whose one tool result lists n fares (1000, 1001, ...), more than a
// mask's digest holds, followed by twelve turns of prose.
func faresThread(n int) []chat.Message {
	call := chat.TextMessage("assistant", "")
	call.Content = nil
	call.ToolCalls = []chat.ToolCall{{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "list_fares", Arguments: `{"route": "SFO-JFK"}`}}}
	fares := make([]string, n)
	for i := range fares {
		fares[i] = fmt.Sprintf(`{"price": %d}`, 1000+i)
	}
	result := chat.TextMessage("tool", `{"fares": [`+strings.Join(fares, ", ")+`]}`)
	result.ToolCallID = "c1"
	msgs := []chat.Message{chat.TextMessage("system", "You are a travel agent."),
		chat.TextMessage("user", "Find me a fare from SFO to JFK."), call, result,
		chat.TextMessage("assistant", fmt.Sprintf("There are %d fares.", n))}
	for i := range 12 {
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("question %d: %s", i, strings.Repeat("lorem ipsum dolor ", 10))),
			chat.TextMessage("assistant", fmt.Sprintf("answer %d: %s", i, strings.Repeat("sit amet consectetur ", 10))))
	}
	return msgs
}

// TestProductTextIsNoFact: what the product writes itself (a mask placeholder's sizes, a
// summary's header with the range it covers) never holds a fact of the original messages, even
// when it shows the same number. In "placeholder", the fare 300 of a masked result is kept by
// its digest until a window leaves that result out, while the placeholder of another result says
// "300 bytes"; a later window then leaves that placeholder out too. In "summary header", a
// summary of messages 2 to 14 of a thread whose second message says a bag costs $14, by a
// provider whose prose holds no fact, is folded into a later summary. After each compaction, the
// fact is in the active context as the context shows facts (not in a placeholder or a header)
// or named in some report's facts_dropped.
func TestProductTextIsNoFact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	checkLost := func(t *testing.T, s *memory.Store, after string) {
		t.Helper()
		if lost := lifeLosses(t, s, "t", originalFacts(t, s, "t")); len(lost) > 0 {
			texts := make([]string, len(lost))
			for k, f := range lost {
				texts[k] = string(f.Kind) + " " + f.Text
			}
			t.Fatalf("after %s, %d facts of the original messages are neither in the active context nor named: %q", after, len(lost), texts)
		}
	}
	activeHas := func(t *testing.T, s *memory.Store, text string) bool {
		t.Helper()
		a, err := s.Active(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		return slices.ContainsFunc(a.Entries, func(e memory.Entry) bool { return strings.Contains(e.Text(), text) })
	}
	turns := func(from, n int) []chat.Message {
		var msgs []chat.Message
		for i := range n {
			msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("question %d: %s", from+i, strings.Repeat("lorem ipsum dolor ", 10))),
				chat.TextMessage("assistant", fmt.Sprintf("answer %d: %s", from+i, strings.Repeat("sit amet consectetur ", 10))))
		}
		return msgs
	}

	t.Run("placeholder", func(t *testing.T) {
		t.Parallel() // a store of its own
		s, _ := storetest.Open(t)
		call := func(id, name, args string) chat.Message {
			m := chat.TextMessage("assistant", "")
			m.Content = nil
			m.ToolCalls = []chat.ToolCall{{ID: id, Type: "function", Function: chat.FunctionCall{Name: name, Arguments: args}}}
			return m
		}
		result := func(id, text string) chat.Message {
			m := chat.TextMessage("tool", text)
			m.ToolCallID = id
			return m
		}
		policy := ("baggage policy\n" + strings.Repeat("zq ", 100))[:300] // 300 bytes, no fact
		msgs := []chat.Message{
			chat.TextMessage("system", "You are a travel agent."),
			chat.TextMessage("user", "Find me a fare from SFO to JFK."),
			call("c1", "get_fare", `{"route": "SFO-JFK"}`),
			result("c1", `{"fare": {"price": 300}, "notes": "`+strings.Repeat("lorem ipsum dolor ", 40)+`"}`),
			chat.TextMessage("assistant", "I found a fare."),
			chat.TextMessage("user", "What is the baggage policy?"),
			call("c2", "get_policy", `{"topic": "baggage"}`),
			result("c2", policy),
			chat.TextMessage("assistant", "Here is the policy."),
		}
		if _, err := s.Append(ctx, "t", append(msgs, turns(0, 3)...), memory.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		for i, step := range []struct {
			settings compact.Settings
			shows    []string // in the active context after the step: not a test otherwise
			leaves   []string // out of it
		}{
			{compact.Settings{TokenLimit: 500, Strategy: compact.StrategyMask}, []string{"digest: facts: 300]", "300 bytes"}, []string{`"price": 300`}},
			{compact.Settings{TokenLimit: 650, Strategy: compact.StrategyWindow}, []string{"300 bytes"}, []string{"digest: facts: 300]"}},
			{compact.Settings{TokenLimit: 300, Strategy: compact.StrategyWindow}, nil, []string{"300 bytes"}},
		} {
			rep, err := compact.New(s, noProvider{t}, step.settings).Compact(ctx, "t", compact.Options{Force: true})
			if rep.Status != memory.StatusApplied {
				t.Fatalf("%s: %s, %v", step.settings.Strategy, rep.Status, err)
			}
			for _, text := range step.shows {
				if !activeHas(t, s, text) {
					t.Fatalf("after compaction %d (%s), %q is not in the active context: not the test", i+1, rep.Detail, text)
				}
			}
			for _, text := range step.leaves {
				if activeHas(t, s, text) {
					t.Fatalf("after compaction %d (%s), %q is still in the active context: not the test", i+1, rep.Detail, text)
				}
			}
			checkLost(t, s, fmt.Sprintf("compaction %d (%s, facts_dropped %q)", i+1, rep.Strategy, rep.FactsDropped))
		}
	})

	t.Run("summary header", func(t *testing.T) {
		t.Parallel() // a store of its own
		s, _ := storetest.Open(t)
		msgs := []chat.Message{
			chat.TextMessage("system", "You are a travel agent."),
			chat.TextMessage("user", "Each extra bag costs $14 on this route."),
		}
		if _, err := s.Append(ctx, "t", append(msgs, turns(0, 8)...), memory.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		c := compact.New(s, cascade.New(s.DB(), fakeEntry("filler", filler(), 0)), compact.Settings{TokenLimit: 700})
		rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
		if rep.Status != memory.StatusApplied || rep.FromSeq != 2 || rep.ToSeq != 14 {
			t.Fatalf("summarize: %s of %d..%d, %v: not a summary whose header says 14", rep.Status, rep.FromSeq, rep.ToSeq, err)
		}
		checkLost(t, s, fmt.Sprintf("the summary of messages 2 to 14 (facts_dropped %q)", rep.FactsDropped))
		if _, err := s.Append(ctx, "t", turns(8, 4), memory.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		rep, err = c.Compact(ctx, "t", compact.Options{Force: true})
		if rep.Status != memory.StatusApplied || activeHas(t, s, "messages 2 to 14;") {
			t.Fatalf("summarize again: %s, %v: the header of the first summary is still in the active context", rep.Status, err)
		}
		checkLost(t, s, fmt.Sprintf("the summary that folds it in (facts_dropped %q)", rep.FactsDropped))
	})
}
