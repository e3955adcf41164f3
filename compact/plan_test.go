package compact_test

import (
	"encoding/json"
	"fmt"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
)

// entry builds a test entry: role, seq, tokens; calls are tool-call ids (assistant) and answers
// the id a tool message answers.
func entry(role string, seq int64, tokens int, calls ...string) memory.Entry {
	m := chat.TextMessage(role, fmt.Sprintf("%s %d", role, seq))
	if role == chat.RoleTool {
		m.ToolCallID = calls[0]
	} else {
		for _, id := range calls {
			m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: id, Type: "function", Function: chat.FunctionCall{Name: "f", Arguments: "{}"}})
		}
		if len(calls) > 0 {
			m.Content = json.RawMessage("null")
		}
	}
	return memory.Entry{Seq: seq, Tokens: tokens, Message: m}
}

var planSettings = compact.Settings{TokenLimit: 1000, TargetRatio: 0.5, TriggerRatio: 0.8, SummaryMaxTokens: 200}.WithDefaults()

func TestPlanPinsAndKeepsWholeUnits(t *testing.T) {
	t.Parallel()
	es := []memory.Entry{
		entry("system", 1, 100),
		entry("developer", 2, 20),
		entry("user", 3, 100),
		entry("assistant", 4, 50, "a", "b"), // parallel calls
		entry("tool", 5, 100, "a"),
		entry("tool", 6, 100, "b"),
		entry("user", 7, 100),
		entry("assistant", 8, 50, "c"),
		entry("tool", 9, 150, "c"),
		entry("assistant", 10, 100),
	}
	p := compact.MakePlan(es, planSettings, 500)
	if p.Pinned != 2 || p.PinnedTokens != 120 {
		t.Fatalf("pinned %d (%d tokens), want 2 (120)", p.Pinned, p.PinnedTokens)
	}
	// The summary's share of the target 500: min(200, (500-120-3)/2) = 188, so the kept
	// messages have 500-120-188 = 192. From the newest: 10 (100); + unit 8-9 (200) = 300 > 192.
	if p.Kept != 9 {
		t.Fatalf("kept starts at index %d, want 9 (seq 10)", p.Kept)
	}
	if p.FromSeq != 3 || p.ToSeq != 9 {
		t.Fatalf("range %d-%d, want 3-9", p.FromSeq, p.ToSeq)
	}
	if p.Ineffective {
		t.Fatalf("ineffective: %s", p.Why)
	}
	// The summary fits in what the target leaves: pinned + kept + summary within 500.
	if want := min(200, 500-120-100-3); p.SummaryBudget > want || p.SummaryBudget < 32 {
		t.Fatalf("summary budget %d, want 32..%d", p.SummaryBudget, want)
	}
}

func TestPlanNeverSplitsCallFromResult(t *testing.T) {
	t.Parallel()
	es := []memory.Entry{
		entry("system", 1, 10),
		entry("user", 2, 300),
		entry("assistant", 3, 10, "x"),
		entry("user", 4, 10), // a user message while x is unanswered
		entry("tool", 5, 10, "x"),
		entry("assistant", 6, 10),
	}
	for budget := 0; budget <= 400; budget += 5 {
		p := compact.MakePlan(es, planSettings, budget)
		if p.Kept == 3 || p.Kept == 4 {
			t.Fatalf("budget %d: kept starts at %d, between call x and its result", budget, p.Kept)
		}
		if p.Kept < len(es) && es[p.Kept].Message.Role == chat.RoleTool {
			t.Fatalf("budget %d: kept starts with a tool result", budget)
		}
	}
}

func TestPlanKeepsPendingCallWithItsUnit(t *testing.T) {
	t.Parallel()
	es := []memory.Entry{
		entry("system", 1, 10),
		entry("user", 2, 500),
		entry("assistant", 3, 500),
		entry("user", 4, 10),
		entry("assistant", 5, 10, "p"), // its result has not arrived yet
	}
	p := compact.MakePlan(es, planSettings, 15)
	if p.Kept != 4 {
		t.Fatalf("kept starts at %d, want 4: the newest unit (the pending call) is always kept", p.Kept)
	}
}

// A pending call followed by other messages still stays in the kept part: its result may
// arrive later and must find its call in the active context.
func TestPlanKeepsPendingCallFollowedByMessages(t *testing.T) {
	t.Parallel()
	es := []memory.Entry{
		entry("system", 1, 10),
		entry("user", 2, 100),
		entry("assistant", 3, 100, "x"), // no result yet
		entry("user", 4, 100),
		entry("assistant", 5, 100),
	}
	p := compact.MakePlan(es, compact.Settings{TokenLimit: 1000, SummaryMaxTokens: 50}.WithDefaults(), 250)
	if p.Kept > 2 {
		t.Fatalf("kept starts at %d: the pending call at index 2 was summarized", p.Kept)
	}
}

func TestPlanNewestUnitAlwaysKept(t *testing.T) {
	t.Parallel()
	es := []memory.Entry{entry("system", 1, 10), entry("user", 2, 500), entry("assistant", 3, 900)}
	p := compact.MakePlan(es, planSettings, 100)
	if p.Kept != 2 {
		t.Fatalf("kept starts at %d, want 2", p.Kept)
	}
}

func TestPlanSummaryIsFoldedNeverPinned(t *testing.T) {
	t.Parallel()
	sum := memory.Entry{Tokens: 150, Message: chat.TextMessage("system", "Summary..."), CompactionID: 4, CoversFrom: 2, CoversTo: 20}
	es := []memory.Entry{entry("system", 1, 50), sum, entry("user", 21, 300), entry("assistant", 22, 300), entry("user", 23, 100)}
	p := compact.MakePlan(es, planSettings, 200)
	if p.Pinned != 1 {
		t.Fatalf("pinned %d, want 1: a summary with role system is not pinned", p.Pinned)
	}
	if p.FromSeq != 2 || p.ToSeq != 22 {
		t.Fatalf("range %d-%d, want 2-22: the new summary covers what the old one did", p.FromSeq, p.ToSeq)
	}
}

func TestPlanIneffective(t *testing.T) {
	t.Parallel()
	// The middle is a sliver of the context: it cannot save 10%.
	es := []memory.Entry{entry("system", 1, 800), entry("user", 2, 20), entry("assistant", 3, 100)}
	p := compact.MakePlan(es, planSettings, 900)
	if !p.Ineffective || p.Why == "" {
		t.Fatalf("plan %+v, want ineffective with a reason", p)
	}
	// Only pinned messages and one unit: nothing to summarize.
	p = compact.MakePlan(es[:2], planSettings, 900)
	if !p.Ineffective {
		t.Fatalf("plan %+v, want ineffective", p)
	}
}
