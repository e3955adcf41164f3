package facts

import (
	"cmp"
	"slices"
	"strings"
	"unicode/utf8"
)

// sectionTitle heads the section Section renders: the facts are quoted from the
// conversation, not instructions.
const sectionTitle = "## Facts from the conversation (quoted as recorded)"

var kindLabels = map[Kind]string{
	KindConstraint: "The user's constraints, in their words",
	KindError:      "Errors",
	KindToolCall:   "Tool calls",
	KindID:         "IDs",
	KindDigest:     "Digests and hashes",
	KindVersion:    "Versions",
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
	return NewSectioner(missing, count).Fit(maxTokens)
}

// A Sectioner renders the sections of one list of missing facts for several budgets, as
// Section does, counting each prefix of the list once whatever the number of budgets asked (a
// summary is fitted to its soft budget, then to its hard one). It keeps the counts, and only
// the latest prefix rendered: a long list's prefixes are each the size of a summary or more,
// and the search counts a dozen of them.
type Sectioner struct {
	r      *sectionRenderer
	count  func(string) int
	tokens map[int]int
	text   string // the latest prefix rendered, of textK facts
	textK  int
	ends   []int // see guess
}

// NewSectioner prepares the sections of missing, counted by count (nil: one token per four
// bytes).
func NewSectioner(missing []Fact, count func(string) int) *Sectioner {
	idx := make([]int32, len(missing))
	for i := range idx {
		idx[i] = int32(i)
	}
	return NewSectionerOf(missing, idx, count)
}

// NewSectionerOf is NewSectioner of the facts of ledger at idx, ascending indexes in ledger,
// read where they are: a long ledger misses tens of thousands of facts, and the sectioner
// sorts their indexes rather than a copy of them. ledger is not changed, and must not be
// while the Sectioner is used.
func NewSectionerOf(ledger []Fact, idx []int32, count func(string) int) *Sectioner {
	if count == nil {
		count = func(s string) int { return (len(s) + 3) / 4 }
	}
	order := slices.DeleteFunc(slices.Clone(idx), func(i int32) bool { return strings.TrimSpace(ledger[i].Text) == "" })
	slices.SortFunc(order, func(a, b int32) int { // sortFacts, by index
		if c := compareFacts(&ledger[a], &ledger[b]); c != 0 {
			return c
		}
		return cmp.Compare(a, b)
	})
	return &Sectioner{r: newSectionRendererOf(ledger, order), count: count, tokens: map[int]int{}}
}

func (s *Sectioner) render(k int) string {
	if k != s.textK {
		s.text, s.textK = s.r.render(k), k
	}
	return s.text
}

func (s *Sectioner) size(k int) int {
	n, ok := s.tokens[k]
	if !ok {
		n = s.count(s.render(k))
		s.tokens[k] = n
	}
	return n
}

// Fit is Section(missing, maxTokens, count).
//
// The largest prefix that fits is found by counting as few prefixes as it can (counting a
// section of thousands of facts is what a fit costs). The prefixes counted for earlier
// budgets bound it to start with; then each probe is where the counts of the two ends of the
// range put the budget, by the bytes of the facts' lines between them (a list of many facts
// of one kind is close to linear), and a probe that does not halve the range is followed by
// a bisection step: a close guess takes two or three counts, and no search takes more than
// twice the counts of a bisection.
func (s *Sectioner) Fit(maxTokens int) (string, int) {
	n := s.fit(maxTokens)
	if n == 0 {
		return "", 0
	}
	return s.render(n), n
}

