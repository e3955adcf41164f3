package facts

import (
	"fmt"
	"math/bits"
	"slices"
	"strings"
	"testing"
)

// referenceSection is how the section was rendered before its lines were made once per
// Section call (sectionRenderer), for facts without a key: the renderer must give the same
// text for every prefix.
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
		for i := range fs {
			fs[i].Key, fs[i].Of = "", "" // see TestSectionKeyed
		}
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

// TestSectionerFitSearch: the search from the guess finds the largest prefix that fits (the
// one a scan of every prefix finds) at every budget, with fewer counts than a bisection
// takes when the guess is close, and never more than twice a bisection's.
func TestSectionerFitSearch(t *testing.T) {
	var many []Fact
	for i := range 3000 {
		many = append(many, Fact{Kind: KindID, Text: fmt.Sprintf("W%06d", i), Weight: 50})
		if i%7 == 0 {
			many = append(many, Fact{Kind: KindAmount, Text: fmt.Sprintf("$%d.%02d", i, i%100), Weight: 30})
		}
	}
	lists := map[string][]Fact{"many ids": many}
	for _, name := range conversationFiles {
		lists[name] = Extract(loadConversation(t, name))
	}
	for name, fs := range lists {
		counts := 0
		count := func(s string) int { counts++; return len(strings.Fields(s)) + len(s)/7 }
		ref := NewSectioner(fs, count)
		n := len(ref.r.order)
		sizes := make([]int, n+1)
		for k := 1; k <= n; k++ {
			sizes[k] = ref.size(k)
		}
		bisect := bits.Len(uint(n)) + 1
		for _, budget := range []int{1, 10, sizes[n] / 10, sizes[n] / 3, sizes[n] / 2, sizes[n] - 1, sizes[n]} {
			want := 0
			for k := 1; k <= n; k++ {
				if sizes[k] <= budget {
					want = k
				}
			}
			counts = 0
			s := NewSectioner(fs, count)
			text, got := s.Fit(budget)
			if got != want || (want > 0 && text != ref.render(want)) {
				t.Fatalf("%s: budget %d: Fit holds %d facts, the largest prefix that fits has %d", name, budget, got, want)
			}
			if counts > 2*bisect+1 {
				t.Errorf("%s: budget %d: %d counts for %d facts (a bisection takes %d)", name, budget, counts, n, bisect)
			}
			if name == "many ids" && budget > 10 && counts > bisect/2 {
				t.Errorf("%s: budget %d: %d counts for a list of one kind of fact; a bisection takes %d", name, budget, counts, bisect)
			}
		}
	}
}

// TestSectionKeyed: a fact with a key is rendered with it, the facts of one record on its
// line with the fact that names it, the others under their key; facts without a key under
// their kind; and every prefix of a recorded conversation's ledger holds each of its facts.
func TestSectionKeyed(t *testing.T) {
	fs := []Fact{
		{Kind: KindID, Text: "omar_davis_3817", Key: "user_id", Weight: 56},
		{Kind: KindID, Text: "HAT080", Key: "flight_number", Weight: 55},
		{Kind: KindID, Text: "ZFA04Y", Weight: 54},
		{Kind: KindID, Text: "HAT255", Key: "flight_number", Weight: 53},
		{Kind: KindDate, Text: "2024-05-28", Key: "date", Of: "flight_number HAT080", Weight: 33},
		{Kind: KindAmount, Text: "537", Key: "price", Of: "flight_number HAT080", Weight: 32},
		{Kind: KindAmount, Text: "107", Key: "price", Of: "flight_number HAT080", Weight: 31},
		{Kind: KindDate, Text: "1982-10-19", Key: "dob", Of: "Omar Davis", Weight: 30},
		{Kind: KindAmount, Text: "$23,553", Weight: 30},
	}
	got, n := Section(fs, 1000, nil)
	want := sectionTitle + `
- user_id: omar_davis_3817
- flight_number HAT080: date 2024-05-28; price 537, 107
- IDs: ZFA04Y
- flight_number: HAT255
- Amounts: $23,553
- Omar Davis: dob 1982-10-19`
	if got != want || n != len(fs) {
		t.Fatalf("Section holds %d facts of %d:\n%s\nwant\n%s", n, len(fs), got, want)
	}
	for _, name := range conversationFiles {
		fs := Extract(loadConversation(t, name))
		r := newSectionRenderer(fs)
		for _, k := range []int{1, len(fs) / 3, len(fs)} {
			text := r.render(k)
			for i, kept := range Kept(fs[:k], text) {
				if !kept {
					t.Fatalf("%s: prefix %d: the section misses %s %q (key %q of %q)", name, k, fs[i].Kind, fs[i].Text, fs[i].Key, fs[i].Of)
				}
			}
		}
	}
}

