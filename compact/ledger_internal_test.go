package compact

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
	"github.com/memcascade/memcascade/transcript"
)

// TestStoredLedgerOneMerge: storedLedger merges the dropped facts and those earlier reports
// named in one Merge; the ledger it stores is the one the two merges in turn gave, on random
// ledgers whose facts repeat within and across the three lists (in other cases, weights and
// kinds), with either list empty.
func TestStoredLedgerOneMerge(t *testing.T) {
	texts := []string{"W000123", "w000123", "HAT028", "$1,286", "2024-05-17", "cancel_reservation(reservation_id=ZFA04Y)", "ZFA04Y", "café"}
	rng := rand.New(rand.NewPCG(3, 4))
	list := func(n int) []facts.Fact {
		fs := make([]facts.Fact, n)
		for i := range fs {
			fs[i] = facts.Fact{Kind: facts.Kinds()[rng.IntN(3)], Text: texts[rng.IntN(len(texts))], Weight: rng.IntN(4) * 10, Seq: rng.IntN(50), Dropped: rng.IntN(3) == 0}
		}
		return fs
	}
	for range 2000 {
		ledger, dropped, earlier := list(rng.IntN(8)), list(rng.IntN(4)), list(rng.IntN(4))
		got := string(encodeLedger(storedLedger(ledger, earlier, dropped)))
		// What storedLedger stored before: the two merges in turn.
		gone := make([]facts.Fact, len(dropped))
		named := map[[2]string]bool{}
		for i, f := range dropped {
			f.Dropped = true
			gone[i] = f
			named[[2]string{string(f.Kind), f.Text}] = true
		}
		out := make([]facts.Fact, len(ledger))
		for i, f := range ledger {
			f.Dropped = named[[2]string{string(f.Kind), f.Text}]
			out[i] = f
		}
		if want := string(encodeLedger(facts.Merge(facts.Merge(out, gone), earlier))); got != want {
			t.Fatalf("ledger %v, dropped %v, earlier %v:\nstored %s\nwant   %s", ledger, dropped, earlier, got, want)
		}
	}
}

// TestShownTextLeavesProductTextOut: a facts check reads what an entry shows as facts, never what
// the product wrote itself: a mask placeholder's sizes (57 tokens, 300 bytes), a cut result's
// marker (300 bytes cut), a summary's header (messages 2 to 14). Each holds the number of an
// amount of the thread, which the check must not find there; the fare $99 the entry does show
// (in the digest, the cut result's head, the summary's body) is found. The entry's text keeps
// what the product wrote: only the check leaves it out.
func TestShownTextLeavesProductTextOut(t *testing.T) {
	amounts := facts.Extract([]facts.Message{{Role: chat.RoleUser, Content: "It costs $57, $300 and $14; the fare is $99."}})
	if len(amounts) != 4 {
		t.Fatalf("want 4 amounts, got %v", amounts)
	}
	tool := func(text string) memory.Entry {
		m := chat.TextMessage(chat.RoleTool, text)
		m.ToolCallID = "c1"
		return memory.Entry{Seq: 4, Tokens: 57, Message: m}
	}
	orig := "fare $99\n" + strings.Repeat("z", 300) + "\nend of the fares"
	m := memory.Masked{Seq: 4, Tool: "get_fare", Digest: "facts: $99", Tokens: 40, OrigTokens: 57, OrigBytes: 300}
	c := memory.Cut{Seq: 4, Head: len("fare $99\n"), Tail: len("\nend of the fares"), Tokens: 20, OrigTokens: 57}
	for _, tc := range []struct {
		name    string
		e       memory.Entry
		product string // what the product wrote, in the entry's text
	}{
		{"masked", tool(orig).Marked(&memory.Mark{Masked: &m, Orig: orig}), "57 tokens, 300 bytes"},
		{"cut", tool(orig).Marked(&memory.Mark{Cut: &c, Orig: orig}), "[... 300 bytes cut"},
		{"summary", memory.Entry{Tokens: 30, Message: chat.TextMessage(chat.RoleSystem, summaryHeader(2, 14)+"## Key facts\n- Amounts: $99"),
			CompactionID: 7, CoversFrom: 2, CoversTo: 14}, "(messages 2 to 14;"},
	} {
		if !strings.Contains(tc.e.Text(), tc.product) {
			t.Fatalf("%s: the entry's text %q does not say %q", tc.name, tc.e.Text(), tc.product)
		}
		for name, text := range map[string]string{"FactsText": FactsText(tc.e), "outsideText": outsideText([]memory.Entry{tc.e})} {
			for i, kept := range facts.Kept(amounts, text) {
				if want := amounts[i].Text == "$99"; kept != want {
					t.Errorf("%s: %s finds %s: %v, want %v (in %q)", tc.name, name, amounts[i].Text, kept, want, text)
				}
			}
		}
	}
}

