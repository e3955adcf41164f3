package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/summarycheck"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/transcript"
)

// sectionTurns are turns of an agent's work: a request, a tool call with its result (every
// third one an error), and a reply, numbered from n.
func sectionTurns(n, count int) []chat.Message {
	var msgs []chat.Message
	for i := n; i < n+count; i++ {
		id := fmt.Sprintf("call_%d", i)
		result := fmt.Sprintf(`{"reservation_id": "R%05dX", "status": "ok", "amount": "$%d"}`, 10000+i, 200+i)
		if i%3 == 0 {
			result = fmt.Sprintf(`Error: payment amount does not add up for reservation R%05dX`, 10000+i)
		}
		msgs = append(msgs,
			chat.TextMessage("user", fmt.Sprintf("Please change reservation R%05dX to flight HAT%03d on 2024-05-%02d.", 10000+i, 100+i, 1+i%28)),
			chat.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{{ID: id, Type: "function",
				Function: chat.FunctionCall{Name: "update_reservation_flights", Arguments: fmt.Sprintf(`{"reservation_id": "R%05dX", "flight": "HAT%03d"}`, 10000+i, 100+i)}}}},
			chat.Message{Role: "tool", ToolCallID: id, Content: json.RawMessage(fmt.Sprintf("%q", result))},
			chat.TextMessage("assistant", fmt.Sprintf("Reservation R%05dX is handled; anything else?", 10000+i)))
	}
	return msgs
}

// TestSummarySectionsSurviveFiller: a provider answering fact-free prose with no headings
// (and, the same way, the offline rung).
// The stored summary has the prompt's sections all the same, the missing facts under the
// section of their kind (here they take the whole budget, ahead of the prose); after three more compactions, each
// folding the previous summary in, the sections are still there and the constraints the
// user stated first are under "Goal and constraints".
func TestSummarySectionsSurviveFiller(t *testing.T) {
	t.Parallel()
	for _, prov := range []string{"filler", "offline"} {
		t.Run(prov, func(t *testing.T) {
			t.Parallel()
			summarySectionsLife(t, prov)
		})
	}
}

// summarySectionsLife runs four compactions through provider prov (filler, or the offline
// rung) and checks the sections of each summary stored.
func summarySectionsLife(t *testing.T, prov string) {
	ctx := context.Background()
	s, _ := storetest.Open(t)
	const constraint = "I must never fly before 11 AM, and my budget is $400."
	msgs := []chat.Message{chat.TextMessage("system", "You are an airline agent."), chat.TextMessage("user", constraint)}
	msgs = append(msgs, sectionTurns(0, 10)...)
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	casc := cascade.New(s.DB(), fakeEntry("filler", filler(), 0))
	if prov == "offline" {
		casc = storetest.ExtractiveCascade(t, s)
	}
	var spans []compact.Span
	c := compact.NewWith(s, casc, compact.Settings{TokenLimit: 1200}, compact.Config{OnSummarized: func(_ context.Context, sp compact.Span) error { spans = append(spans, sp); return nil }})
	for round := range 4 {
		if round > 0 {
			if _, err := s.Append(ctx, "t", sectionTurns(10*round, 10), memory.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
		}
		spans = nil
		rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
		if err != nil || rep.Status != memory.StatusApplied {
			t.Fatalf("round %d: compact: %+v, %v", round, rep, err)
		}
		checkFactsGuarantee(t, s, "t", rep, spans) // the spans of this compaction
		spans = nil
		a, err := s.Active(ctx, "t")
		if err != nil {
			t.Fatal(err)
		}
		summary := ""
		for _, e := range a.Entries {
			if e.CompactionID != 0 {
				summary = e.Text()
			}
		}
		if summary == "" {
			t.Fatalf("round %d: no summary in the active context", round)
		}
		secs, err := summarycheck.Sections(summary)
		if err != nil {
			t.Fatalf("round %d: %v\n%s", round, err, summary)
		}
		if !strings.Contains(secs[transcript.SectionGoal], "never fly before 11 AM") {
			t.Errorf("round %d: the first constraint is not under Goal and constraints:\n%s", round, summary)
		}
		if !strings.Contains(secs[transcript.SectionWork], "update_reservation_flights(") {
			t.Errorf("round %d: no tool call under Work done:\n%s", round, summary)
		}
		if strings.Contains(summary, "Facts from the conversation") {
			t.Errorf("round %d: the facts are still under one trailing heading:\n%s", round, summary)
		}
		if round == 3 {
			t.Logf("last summary (%d tokens, %d facts dropped):\n%s", rep.SummaryTokens, len(rep.FactsDropped), summary)
		}
	}
}
