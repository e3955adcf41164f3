package facts

import (
	"strings"
	"testing"
)

// TestCheckerKept: the Checker, which looks the summary's words up in an index of the
// ledger's one-word facts, gives what checking each fact in the summary gives, on the
// ledgers of the recorded conversations against their own text, parts of it, their facts
// section, and texts that glue, split, re-case or re-space the facts.
func TestCheckerKept(t *testing.T) {
	for _, name := range conversationFiles {
		msgs := loadConversation(t, name)
		ledger := Extract(msgs)
		// Facts a caller built itself, and forms of the same word.
		ledger = append(ledger, Fact{Kind: KindID, Text: "ZZ1"}, Fact{Kind: KindID, Text: " zz1 "}, Fact{Kind: KindID, Text: "Ünïcode_ID7"},
			Fact{Kind: "custom", Text: "word"}, Fact{Kind: KindID, Text: ""}, Fact{Kind: KindEmail, Text: "a@b.io"})
		hay := haystack(msgs)
		section, _ := Section(ledger, 1<<20, nil)
		var words []string
		for _, f := range ledger {
			words = append(words, f.Text)
		}
		summaries := []string{
			"", hay, hay[:len(hay)/2], hay[len(hay)/2:], section, strings.ToUpper(section),
			strings.Join(words, " "), strings.Join(words, ""), strings.Join(words, "_"), strings.Join(words, "\u00e9"),
			"zz1 and ünïcode_id7 and word.", "zz12 wordy ünïcode_id7x", "a@b.io",
		}
		c := NewChecker(ledger)
		for si, summary := range summaries {
			got := c.Kept(summary)
			idx := newSummaryIndex(summary)
			kept := 0
			for i, f := range ledger {
				if want := idx.has(f); got[i] != want {
					t.Fatalf("%s: summary %d: fact %q (%s): Checker says %v, the check of the fact %v", name, si, f.Text, f.Kind, got[i], want)
				}
				if got[i] {
					kept++
				}
			}
			if si == 1 && kept < len(ledger)/2 {
				t.Fatalf("%s: the conversation's own text keeps only %d of %d facts: the comparison proves little", name, kept, len(ledger))
			}
		}
	}
}
