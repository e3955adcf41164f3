package facts

import (
	"slices"
	"strings"
	"testing"
)

// referenceSection is how the section was rendered before its lines were made once per
// Section call (sectionRenderer): the renderer must give the same text for every prefix.
func referenceSection(facts []Fact) string {
	if len(facts) == 0 {
		return ""
	}
	var long []string
	for _, f := range facts {
		if longKind(f.Kind) {
			long = append(long, oneLineText(f.Text))
		}
	}
	inLong := newSummaryIndex(strings.Join(long, "\n"))
	var order []Kind
	groups := map[Kind][]string{}
	for _, f := range facts {
		text := oneLineText(f.Text)
		if !longKind(f.Kind) && len(long) > 0 && inLong.has(f) {
			continue
		}
		if f.Kind == KindToolCall && f.Outcome != "" {
			text += " -> " + oneLineText(f.Outcome)
		}
		if _, ok := groups[f.Kind]; !ok {
			order = append(order, f.Kind)
		}
		groups[f.Kind] = append(groups[f.Kind], text)
	}
	var b strings.Builder
	b.WriteString(sectionTitle)
	b.WriteByte('\n')
	for _, k := range order {
		label := kindLabels[k]
		if label == "" {
			label = string(k)
		}
		if longKind(k) {
			b.WriteString("- " + label + ":\n")
			for _, t := range groups[k] {
				if k == KindConstraint {
					t = "\"" + t + "\""
				}
				b.WriteString("  - " + t + "\n")
			}
			continue
		}
		b.WriteString("- " + label + ": " + strings.Join(groups[k], "; ") + "\n")
	}
	return strings.TrimRight(b.String(), "\n")
}

func TestSectionRendererPrefixes(t *testing.T) {
	for _, name := range conversationFiles {
		fs := Extract(loadConversation(t, name))
		// Facts a caller built itself: an unknown kind, several lines, an outcome.
		fs = append(fs, Fact{Kind: "custom", Text: "a\nb", Weight: 55}, Fact{Kind: KindToolCall, Text: "f(x=ZZ1)", Outcome: "error:\nbad", Weight: 65},
			Fact{Kind: KindID, Text: "ZZ1", Weight: 52})
		sortFacts(fs)
		r := newSectionRenderer(fs)
		for k := 0; k <= len(fs); k++ {
			if got, want := r.render(k), referenceSection(fs[:k]); got != want {
				t.Fatalf("%s: prefix %d of %d:\ngot  %q\nwant %q", name, k, len(fs), got, want)
			}
		}
	}
}

// TestSectionerBudgets: one Sectioner asked several budgets, in any order, gives what
// Section gives for each.
func TestSectionerBudgets(t *testing.T) {
	for _, name := range conversationFiles {
		fs := Extract(loadConversation(t, name))
		count := func(s string) int { return len(strings.Fields(s)) + len(s)/7 }
		full := count(referenceSection(fs))
		s := NewSectioner(fs, count)
		for _, budget := range []int{full, full / 3, 0, full + 5, full / 2, 1, full / 3, 40, full - 1} {
			text, n := s.Fit(budget)
			wantText, wantN := Section(slices.Clone(fs), budget, count)
			if text != wantText || n != wantN {
				t.Fatalf("%s: budget %d: Fit gives %d facts, Section %d", name, budget, n, wantN)
			}
			if n > 0 && count(text) > budget {
				t.Fatalf("%s: budget %d: %d tokens", name, budget, count(text))
			}
		}
	}
}
