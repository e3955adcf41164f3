package memory_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// A life of compactions (issue 20): a conversation replayed message by message, compacting
// whenever ShouldCompact says so, each compaction folding the previous summary in. After every
// compaction every fact and action of the original messages is in the active context or named
// in some report's facts_dropped, every write action kept is on one line with its key
// arguments (facts.Kept checks a tool call on one line), and the newest user message is in the
// active context.

// lifeStats are the figures of one simulated life.
type lifeStats struct {
	turns, compactions, failed int
	facts, actions, writes     int // of the original messages
	kept, named, lost          int // facts and actions at the end
	writesKept, writesNamed    int
	tokensSum                  int // active tokens summed over the turns
	newestUserMissing          int // compactions after which the newest user message was out of the active context
}

// lifeProvider is a summarizer of a simulation: offline, a fake whose summaries hold no fact,
// or a fake that writes a plausible summary leaving out a random third of the facts.
func lifeProvider(t testing.TB, s *memory.Store, kind string, seed uint64) *cascade.Cascade {
	switch kind {
	case "offline":
		return extractiveCascade(t, s)
	case "nofacts":
		return cascade.New(s.DB(), fakeEntry("nofacts", filler(), 0))
	}
	rng := rand.New(rand.NewPCG(seed, 20))
	third := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		var msgs []facts.Message
		if req.Running != "" {
			msgs = append(msgs, facts.Message{Role: "assistant", Content: req.Running})
		}
		for _, m := range req.Transcript {
			msgs = append(msgs, facts.FromTranscript(m))
		}
		var b strings.Builder
		b.WriteString("## Goal and constraints\n- The user asked for changes to bookings.\n\n## Work done\n")
		budget := max(req.TargetTokens, 64) * 3 // bytes, about
		for _, f := range facts.Extract(msgs) {
			if rng.IntN(3) == 0 || b.Len()+len(f.Text) > budget {
				continue
			}
			b.WriteString("- " + f.Text + "\n")
		}
		b.WriteString("\n## Open tasks and next step\n- Continue with the user's request.")
		return llm.Response{Text: b.String(), FinishReason: "stop"}, nil
	}}
	return cascade.New(s.DB(), fakeEntry("third", third, 0))
}

