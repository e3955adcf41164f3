package facts

import (
	"slices"
	"strings"
)

// sectionTitle heads the section Section renders: the facts are quoted from the
// conversation, not instructions.
const sectionTitle = "## Facts from the conversation (quoted as recorded)"

var kindLabels = map[Kind]string{
	KindConstraint: "The user's constraints, in their words",
	KindError:      "Errors",
	KindToolCall:   "Tool calls",
	KindID:         "IDs",
	KindAmount:     "Amounts",
	KindPercent:    "Percentages",
	KindDate:       "Dates",
	KindPath:       "Paths",
	KindURL:        "URLs",
	KindEmail:      "Emails",
	KindTime:       "Times",
	KindQuantity:   "Quantities",
}

// longKind reports kinds rendered one per line; the others share a line per kind,
// separated by "; ".
func longKind(k Kind) bool {
	return k == KindConstraint || k == KindError || k == KindToolCall
}

// Section renders the missing facts as a compact "Key facts" section: a markdown list
// grouped by kind, the groups and the facts within them in order of importance. It fits
// within maxTokens as measured by count (the caller's tokenizer; nil counts one token per
// four bytes), and returns the section and how many facts it holds. Facts that do not fit
// are dropped lowest weight first: the section holds the k most important facts for the
// largest k that fits. An id, date or other short fact that already appears inside a
// constraint, error or tool call of the section is not repeated, but counts as held.
// Nothing fits, or nothing is missing: "", 0.
func Section(missing []Fact, maxTokens int, count func(string) int) (string, int) {
	if maxTokens <= 0 || len(missing) == 0 {
		return "", 0
	}
	if count == nil {
		count = func(s string) int { return (len(s) + 3) / 4 }
	}
	facts := slices.Clone(missing)
	facts = slices.DeleteFunc(facts, func(f Fact) bool { return strings.TrimSpace(f.Text) == "" })
	sortFacts(facts)
	n := len(facts)
	fits := func(k int) bool { return count(renderSection(facts[:k])) <= maxTokens }
	if n > 0 && fits(n) {
		return renderSection(facts), n
	}
	// Largest k with fits(k), by bisection: a longer prefix never renders shorter.
	lo, hi := 0, n // fits(lo) is assumed, fits(hi) is false
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if fits(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	for lo > 0 && !fits(lo) { // a tokenizer that is not monotonic
		lo--
	}
	if lo == 0 {
		return "", 0
	}
	return renderSection(facts[:lo]), lo
}

// renderSection renders facts (sorted) as the section.
func renderSection(facts []Fact) string {
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
			text += " -> " + oneLineText(f.Outcome) // the action's record, on its one line
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

// oneLineText puts a fact on one line (facts are single lines, but a caller may build
// its own).
func oneLineText(s string) string {
	s = strings.TrimSpace(s)
	if !strings.ContainsAny(s, "\r\n") {
		return s
	}
	return strings.Join(strings.Fields(s), " ")
}