// fit returns how many facts Fit holds.
func (s *Sectioner) fit(maxTokens int) int {
	n := len(s.r.order)
	if maxTokens <= 0 || n == 0 {
		return 0
	}
	fits := func(k int) bool { return s.size(k) <= maxTokens }
	if fits(n) {
		return n
	}
	// Largest k with fits(k): a longer prefix never renders shorter. The prefixes counted for
	// other budgets bound it already.
	lo, hi := 0, n // fits(lo) is assumed, fits(hi) is false
	for k, t := range s.tokens {
		if t <= maxTokens && k > lo {
			lo = k
		} else if t > maxTokens && k < hi {
			hi = k
		}
	}
	lo = min(lo, hi-1) // a tokenizer that is not monotonic: the search below starts over
	for hi-lo > 1 {
		width := hi - lo
		if k := s.guess(lo, hi, maxTokens); fits(k) {
			lo = k
		} else {
			hi = k
		}
		if hi-lo > 1 && hi-lo > width/2 {
			if mid := (lo + hi) / 2; fits(mid) {
				lo = mid
			} else {
				hi = mid
			}
		}
	}
	for lo > 0 && !fits(lo) { // a tokenizer that is not monotonic
		lo--
	}
	return lo
}

// guess returns the k in (lo, hi) where the budget falls at the tokens per byte between the
// counts of prefixes lo and hi (counted already, 0 for the empty prefix): the last k whose
// facts' lines, with their separators, end within the bytes that rate gives the budget. It
// is only where the search probes next.
func (s *Sectioner) guess(lo, hi, maxTokens int) int {
	if s.ends == nil {
		s.ends = make([]int, len(s.r.line)+1) // ends[k]: the bytes of the lines of facts[:k]
		s.ends[0] = len(sectionTitle)
		for i, line := range s.r.line {
			s.ends[i+1] = s.ends[i] + len(line) + 2
		}
	}
	tlo := 0
	if lo > 0 {
		tlo = s.size(lo)
	}
	thi := s.size(hi)
	k := lo + (hi-lo)/2
	if thi > tlo {
		at := s.ends[lo] + int(float64(maxTokens-tlo)/float64(thi-tlo)*float64(s.ends[hi]-s.ends[lo]))
		k, _ = slices.BinarySearch(s.ends, at+1)
		k-- // the last k with ends[k] <= at
	}
	return min(max(k, lo+1), hi-1)
}

// A Group is the rendered lines of one kind of fact in a section: "- IDs: a; b", or a
// labelled list for the kinds rendered one per line.
type Group struct {
	Kind Kind
	Text string
}

// FitGroups is Fit, returning the facts it holds as their groups (in the section's order)
// instead of one section under its title: a caller puts each group under the heading of
// its own choosing. The groups' text is never longer than the section Fit returns.
func (s *Sectioner) FitGroups(maxTokens int) ([]Group, int) {
	n := s.fit(maxTokens)
	if n == 0 {
		return nil, 0
	}
	return s.r.groups(n), n
}

// sectionRenderer renders prefixes of one sorted list of facts as the section: the
// bisection of Section renders a dozen of them, so each fact's line is made once. The list is
// all's facts at order.
type sectionRenderer struct {
	all   []Fact
	order []int32
	one   []string // oneLineText of each fact's text
	line  []string // the fact's line in its group (a tool call with its outcome)
	long  []bool
}

// newSectionRenderer renders prefixes of facts, sorted already.
func newSectionRenderer(facts []Fact) *sectionRenderer {
	order := make([]int32, len(facts))
	for i := range order {
		order[i] = int32(i)
	}
	return newSectionRendererOf(facts, order)
}

func newSectionRendererOf(all []Fact, order []int32) *sectionRenderer {
	n := len(order)
	r := &sectionRenderer{all: all, order: order, one: make([]string, n), line: make([]string, n), long: make([]bool, n)}
	for i := range n {
		f := r.fact(i)
		r.one[i] = oneLineText(f.Text)
		r.line[i] = r.one[i]
		if f.Kind == KindToolCall && f.Outcome != "" {
			r.line[i] += " -> " + oneLineText(f.Outcome)
		}
		r.long[i] = longKind(f.Kind)
	}
	return r
}

// fact is the i-th fact of the sorted list.
func (r *sectionRenderer) fact(i int) *Fact { return &r.all[r.order[i]] }