// simulateLife replays msgs into a new thread at the given limit through provider kind.
func simulateLife(t *testing.T, msgs []memory.Message, limit int, kind string) lifeStats {
	t.Helper()
	ctx := context.Background()
	s, _ := openStore(t)
	c := memory.NewCompactor(s, lifeProvider(t, s, kind, uint64(limit)), memory.Settings{TokenLimit: limit})
	var st lifeStats
	newestUser := ""
	for i, m := range msgs {
		if _, err := s.Append(ctx, "t", []memory.Message{m}, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
			t.Fatalf("append %d: %v", i, err)
		}
		st.turns++
		if m.Role == "user" {
			newestUser = m.Text()
		}
		due, err := c.ShouldCompact(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		if due {
			rep, err := c.Compact(ctx, "t", memory.CompactOptions{})
			switch {
			case rep.Status == memory.StatusApplied:
				st.compactions++
				lifeCheck(t, s, &st, newestUser, fmt.Sprintf("after message %d, compaction %d", i+1, st.compactions))
			case rep.Status == memory.StatusFailed:
				st.failed++
				t.Logf("message %d: compaction failed: %v", i+1, err)
			}
		}
		a, err := s.Active(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		st.tokensSum += a.Tokens
	}
	original := originalFacts(t, s, "t")
	a, err := s.Active(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	named := namedDropped(t, s, "t")
	for i, ok := range facts.Kept(original, activeText(a)) {
		f := original[i]
		write := f.Kind == facts.KindToolCall && f.Weight >= 60
		if f.Kind == facts.KindToolCall {
			st.actions++
		} else {
			st.facts++
		}
		if write {
			st.writes++
		}
		switch {
		case ok:
			st.kept++
			if write {
				st.writesKept++
			}
		case named[f.Text]:
			st.named++
			if write {
				st.writesNamed++
			}
		default:
			st.lost++
		}
	}
	return st
}

// lifeCheck asserts the guarantees of a life after one compaction.
func lifeCheck(t *testing.T, s *memory.Store, st *lifeStats, newestUser, when string) {
	t.Helper()
	if lost := lifeLosses(t, s, "t", originalFacts(t, s, "t")); len(lost) > 0 {
		texts := make([]string, len(lost))
		for k, f := range lost {
			texts[k] = f.Text
		}
		reps, _ := s.Reports(context.Background(), "t", 3)
		for _, r := range reps {
			t.Logf("compaction %d: %s %s %s, %d -> %d tokens, dropped %q, detail %s", *r.ID, r.Status, r.Reason, r.Strategy, r.TokensBefore, r.TokensAfter, r.FactsDropped, r.Detail)
		}
		t.Fatalf("%s: %d facts of the original messages lost, no report names them: %q", when, len(lost), texts)
	}
	a, err := s.Active(context.Background(), "t")
	if err != nil {
		t.Fatal(err)
	}
	if newestUser != "" && !strings.Contains(activeText(a), newestUser) {
		st.newestUserMissing++
	}
}

// namedDropped is the set of the values the thread's reports named in facts_dropped.
func namedDropped(t testing.TB, s *memory.Store, thread string) map[string]bool {
	t.Helper()
	reps, err := s.Reports(context.Background(), thread, 1<<20)
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for _, r := range reps {
		for _, d := range r.FactsDropped {
			named[d] = true
		}
	}
	return named
}

// generatedLife is a long agent thread of several tasks: constraints stated early, lookups and
// writes, errors the tools returned, a reply per task.
func generatedLife(tasks int) []memory.Message {
	msgs := []memory.Message{
		memory.TextMessage("system", "You are an airline agent. Use the tools to help the user."),
		memory.TextMessage("user", "I am mia_li_3668. I must never pay with my credit card: only gift cards, please."),
	}
	call := func(id, name string, args map[string]any) memory.Message {
		raw, _ := json.Marshal(args)
		m := memory.TextMessage("assistant", "")
		m.Content = nil
		m.ToolCalls = []memory.ToolCall{{ID: id, Type: "function", Function: memory.FunctionCall{Name: name, Arguments: string(raw)}}}
		return m
	}
	result := func(id, text string) memory.Message {
		m := memory.TextMessage("tool", text)
		m.ToolCallID = id
		return m
	}
	for k := range tasks {
		res := fmt.Sprintf("R%05dQ", k)
		msgs = append(msgs, memory.TextMessage("user", fmt.Sprintf("Task %d: please move reservation %s to flight HAT%03d on 2024-06-%02d.", k, res, k%300, k%28+1)))
		id := fmt.Sprintf("call_%d_a", k)
		msgs = append(msgs, call(id, "get_reservation_details", map[string]any{"reservation_id": res}),
			result(id, fmt.Sprintf(`{"reservation_id": "%s", "flights": [{"flight_number": "HAT%03d", "date": "2024-05-%02d", "price": %d}], "passengers": [{"first_name": "Mia", "last_name": "Li"}], "payment_history": [{"payment_id": "gift_card_%d", "amount": %d}]}`,
				res, (k+7)%300, k%28+1, 100+k, 7000+k, 300+k)))
		id = fmt.Sprintf("call_%d_b", k)
		out := `{"status": "ok"}`
		if k%4 == 3 {
			out = "Error: payment amount does not add up"
		}
		msgs = append(msgs, call(id, "update_reservation_flights", map[string]any{"reservation_id": res, "cabin": "economy", "payment_id": fmt.Sprintf("gift_card_%d", 7000+k)}),
			result(id, out))
		reply := fmt.Sprintf("Reservation %s is now on flight HAT%03d.", res, k%300)
		if k%4 == 3 {
			reply = fmt.Sprintf("I could not update %s: the payment amount does not add up.", res)
		}
		msgs = append(msgs, memory.TextMessage("assistant", reply))
	}
	return msgs
}

// TestLifeOfCompactions is the default run's share of the simulation: one recorded thread and
// one generated thread, at 4,096 tokens, through each kind of summarizer. The whole matrix
// (every recorded thread, 2,048 to 32,768 tokens) is TestLifeMatrix, behind the heavy tag.
func TestLifeOfCompactions(t *testing.T) {
	lives := map[string][]memory.Message{
		"airline2":  readMessagesFile(t, airline),
		"generated": generatedLife(30),
	}
	for name, msgs := range lives {
		for _, kind := range []string{"offline", "nofacts", "third"} {
			t.Run(name+"/"+kind, func(t *testing.T) {
				st := simulateLife(t, msgs, 4096, kind)
				t.Logf("LIFE %s/%s: %+v", name, kind, st)
				if st.compactions == 0 {
					t.Fatalf("no compaction in %d turns", st.turns)
				}
				if st.lost > 0 {
					t.Errorf("%d facts and actions lost at the end, no report names them", st.lost)
				}
				if st.newestUserMissing > 0 {
					t.Errorf("the newest user message was out of the active context after %d of %d compactions", st.newestUserMissing, st.compactions)
				}
			})
		}
	}
}
