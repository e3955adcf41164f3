package compact_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/corpus"
	"github.com/memcascade/memcascade/internal/lifesim"
	"github.com/memcascade/memcascade/internal/storetest"
)

// A life of compactions (issue 20): a conversation replayed message by message, compacting
// whenever ShouldCompact says so, each compaction folding the previous summary in. After every
// compaction every fact and action of the original messages is in the active context or named
// in some report's facts_dropped, every write action kept is on one line with its key
// arguments (facts.Kept checks a tool call on one line), and the newest user message is in the
// active context. The engine is internal/lifesim, which bench's life step runs too.

// simulateLife replays msgs into a new thread at the given limit through summarizer kind
// (lifesim.Kinds), failing t at the first compaction that loses a fact no report names.
func simulateLife(t *testing.T, msgs []chat.Message, limit int, kind string) lifesim.Stats {
	t.Helper()
	s, _ := storetest.Open(t)
	st, err := lifesim.Simulate(context.Background(), s, msgs, limit, kind, t.Logf)
	if lost, ok := errors.AsType[*lifesim.LostError](err); ok {
		for _, line := range lost.Trail {
			t.Log(line)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	return st
}

// generatedLife is a long agent thread of several tasks (lifesim.Generated).
func generatedLife(tasks int) []chat.Message { return lifesim.Generated(tasks) }

// TestLifeOfCompactions is the default run's share of the simulation: one recorded thread and
// one generated thread, at 4,096 tokens, through each kind of summarizer. The whole matrix
// (every recorded thread, 2,048 to 32,768 tokens) is TestLifeMatrix, behind the heavy tag.
// -short runs the recorded thread through each kind and the generated one through the offline
// rung only (fewer tasks would leave the generated thread one compaction or none, and none
// folding a previous summary in): TestLifeForgedSummaryStructure lives a generated thread of
// as many tasks through every kind in both runs.
func TestLifeOfCompactions(t *testing.T) {
	t.Parallel()
	lives := map[string][]chat.Message{
		"airline2":  corpus.ReadMessagesFile(t, corpus.Airline),
		"generated": generatedLife(30),
	}
	for name, msgs := range lives {
		for _, kind := range lifesim.Kinds {
			if testing.Short() && name == "generated" && kind != "offline" {
				continue
			}
			t.Run(name+"/"+kind, func(t *testing.T) {
				t.Parallel() // a store of its own
				st := simulateLife(t, msgs, 4096, kind)
				t.Logf("LIFE %s/%s: %+v", name, kind, st)
				if st.Compactions == 0 {
					t.Fatalf("no compaction in %d turns", st.Turns)
				}
				checkLife(t, st)
			})
		}
	}
}

// checkLife fails t when a life lost a fact or action no report names, or after some
// compaction left the newest user message out or stored a summary without the prompt's sections.
func checkLife(t *testing.T, st lifesim.Stats) {
	t.Helper()
	if st.Lost > 0 {
		t.Errorf("%d facts and actions lost at the end, no report names them", st.Lost)
	}
	if st.NewestUserMissing > 0 {
		t.Errorf("the newest user message was out of the active context after %d of %d compactions", st.NewestUserMissing, st.Compactions)
	}
	if st.SectionsBroken > 0 {
		t.Errorf("%d of %d summaries lack the prompt's sections; the first: %s", st.SectionsBroken, st.Compactions, st.SectionsError)
	}
}

// TestLifeEmergencyHybridNamesMasked is the life that lost facts unnamed at 2,048 tokens: the
// task 2 airline thread through the "third" summarizer, with no cooldown so that it does not
// depend on timing. Its compactions include emergency hybrid ones (the old tool results masked,
// then summarized): the facts of the masked results must be kept in the summary or named in
// facts_dropped.
func TestLifeEmergencyHybridNamesMasked(t *testing.T) {
	s, _ := storetest.Open(t)
	st, err := lifesim.SimulateWith(context.Background(), s, corpus.ReadMessagesFile(t, corpus.Airline), 2048, "third", time.Nanosecond, t.Logf)
	if lost, ok := errors.AsType[*lifesim.LostError](err); ok {
		for _, line := range lost.Trail {
			t.Log(line)
		}
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("LIFE airline2/third at 2048: %+v", st)
	if st.Compactions == 0 {
		t.Fatalf("no compaction in %d turns", st.Turns)
	}
	checkLife(t, st)
}