// TestLabelsRoundTrip: the labels read back from a rendered section are the keys and records
// of its facts, and every line of it has the section's shape; a sentence has none.
func TestLabelsRoundTrip(t *testing.T) {
	for _, name := range conversationFiles {
		fs := Extract(loadConversation(t, name))
		text, _ := Section(fs, 1<<30, nil)
		labels := Labels(text)
		var long []string // the facts one a line, which hold some keyed ones already
		for _, line := range strings.Split(text, "\n") {
			if strings.HasPrefix(line, "  - ") {
				long = append(long, line)
			}
		}
		inLong := newSummaryIndex(strings.Join(long, "\n"))
		for _, f := range fs {
			if f.Key == "" || longKind(f.Kind) || inLong.has(f) {
				continue
			}
			if got := labels[f.Text]; got.Key != f.Key || got.Of != f.Of && got.Of != "" {
				t.Fatalf("%s: %q reads back as %+v, want key %q of %q", name, f.Text, got, f.Key, f.Of)
			}
		}
		for _, line := range strings.Split(text, "\n")[1:] {
			if !strings.HasPrefix(line, "  ") && !IsSectionLine(line) {
				t.Fatalf("%s: %q is not read as a line of the section", name, line)
			}
		}
		plain := slices.Clone(fs)
		for i := range plain {
			plain[i].Key, plain[i].Of = "", ""
		}
		Relabel(plain, labels)
		for i := range plain {
			if plain[i].Key == "" && fs[i].Key != "" && !longKind(fs[i].Kind) && !inLong.has(fs[i]) {
				t.Fatalf("%s: Relabel leaves %q without its key %q", name, fs[i].Text, fs[i].Key)
			}
		}
	}
	for _, line := range []string{"- The user is Omar (omar_davis_3817).", "- Note: the fare is not refundable", "Goal: book a flight"} {
		if IsSectionLine(line) {
			t.Errorf("%q is read as a line of the section", line)
		}
	}
}

// TestSectionerOfIndexes: a Sectioner of a ledger's facts at some indexes renders, at every
// budget, what one of a copy of those facts renders: the same order (ties of weight and seq
// included: facts that differ only in their outcome or key), and blank facts left out.
func TestSectionerOfIndexes(t *testing.T) {
	count := func(s string) int { return len(strings.Fields(s)) + len(s)/7 }
	for _, name := range conversationFiles {
		ledger := Extract(loadConversation(t, name))
		for i := range 40 { // twins that sort as equals but render apart, and blank facts
			call := Fact{Kind: KindToolCall, Text: fmt.Sprintf("get_order(order_id=#W%d)", i%5), Weight: weightKey, Seq: i % 3}
			twin := call
			call.Outcome, twin.Outcome = "ok", fmt.Sprint("error ", i)
			ledger = append(ledger, call, Fact{Kind: KindID, Text: " ", Weight: call.Weight, Seq: i}, twin)
		}
		for step := 1; step <= 4; step++ {
			var idx []int32
			var copied []Fact
			for i := range ledger {
				if i%step == 0 || i%7 == 3 {
					idx = append(idx, int32(i))
					copied = append(copied, ledger[i])
				}
			}
			before := slices.Clone(ledger)
			of, ref := NewSectionerOf(ledger, idx, count), sectionerOfCopy(copied, count)
			full := ref.size(len(ref.r.order))
			for _, budget := range []int{full, full / 3, 0, full + 5, full / 2, 1, full - 1, 40} {
				text, n := of.Fit(budget)
				wantText, wantN := ref.Fit(budget)
				if text != wantText || n != wantN {
					t.Fatalf("%s: step %d, budget %d: %d facts, a copy's sectioner %d", name, step, budget, n, wantN)
				}
				gs, _ := of.FitGroups(budget)
				wantGs, _ := ref.FitGroups(budget)
				if !slices.Equal(gs, wantGs) {
					t.Fatalf("%s: step %d, budget %d: groups differ", name, step, budget)
				}
			}
			if !slices.EqualFunc(ledger, before, func(a, b Fact) bool { return a == b }) {
				t.Fatalf("%s: the ledger was changed", name)
			}
		}
	}
}

// sectionerOfCopy is NewSectioner as it was: of a sorted copy of missing.
func sectionerOfCopy(missing []Fact, count func(string) int) *Sectioner {
	fs := slices.DeleteFunc(slices.Clone(missing), func(f Fact) bool { return strings.TrimSpace(f.Text) == "" })
	sortFacts(fs)
	return &Sectioner{r: newSectionRenderer(fs), count: count, tokens: map[int]int{}}
}
