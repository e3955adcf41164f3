package compact_test

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestPinnedInstructionsSupersede: a pinned system message is the thread's current
// instructions (memctl serve pins each changed system prompt). It leads the active context,
// and the instructions before it (the leading system message, the prompts pinned before) are
// superseded: no longer pinned, planned in the middle and summarized, found by search. A
// prompt that was current while a compaction ran, which that summary therefore left out, is
// shown before the summary once superseded, and the next compaction summarizes it.
func TestPinnedInstructionsSupersede(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	set := compact.Settings{TokenLimit: 2000, SummaryMaxTokens: 300, TargetRatio: 0.25}
	c := compact.New(s, storetest.ExtractiveCascade(t, s), set)
	seqOf := map[string]int64{}
	turns := func(prompt string, n int) {
		t.Helper()
		var msgs []chat.Message
		if prompt != "" {
			msgs = append(msgs, chat.TextMessage("system", prompt))
		}
		for i := range n {
			msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("question %d: %s", i, strings.Repeat("what next? ", 10))),
				chat.TextMessage("assistant", fmt.Sprintf("answer %d: %s", i, strings.Repeat("do this. ", 10))))
		}
		res, err := s.Append(ctx, "t", msgs, memory.AppendOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if prompt != "" {
			seq := res.LastSeq - int64(len(msgs)) + 1
			seqOf[prompt] = seq
			if seq > 1 {
				if _, err := c.Pin(ctx, "t", seq); err != nil {
					t.Fatal(err)
				}
			}
		}
	}
	// shape checks the active context read light, as a compaction plans on it: the current
	// prompt first and alone pinned, the superseded ones marked and planned in the middle.
	shape := func(when, current string, superseded ...string) memory.Active {
		t.Helper()
		a, err := s.Active(ctx, "t", memory.ReadOptions{Light: true})
		if err != nil {
			t.Fatal(err)
		}
		if a.Entries[0].Text() != current || !a.Entries[0].Pinned || memory.PinnedLen(a.Entries) != 1 {
			t.Fatalf("%s: the context starts with %q (pinned %v), %d pinned; want %q alone", when, a.Entries[0].Text(), a.Entries[0].Pinned, memory.PinnedLen(a.Entries), current)
		}
		p := compact.MakePlan(a.Entries, set.WithDefaults(), 200)
		for _, old := range superseded {
			i := slices.IndexFunc(a.Entries, func(e memory.Entry) bool { return e.Seq == seqOf[old] })
			if i < 0 || !a.Entries[i].Superseded || a.Entries[i].Pinned || i < p.Pinned || i >= p.Kept {
				t.Fatalf("%s: %q at %d of the context (pinned %d, kept from %d): want it shown, superseded, in the middle", when, old, i, p.Pinned, p.Kept)
			}
		}
		return a
	}
	gone := func(when string, prompts ...string) {
		t.Helper()
		a, err := s.Active(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range prompts {
			if slices.ContainsFunc(a.Entries, func(e memory.Entry) bool { return e.Seq == seqOf[p] }) || seqOf[p] < a.FromSeq || seqOf[p] > a.ToSeq {
				t.Fatalf("%s: %q (seq %d) is not summarized: the summary covers %d..%d", when, p, seqOf[p], a.FromSeq, a.ToSeq)
			}
		}
	}
	compactNow := func(when string) {
		t.Helper()
		rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
		if err != nil || rep.Status != memory.StatusApplied {
			t.Fatalf("%s: compaction %s %v %s", when, rep.Status, err, rep.Detail)
		}
	}

	turns("Prompt A.", 4)
	turns("Prompt B.", 4)
	turns("Prompt C.", 3)
	shape("before any compaction", "Prompt C.", "Prompt A.", "Prompt B.")
	compactNow("the first compaction")
	gone("after the first compaction", "Prompt A.", "Prompt B.")
	shape("after the first compaction", "Prompt C.")
	hits, err := s.Search(ctx, "Prompt B", memory.SearchOptions{Thread: "t"})
	if err != nil || !slices.ContainsFunc(hits, func(h memory.SearchHit) bool { return h.Seq == seqOf["Prompt B."] }) {
		t.Fatalf("search for the superseded prompt: %+v %v", hits, err)
	}
	// Prompt C, still current, is pinned while a summary of what surrounds it is made.
	turns("", 6)
	compactNow("the second compaction")
	if a := shape("C current", "Prompt C."); seqOf["Prompt C."] < a.FromSeq || seqOf["Prompt C."] > a.ToSeq {
		t.Fatalf("the summary covers %d..%d, not Prompt C (seq %d): the test shows nothing", a.FromSeq, a.ToSeq, seqOf["Prompt C."])
	}
	// Superseded, it is shown before that summary, which left it out.
	turns("Prompt D.", 2)
	a := shape("C superseded", "Prompt D.", "Prompt C.")
	if i := slices.IndexFunc(a.Entries, func(e memory.Entry) bool { return e.Seq == seqOf["Prompt C."] }); i+1 >= len(a.Entries) || a.Entries[i+1].CompactionID == 0 {
		for _, e := range a.Entries {
			t.Logf("%d %d %v %v %.30q", e.Seq, e.CompactionID, e.Pinned, e.Superseded, e.Text())
		}
		t.Fatalf("Prompt C at %d: want it right before the summary", i)
	}
	compactNow("the third compaction")
	gone("after the third compaction", "Prompt A.", "Prompt B.", "Prompt C.")
	shape("after the third compaction", "Prompt D.")
	if pins, err := s.Pins(ctx, "t"); err != nil || len(pins) != 3 {
		t.Fatalf("pins %+v %v: the store keeps them until unpinned", pins, err)
	}
}