// TestSummaryBodyLeavesHeaderOut: summaryBody takes off exactly the header summaryHeader writes
// (its pattern is made from the header's format), whatever the range, and nothing else.
func TestSummaryBodyLeavesHeaderOut(t *testing.T) {
	for _, r := range [][2]int64{{1, 2}, {2, 14}, {100, 99999}} {
		if got := summaryBody(summaryHeader(r[0], r[1]) + "- IDs: W1"); got != "- IDs: W1" {
			t.Errorf("messages %d to %d: body %q", r[0], r[1], got)
		}
	}
	if got := summaryBody("Summary of the earlier conversation: W1"); got != "Summary of the earlier conversation: W1" {
		t.Errorf("a text without the header: body %q", got)
	}
}

// TestEntryFactsAsBefore: entryFacts, which hands the ledger each message as it reads it, gives
// the ledger it gave when it made a list of the messages first (entryFactsBefore): on a long
// middle of calls, results (some masked) and a summary entry, with and without the
// facts of summaries, read on one goroutine or several.
func TestEntryFactsAsBefore(t *testing.T) {
	counter, err := tokencount.NewCounter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	sh := shaper{count: counter, redact: func(s string) string { return strings.ReplaceAll(s, "SECRET", "[redacted]") }}
	es := []memory.Entry{memory.SummaryEntry(3, "assistant", "[Summary of messages 1 to 4]\n## Key facts\n- order #W0000007, $12.50, SECRET", 30, 1, 4)}
	for i := 5; len(es) < 1500; i += 3 {
		id := fmt.Sprintf("call_%d", i)
		call := chat.Message{Role: "assistant", ToolCalls: []chat.ToolCall{{ID: id, Type: "function",
			Function: chat.FunctionCall{Name: []string{"get_order_details", "cancel_order"}[i%2], Arguments: fmt.Sprintf(`{"order_id": "#W%07d"}`, i)}}}}
		result := chat.ToolResult(id, fmt.Sprintf(`{"order_id": "#W%07d", "status": "delivered", "total": %d.50, "note": "%s"}`, i, i%900, strings.Repeat("a long remark ", 40)))
		if i%7 == 0 {
			result = chat.ToolResult(id, "Error: order not found, SECRET kept")
		}
		es = append(es, memory.Entry{Seq: int64(i), Message: chat.TextMessage("user", fmt.Sprintf("Please check #W%07d by 2024-05-%02d.", i, 1+i%28))},
			memory.Entry{Seq: int64(i + 1), Message: call}, memory.Entry{Seq: int64(i + 2), Message: result})
	}
	for i := range es {
		es[i].Tokens = counter.CountMessage(es[i].Message)
	}
	es = sh.mask(es, 1, 300) // the results among them masked, their originals' facts shown
	masked := 0
	for _, e := range es {
		if e.Mark() != nil && e.Mark().Orig != "" {
			masked++
		}
	}
	if masked < 10 {
		t.Fatalf("%d results masked, want some", masked)
	}
	for _, procs := range []int{1, 2} {
		prev := runtime.GOMAXPROCS(procs)
		for _, with := range []bool{false, true} {
			tms := transcriptMessages(es, sh.redact)
			got, want := entryFacts(es, tms, sh.redact, with), entryFactsBefore(es, tms, sh.redact, with)
			if len(want) < 100 || !reflect.DeepEqual(got, want) {
				t.Fatalf("GOMAXPROCS %d, summaries %v: %d facts, want the %d of before", procs, with, len(got), len(want))
			}
		}
		runtime.GOMAXPROCS(prev)
	}
}