// render renders facts[:k] as the section.
func (r *sectionRenderer) render(k int) string {
	if k == 0 {
		return ""
	}
	gs := r.groups(k)
	size := len(sectionTitle) + 1
	for _, g := range gs {
		size += len(g.Text) + 1
	}
	var b strings.Builder
	b.Grow(size)
	b.WriteString(sectionTitle)
	for _, g := range gs {
		b.WriteByte('\n')
		b.WriteString(g.Text)
	}
	return b.String()
}

// groups renders facts[:k] as their groups, in order of first appearance. Constraints,
// errors and tool calls are listed one a line under their kind. A fact with a key (see
// Fact.Key) stays with it: the facts of one record share its line ("- flight_number HAT080:
// date 2024-05-28, price 537"), with the fact that names the record when it is among them,
// and the other keyed facts are listed under their key ("- user_id: omar_davis_3817"). The
// facts without a key are listed under their kind ("- IDs: HAT028; HAT277").
func (r *sectionRenderer) groups(k int) []Group {
	var long []string
	for i := range k {
		if r.long[i] {
			long = append(long, r.one[i])
		}
	}
	var inLong *summaryIndex
	if len(long) > 0 {
		inLong = newSummaryIndex(strings.Join(long, "\n"))
	}
	skip := make([]bool, k)    // held by a fact one a line already
	heads := map[string]bool{} // the records some fact of the prefix is listed under
	for i := range k {
		f := r.fact(i)
		skip[i] = !r.long[i] && inLong != nil && inLong.has(*f)
		if !r.long[i] && !skip[i] && f.Key != "" && f.Of != "" {
			heads[f.Of] = true
		}
	}
	type group struct {
		id    string // the kind, "key\x00" and the key, or "of\x00" and the record
		kind  Kind
		label string // the key or the record; "" for a group of a kind
		head  int    // the fact that names the record, -1 when not in the group
		lines []int
	}
	var groups []group // in order of first appearance
	at := map[string]int{}
	for i := range k {
		f := r.fact(i)
		if skip[i] {
			continue
		}
		g := group{id: string(f.Kind), kind: f.Kind, head: -1}
		switch {
		case r.long[i] || f.Key == "":
		case f.Of != "":
			g.id, g.label = "of\x00"+f.Of, f.Of
		default:
			// The fact's own line names a record some fact is listed under: made only here, not
			// for every fact of the prefix.
			if self := f.Key + " " + oneLineText(f.Text); heads[self] {
				g.id, g.label = "of\x00"+self, self
			} else {
				g.id, g.label = "key\x00"+f.Key, f.Key
			}
		}
		j, ok := at[g.id]
		if !ok {
			j = len(groups)
			at[g.id] = j
			groups = append(groups, g)
		}
		if f.Of == "" && strings.HasPrefix(g.id, "of\x00") {
			groups[j].head = i // named by the record's label already
			continue
		}
		groups[j].lines = append(groups[j].lines, i)
	}
	out := make([]Group, 0, len(groups))
	for _, g := range groups {
		var b strings.Builder
		b.WriteString("- ")
		switch {
		case strings.HasPrefix(g.id, "of\x00"):
			b.WriteString(g.label)
			r.writeFields(&b, g.lines)
		case g.label != "":
			b.WriteString(g.label)
			b.WriteString(": ")
			for j, i := range g.lines {
				if j > 0 {
					b.WriteString("; ")
				}
				b.WriteString(r.line[i])
			}
		default:
			r.writeKind(&b, g.kind, g.lines)
		}
		out = append(out, Group{Kind: g.kind, Text: b.String()})
	}
	return out
}

