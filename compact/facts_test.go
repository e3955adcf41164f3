package compact_test

import (
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/lifesim"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// activeText is the text of an active context, tool calls included.
func activeText(a memory.Active) string { return lifesim.ActiveText(a) }

// TestExtractiveKeepsEveryFact compacts every testdata conversation with the offline
// summarizer: every fact of the ledger of what was summarized is in the active context after.
func TestExtractiveKeepsEveryFact(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, file := range corpus.Conversations(t) {
		t.Run(filepath.Base(file), func(t *testing.T) {
			s, _ := storetest.Open(t)
			storetest.Import(t, s, "t", file)
			before, _ := s.Active(ctx, "t")
			var span compact.Span
			c := compact.NewWith(s, storetest.ExtractiveCascade(t, s), compact.Settings{TokenLimit: before.Tokens * 6 / 10}, compact.Config{OnSummarized: func(_ context.Context, sp compact.Span) error { span = sp; return nil }})
			rep, err := c.Compact(ctx, "t", compact.Options{})
			if err != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("compact: %+v, %v", rep, err)
			}
			if len(span.Facts) == 0 || rep.FactsTotal != len(span.Facts) {
				t.Fatalf("ledger of %d facts, report says %d", len(span.Facts), rep.FactsTotal)
			}
			after, _ := s.Active(ctx, "t")
			text := activeText(after)
			for i, ok := range facts.Kept(span.Facts, text) {
				if !ok {
					t.Errorf("fact %q (%s) is not in the active context", span.Facts[i].Text, span.Facts[i].Kind)
				}
			}
			t.Logf("%d -> %d tokens (%.0f%% of the original), summary %d tokens, %d facts, %d kept by the summarizer",
				rep.TokensBefore, rep.TokensAfter, 100*float64(rep.TokensAfter)/float64(rep.TokensBefore), rep.SummaryTokens, rep.FactsTotal, rep.FactsKept)
		})
	}
}

// TestMissingFactsAppended: a provider that drops half the facts; the stored summary has them
// all, and facts_kept says how many the model kept.
func TestMissingFactsAppended(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	storetest.Import(t, s, "t", "../testdata/conversations/tau_bench_airline_gpt4o_task13_trial2_success.jsonl")
	before, _ := s.Active(ctx, "t")
	settings := compact.Settings{TokenLimit: before.Tokens * 6 / 10}
	// The ledger the compactor will build: from a dry run's range.
	dry, err := compact.New(s, nil, settings).Compact(ctx, "t", compact.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	hist, _ := s.History(ctx, "t")
	var middle []facts.Message
	for _, e := range hist {
		if e.Seq >= dry.FromSeq && e.Seq <= dry.ToSeq {
			fm := facts.Message{Role: e.Message.Role, Content: e.Message.Text(), Name: e.Message.Name, ToolCallID: e.Message.ToolCallID}
			for _, c := range e.Message.ToolCalls {
				fm.ToolCalls = append(fm.ToolCalls, facts.ToolCall{Name: c.Function.Name, Arguments: c.Function.Arguments})
			}
			middle = append(middle, fm)
		}
	}
	ledger := facts.Extract(middle)
	var half []string
	for i, f := range ledger {
		if i%2 == 0 {
			half = append(half, f.Text)
		}
	}
	// The model's summary names every other fact (and one that is not in the ledger).
	reply := "## Key facts\n- " + strings.Join(half, "\n- ")
	fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return llm.Response{Text: reply, FinishReason: "stop"}, nil
	}}
	casc := cascade.New(s.DB(), cascade.Entry{Name: "forgetful", Provider: fake, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
	// Forced: unforced, a context this far over the limit is an emergency, which masks first.
	rep, err := compact.New(s, casc, settings).Compact(ctx, "t", compact.Options{Force: true})
	if err != nil {
		t.Fatal(err)
	}
	kept := facts.Kept(ledger, reply)
	n := 0
	for _, k := range kept {
		if k {
			n++
		}
	}
	if rep.FactsTotal != len(ledger) || rep.FactsKept != n || n >= len(ledger) {
		t.Fatalf("facts_total %d facts_kept %d; want %d and %d", rep.FactsTotal, rep.FactsKept, len(ledger), n)
	}
	for i, ok := range facts.Kept(ledger, *rep.Summary) {
		if !ok {
			t.Errorf("the stored summary lacks %q", ledger[i].Text)
		}
	}
	stored, _ := s.Report(ctx, rep.ID)
	if stored.FactsKept != n || stored.FactsTotal != len(ledger) {
		t.Fatalf("stored report: %d of %d", stored.FactsKept, stored.FactsTotal)
	}
}