// entryFactsBefore is entryFacts as it was before it read each message through
// facts.ExtractFunc.
func entryFactsBefore(es []memory.Entry, tms []transcript.Message, redact func(string) string, withSummaries bool) []facts.Fact {
	var (
		msgs  []facts.Message
		seqs  []int64
		ents  []string
		calls = map[string]string{}
		shown []facts.Fact
	)
	add := func(m facts.Message, seq int64, entity string) {
		msgs, seqs, ents = append(msgs, m), append(seqs, seq), append(ents, entity)
	}
	for i, e := range es {
		if e.CompactionID != 0 && !withSummaries {
			continue
		}
		tm := tms[i]
		tm.Text = shownText(e, tm.Text, redact)
		fm := facts.FromTranscript(tm)
		if tm.Role == transcript.RoleSummary {
			add(fm, e.CoversFrom, "")
			continue
		}
		tcs := fm.ToolCalls
		fm.ToolCalls = nil
		entity := ""
		if fm.ToolCallID != "" {
			entity = calls[fm.ToolCallID]
		}
		add(fm, e.Seq, entity)
		shown = append(shown, shownFacts(e, tm.Text, entity, redact)...)
		for i, tc := range tcs {
			text := facts.CallText(tc)
			calls[tm.ToolCalls[i].ID] = text
			add(facts.Message{Role: fm.Role, ToolCalls: []facts.ToolCall{tc}}, e.Seq, text)
		}
	}
	ledger := facts.Extract(msgs)
	for i := range ledger {
		k := ledger[i].Seq
		ledger[i].Seq, ledger[i].Entity = int(seqs[k]), ents[k]
	}
	return facts.Merge(ledger, shown)
}

// TestShortWritesOfLists: shortWrites of the ledger's facts at some indexes and of a list is
// shortWrites of them copied and joined (the writes of missing facts and of those earlier
// reports named dropped, read without a copy of the missing ones), at every skip, on random
// lists of writes and lookups that repeat within and across lists.
func TestShortWritesOfLists(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	list := func(n int) []facts.Fact {
		fs := make([]facts.Fact, n)
		for i := range fs {
			fs[i] = facts.Fact{Kind: facts.KindToolCall, Text: fmt.Sprintf("%s(order_id=#W%d)", []string{"cancel_order", "get_order"}[rng.IntN(2)], rng.IntN(6)),
				Weight: []int{10, 60, 90}[rng.IntN(3)], Seq: rng.IntN(30), Outcome: []string{"ok", ""}[rng.IntN(2)]}
		}
		return fs
	}
	writes := 0
	for range 1000 {
		ledger, b := list(rng.IntN(12)), list(rng.IntN(4))
		var idx []int32 // some of the ledger's facts, as the missing ones are
		var a []facts.Fact
		for i := range ledger {
			if rng.IntN(3) > 0 {
				idx = append(idx, int32(i))
				a = append(a, ledger[i])
			}
		}
		for skip := range 6 {
			got, want := shortWrites(skip, ledger, idx, b), shortWritesBefore(append(slices.Clone(a), b...), skip)
			if got != want {
				t.Fatalf("shortWrites(%d, %v, %v, %v) = %q, want %q", skip, ledger, idx, b, got, want)
			}
			if got != "" {
				writes++
			}
		}
	}
	if writes == 0 {
		t.Fatal("no list had a write")
	}
}

// shortWritesBefore is shortWrites as it was, of one list.
func shortWritesBefore(fs []facts.Fact, skip int) string {
	var ws []facts.Fact
	seen := map[string]bool{}
	for _, x := range fs {
		if facts.IsWrite(x) && !seen[x.Text] {
			seen[x.Text] = true
			ws = append(ws, x)
		}
	}
	slices.SortStableFunc(ws, func(a, b facts.Fact) int { return a.Seq - b.Seq })
	if skip >= len(ws) {
		return ""
	}
	var b strings.Builder
	b.WriteString("- Actions (ids and outcome only):")
	for _, x := range ws[skip:] {
		b.WriteString("\n  - ")
		b.WriteString(facts.ShortCall(x))
	}
	return b.String()
}