// writeFields writes the facts at lines, of one record, as its fields: each key once, with
// its values in order (": date 2024-05-28; price 537, 107").
func (r *sectionRenderer) writeFields(b *strings.Builder, lines []int) {
	var keys []string
	values := map[string][]int{}
	for _, i := range lines {
		k := r.fact(i).Key
		if _, ok := values[k]; !ok {
			keys = append(keys, k)
		}
		values[k] = append(values[k], i)
	}
	for j, k := range keys {
		if j == 0 {
			b.WriteString(": ")
		} else {
			b.WriteString("; ")
		}
		b.WriteString(k)
		for n, i := range values[k] {
			if n == 0 {
				b.WriteByte(' ')
			} else {
				b.WriteString(", ")
			}
			b.WriteString(r.line[i])
		}
	}
}

// writeKind writes the facts at lines, of kind k, under the kind's label: one a line for the
// long kinds, else on one line separated by "; ".
func (r *sectionRenderer) writeKind(b *strings.Builder, k Kind, lines []int) {
	label := kindLabels[k]
	if label == "" {
		label = string(k)
	}
	b.WriteString(label)
	if !longKind(k) {
		b.WriteString(": ")
		for j, i := range lines {
			if j > 0 {
				b.WriteString("; ")
			}
			b.WriteString(r.line[i])
		}
		return
	}
	b.WriteString(":")
	for _, i := range lines {
		b.WriteString("\n  - ")
		if k == KindConstraint {
			b.WriteByte('"')
			b.WriteString(r.line[i])
			b.WriteByte('"')
		} else {
			b.WriteString(r.line[i])
		}
	}
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

// IsWrite reports whether f is a write action: a tool call weighted as one that changes
// something (not a lookup, and with arguments to keep).
func IsWrite(f Fact) bool { return f.Kind == KindToolCall && f.Weight >= weightWrite }

// OutranksWrites reports whether f weighs more than any write action: a constraint or an error.
func OutranksWrites(f Fact) bool { return f.Weight >= weightError }

// ShortCall renders a tool call fact on one line with what it acted on: its name, the
// arguments that are ids (id, or a name ending in _id or Id), or its first argument when none
// is, and its outcome (cut): "cancel_reservation(reservation_id=X1Y2Z3)
// -> ok". It is how a write action stays in a summary whose budget leaves no room for all its
// arguments.
func ShortCall(f Fact) string {
	text := oneLineText(f.Text)
	open := strings.IndexByte(text, '(')
	if open < 0 || !strings.HasSuffix(text, ")") {
		return withOutcome(text, f.Outcome)
	}
	var args []string // "key=value", a value's own ", " joined back
	for _, p := range strings.Split(text[open+1:len(text)-1], ", ") {
		if k, _, ok := strings.Cut(p, "="); ok && isArgKey(k) || len(args) == 0 {
			args = append(args, p)
		} else {
			args[len(args)-1] += ", " + p
		}
	}
	var keep []string
	for _, a := range args {
		k, _, _ := strings.Cut(a, "=")
		if k == "id" || strings.HasSuffix(k, "_id") || strings.HasSuffix(k, "Id") || strings.HasSuffix(k, "ID") {
			keep = append(keep, a)
		}
	}
	if len(keep) == 0 && len(args) > 0 && args[0] != "" {
		keep = args[:1]
	}
	return withOutcome(text[:open]+"("+strings.Join(keep, ", ")+")", f.Outcome)
}

// withOutcome appends a tool call's outcome, cut to a short line.
func withOutcome(call, outcome string) string {
	if outcome = oneLineText(outcome); outcome == "" {
		return call
	}
	if utf8.RuneCountInString(outcome) > 32 { // an error is a fact of its own: its start tells it
		outcome = cutWords(outcome, 24) + ellipsis
	}
	return call + " -> " + outcome
}

// A Label is what a value is: the key it was given under and the record it belongs to, as
// [Fact] Key and Of.
type Label struct{ Key, Of string }

// Labels reads back, by value, the labels a text's lines of a section rendered by [Section]
// give: a record's line ("- flight_number HAT080: date 2024-05-28; price 537, 107" labels
// HAT080, 2024-05-28, 537 and 107) and a key's line ("- user_id: omar_davis_3817"). Values
// listed under their kind, and lines of another shape, give none. A summary that folds an
// earlier one thus keeps what its values are, though the ledger reads them from its text.
func Labels(text string) map[string]Label {
	out := map[string]Label{}
	for line := range lines(text) {
		line = strings.TrimPrefix(strings.TrimSpace(line), "- ")
		label, rest, ok := strings.Cut(line, ": ")
		if !ok || isKindLabel(label) || strings.TrimSpace(rest) == "" {
			continue
		}
		items := strings.Split(rest, "; ")
		head := strings.Fields(label)
		oneWords := true
		for _, it := range items {
			oneWords = oneWords && len(strings.Fields(it)) == 1
		}
		if oneWords && len(head) == 1 && isLabelKey(label) {
			for _, it := range items {
				out[strings.TrimSpace(it)] = Label{Key: label}
			}
			continue
		}
		if len(head) == 2 && isLabelKey(head[0]) && isIDKey(head[0], strings.ToLower(head[0])) {
			out[head[1]] = Label{Key: head[0]}
		}
		for _, it := range items {
			k, vals, ok := strings.Cut(strings.TrimSpace(it), " ")
			if !ok || !isLabelKey(k) {
				continue
			}
			for _, v := range strings.Split(vals, ", ") {
				if v = strings.TrimSpace(v); v != "" && !strings.ContainsAny(v, " \t") {
					out[v] = Label{Key: k, Of: label}
				}
			}
		}
	}
	return out
}

// Relabel gives each fact of ledger without a key the label labels hold for its text.
func Relabel(ledger []Fact, labels map[string]Label) {
	if len(labels) == 0 {
		return
	}
	for i := range ledger {
		if f := &ledger[i]; f.Key == "" && !longKind(f.Kind) {
			if l, ok := labels[strings.TrimSpace(f.Text)]; ok {
				f.Key, f.Of = l.Key, l.Of
			}
		}
	}
}

// isKindLabel reports whether s is the label a section lists a kind of fact under.
func isKindLabel(s string) bool {
	for _, l := range kindLabels {
		if s == l {
			return true
		}
	}
	return false
}

// IsGroupTitle reports whether a line (its "- " aside) is the title of a group of a section
// rendered by [Section] that lists its facts on the lines below ("- Errors:").
func IsGroupTitle(line string) bool {
	s, ok := strings.CutSuffix(strings.TrimPrefix(strings.TrimSpace(line), "- "), ":")
	return ok && isKindLabel(s)
}

// IsSectionLine reports whether a line (its "- " aside) has the shape of a line of a section
// rendered by [Section] but a fact one a line: a group's title ("Errors:"), a kind's list
// ("IDs: HAT028; HAT277"), a key's list ("user_id: omar_davis_3817") or a record's line
// ("flight_number HAT080: date 2024-05-28; price 537, 107"). A sentence is none of them.
func IsSectionLine(line string) bool {
	if IsGroupTitle(line) {
		return true
	}
	label, rest, ok := strings.Cut(strings.TrimPrefix(strings.TrimSpace(line), "- "), ": ")
	if !ok || strings.TrimSpace(rest) == "" {
		return false
	}
	if isKindLabel(label) {
		return true
	}
	items := strings.Split(rest, "; ")
	if len(strings.Fields(label)) == 1 && isLabelKey(label) {
		for _, it := range items {
			if len(strings.Fields(it)) != 1 {
				return false
			}
		}
		return true
	}
	for _, it := range items {
		k, vals, ok := strings.Cut(strings.TrimSpace(it), " ")
		if !ok || !isLabelKey(k) || strings.Contains(k, " ") {
			return false
		}
		for _, v := range strings.Split(vals, ", ") {
			if len(strings.Fields(v)) != 1 {
				return false
			}
		}
	}
	return true
}
