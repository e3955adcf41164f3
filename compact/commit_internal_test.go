package compact

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// TestCommitRefusesUnreportedLoss: the facts check at commit refuses a summary that misses a
// fact of its ledger without naming it in facts_dropped, before anything is written.
func TestCommitRefusesUnreportedLoss(t *testing.T) {
	t.Parallel()
	ledger := []facts.Fact{{Kind: facts.KindID, Text: "ZQ9XYZ", Weight: 50}, {Kind: facts.KindAmount, Text: "$400", Weight: 30}}
	s, err := memory.Open(context.Background(), testdb.Name(t, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j := &job{c: &Compactor{Store: s}, id: 1, rep: &memory.Report{}}
	sum := summary{text: "Summary: the budget is $400.", facts: ledger}
	err = j.applySummary(context.Background(), memory.Active{}, Plan{}, sum, memory.Active{})
	if !errors.Is(err, ErrFactsLost) || !strings.Contains(err.Error(), "ZQ9XYZ") {
		t.Fatalf("applySummary: %v, want ErrFactsLost naming ZQ9XYZ", err)
	}
	sum.dropped = ledger[:1]
	sum.text = "Summary: the budget is 400 dollars." // "$400" is matched by number: still there
	err = j.applySummary(context.Background(), memory.Active{}, Plan{}, sum, memory.Active{})
	if errors.Is(err, ErrFactsLost) {
		t.Fatalf("applySummary refused a summary whose only missing fact is reported dropped: %v", err)
	}
}

// TestCommitSeesMaskedResultFacts: the commit check of a summary over a masked result runs
// against the facts of the result's original that its placeholder shows. The digest writes the
// price as a bare number, which its text alone does not show as an amount: a summary that
// leaves it out, unreported, is refused.
func TestCommitSeesMaskedResultFacts(t *testing.T) {
	t.Parallel()
	counter, err := tokencount.NewCounter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	sh := shaper{count: counter, redact: func(s string) string { return s }}
	call := chat.TextMessage(chat.RoleAssistant, "")
	call.Content = nil
	call.ToolCalls = []chat.ToolCall{{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "get_reservation_details", Arguments: `{"reservation_id": "ZQ9XYZ"}`}}}
	result := chat.TextMessage(chat.RoleTool, `{"reservation_id": "ZQ9XYZ", "flights": [{"flight_number": "HAT084", "price": 1505}], "note": "`+strings.Repeat("a long remark ", 40)+`"}`)
	result.ToolCallID = "c1"
	es := []memory.Entry{{Seq: 1, Message: call, Tokens: counter.CountMessage(call)}, {Seq: 2, Message: result, Tokens: counter.CountMessage(result)}}
	masked := sh.mask(es, 0, 2)
	if masked[1].Mark() == nil || masked[1].Mark().Masked == nil || !strings.Contains(masked[1].Mark().Masked.Digest, "1505") {
		t.Fatalf("the result is not masked with the price in its digest: %q", masked[1].Text())
	}
	ledger := entryFacts(masked, nil, sh.redact, false)
	if !slices.ContainsFunc(ledger, func(f facts.Fact) bool { return f.Kind == facts.KindAmount && f.Text == "1505" }) {
		t.Fatalf("the ledger of the masked result lacks the amount 1505 its digest shows: %+v", ledger)
	}
	s, err := memory.Open(context.Background(), testdb.Name(t, "m.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	j := &job{c: &Compactor{Store: s}, id: 1, rep: &memory.Report{}}
	var text strings.Builder
	for _, f := range ledger {
		if f.Text != "1505" {
			text.WriteString("- " + f.Text + "\n")
		}
	}
	err = j.applySummary(context.Background(), memory.Active{}, Plan{}, summary{text: text.String(), facts: ledger}, memory.Active{})
	if !errors.Is(err, ErrFactsLost) || !strings.Contains(err.Error(), "1505") {
		t.Fatalf("applySummary: %v, want ErrFactsLost naming 1505", err)
	}
}
