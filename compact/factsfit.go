package compact

import (
	"slices"
	"strings"

	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/transcript"
)

// The facts guarantee: a summary commits only when every fact of the ledger of what it
// summarizes is in the resulting active context (the pinned messages, the summary, the kept
// messages), or is named in the report's facts_dropped. factFit composes the summary text so
// that as few facts as possible are dropped, and missingFacts is the check itself, run again
// on the exact text that is committed (Compactor.apply).

// factFit composes a summary from the provider's prose and the facts it left out.
type factFit struct {
	ledger  []facts.Fact
	checker *facts.Checker // of ledger (nil: one is made per check)
	header  string
	outside []bool // ledger facts already in the pinned or kept messages
	count   func(string) int
	// soft is the token budget of the summary's body (header excluded) as planned
	// (summary_max_tokens and the 10% saving); hard is what the limit leaves for it. The facts
	// may take the body past soft, up to hard, before any of them is dropped.
	soft, hard int
	headings   []string // of one's own prompt, by section ("": the built-in heading)
	// named are the facts an earlier report named dropped: its write actions keep their
	// short line (see with).
	named []facts.Fact
}

// compose returns the summary text and the facts it leaves out: prose with the missing facts
// appended. When they do not all fit, room is made first by letting the facts use the hard
// budget, then by giving the facts budget ahead of the prose (the prose is cut at line ends,
// and what it loses is looked for again); only then are the least important facts left out
// (facts.Section keeps the most important ones: constraints, errors, tool calls and ids
// first).
func (f factFit) compose(prose string) (string, []facts.Fact) {
	m := &fitMemo{missing: map[string][]int32{}}
	text, dropped := f.with(m, prose, f.soft)
	if len(dropped) == 0 && f.unlined(text, nil) == 0 {
		return text, nil
	}
	best, bestDropped := text, dropped
	tried := map[string]bool{} // a short prose cuts to the same lines at several shares
	for _, share := range []float64{1, 0.75, 0.5, 0.25, 0} {
		cut := cutLines(prose, int(float64(f.count(prose))*share), f.count)
		if tried[cut] {
			continue // the same text again: the same result, which cannot be better
		}
		tried[cut] = true
		text, dropped := f.with(m, cut, f.hard)
		lines, bestLines := f.unlined(text, dropped), f.unlined(best, bestDropped)
		if len(dropped) == 0 && lines == 0 {
			return text, nil
		}
		// Fewer constraints and errors dropped first, then fewer write actions without their
		// line, then fewer facts dropped.
		top, bestTop := f.droppedWeight(dropped, true), f.droppedWeight(bestDropped, true)
		if top < bestTop || top == bestTop && (lines < bestLines || lines == bestLines && f.droppedWeight(dropped, false) < f.droppedWeight(bestDropped, false)) {
			best, bestDropped = text, dropped
		}
	}
	return best, f.factsAt(bestDropped)
}

// fitMemo keeps what the tries of one compose share: the facts check of each text tried, and
// the sectioner of the latest list of missing facts (the tries at the soft and the hard budget
// usually miss the same facts, and often make the same text; a sectioner holds its facts
// sorted, and older ones are seldom asked for again).
//
// A list of missing facts is the ledger's indexes of them, ascending, never a copy of the
// facts: a long ledger misses tens of thousands of facts, and copies of them for the texts
// tried and the sectioner held the ledger over and over (16 MB for 100,000 messages). The
// lists are shared: no one changes them.
type fitMemo struct {
	missing map[string][]int32
	section memoSection
}

type memoSection struct {
	missing []int32
	s       *facts.Sectioner
}

// check returns the indexes in f.ledger of the facts text misses (f.missingIndexes).
func (m *fitMemo) check(f factFit, text string) []int32 {
	got, ok := m.missing[text]
	if !ok {
		got = f.missingIndexes(text)
		m.missing[text] = got
	}
	return got
}

// sectioner returns the sectioner of the facts of f.ledger at missing.
func (m *fitMemo) sectioner(f factFit, missing []int32) *facts.Sectioner {
	if m.section.s != nil && slices.Equal(m.section.missing, missing) {
		return m.section.s
	}
	m.section = memoSection{missing, facts.NewSectionerOf(f.ledger, missing, f.count)}
	return m.section.s
}

// factsAt returns a copy of the facts of f.ledger at idx (nil when none).
func (f factFit) factsAt(idx []int32) []facts.Fact {
	if len(idx) == 0 {
		return nil
	}
	out := make([]facts.Fact, len(idx))
	for i, k := range idx {
		out[i] = f.ledger[k]
	}
	return out
}

// anyWrite reports whether a fact of f.ledger at idx is a write action.
func (f factFit) anyWrite(idx []int32) bool {
	return slices.ContainsFunc(idx, func(k int32) bool { return facts.IsWrite(f.ledger[k]) })
}

// with puts prose under the summary's sections and adds the facts it misses under the
// section of their kind, within budget tokens for the body (see sections.go). The write
// actions that do not fit whole (and those an earlier report named dropped, f.named) stay each
// on one line with what they acted on (facts.ShortCall), the newest first when not all of
// those fit either: the full calls are still named dropped.
func (f factFit) with(m *fitMemo, prose string, budget int) (string, []int32) {
	ss := parseSections(prose, f.headingOf)
	body := ss.render(nil)
	text := f.header + body
	missing := m.check(f, text)
	named := slices.ContainsFunc(f.named, facts.IsWrite)
	if len(missing) == 0 && !named {
		return text, nil
	}
	// The headings the facts may open are reserved; the section title the sectioner counts
	// is not written, which leaves a margin for the joins.
	room := budget - f.count(body) - 2 - ss.missingHeadings(f.count)
	if len(missing) > 0 {
		text = f.fill(m, ss, missing, room, 0, budget, false)
	}
	left := m.check(f, text)
	if !f.anyWrite(left) && !named {
		return text, left
	}
	// Room for the short lines of every write missing now: the whole facts get what is left.
	shorts := shortWrites(0, f.ledger, missing, f.named)
	if shorts == "" {
		return text, left
	}
	// The room of the facts that outrank the writes (constraints, errors) is theirs whatever
	// the short lines need.
	floor := 0
	if top := f.outranking(missing); len(top) > 0 {
		sec, _ := facts.NewSectionerOf(f.ledger, top, f.count).Fit(room) // facts.Section of them
		floor = min(room, f.count(sec))
	}
	if t := f.fill(m, ss, missing, max(room-f.count(shorts)-1, floor), floor, budget, true); t != "" {
		return t, m.check(f, t)
	}
	return text, left
}

// fill renders the sections with the most important missing facts that fit room, the room
// made smaller while the body is over budget (never below floor). With shorts, the write
// actions still missing after them, and f.named's, follow on a line each (shortWrites), the
// whole facts giving way to them (not those that outrank the writes), then the oldest of
// them: "" when not even the newest fits.
func (f factFit) fill(m *fitMemo, ss *summarySections, missing []int32, room, floor, budget int, shorts bool) string {
	text := f.header + ss.render(nil)
	for tries := 0; shorts || tries < 4; tries++ {
		var groups []facts.Group
		if room > 0 {
			groups, _ = m.sectioner(f, missing).FitGroups(room)
		}
		if !shorts {
			if len(groups) == 0 {
				break
			}
			withFacts := ss.render(groups)
			over := f.count(withFacts) - budget
			if over <= 0 {
				text = f.header + withFacts
				break
			}
			room -= over
			continue
		}
		left := m.check(f, f.header+ss.render(groups))
		for skip := 0; ; skip += 1 + skip/4 { // a long list gives way in larger steps
			s := shortWrites(skip, f.ledger, left, f.named)
			if s == "" {
				return ""
			}
			g := append(slices.Clone(groups), facts.Group{Kind: facts.KindToolCall, Text: s})
			if withFacts := ss.render(g); f.count(withFacts) <= budget {
				return f.header + withFacts
			}
			if room > floor && len(groups) > 0 {
				break // the whole facts below the writes give way first
			}
		}
		room = max(floor, room-max(room/4, 1))
	}
	return text
}

// outranking returns the indexes of the facts of f.ledger at idx that outrank the write
// actions (facts.OutranksWrites).
func (f factFit) outranking(idx []int32) []int32 {
	var out []int32
	for _, k := range idx {
		if facts.OutranksWrites(f.ledger[k]) {
			out = append(out, k)
		}
	}
	return out
}

// unlined counts the write actions of f.ledger at dropped and of f.named that text holds
// neither whole nor on their short line.
func (f factFit) unlined(text string, dropped []int32) int {
	n := 0
	in := func(x *facts.Fact) {
		if facts.IsWrite(*x) && !strings.Contains(text, facts.ShortCall(*x)) {
			n++
		}
	}
	for _, k := range dropped {
		in(&f.ledger[k])
	}
	for i := range f.named {
		in(&f.named[i])
	}
	return n
}

// shortWrites renders the write actions of ledger at idx and of named, each once, on one line
// with what they acted on (facts.ShortCall), in the order they were made, the oldest skip left
// out: "" when none is left. The facts are read where they are: a long list of missing facts
// is not copied for the writes it holds.
func shortWrites(skip int, ledger []facts.Fact, idx []int32, named []facts.Fact) string {
	var ws []*facts.Fact
	seen := map[string]bool{}
	add := func(x *facts.Fact) {
		if facts.IsWrite(*x) && !seen[x.Text] {
			seen[x.Text] = true
			ws = append(ws, x)
		}
	}
	for _, k := range idx {
		add(&ledger[k])
	}
	for i := range named {
		add(&named[i])
	}
	slices.SortStableFunc(ws, func(a, b *facts.Fact) int { return a.Seq - b.Seq })
	if skip >= len(ws) {
		return ""
	}
	var b strings.Builder
	b.WriteString("- Actions (ids and outcome only):")
	for _, x := range ws[skip:] {
		b.WriteString("\n  - ")
		b.WriteString(facts.ShortCall(*x))
	}
	return b.String()
}

// headingOf is the heading of section sec: the prompt's own, else the built-in one.
func (f factFit) headingOf(sec int) string {
	if sec < len(f.headings) && f.headings[sec] != "" {
		return f.headings[sec]
	}
	return transcript.Heading(sec)
}

// missingIndexes returns the indexes in f.ledger of the facts that are neither outside the
// summary nor in text, a summary, read without its header (see summaryBody).
func (f factFit) missingIndexes(text string) []int32 {
	return missingIndexes(f.checker, f.ledger, f.outside, summaryBody(text))
}

// missingFacts returns the facts of ledger that are not in summary and not marked in outside
// (parallel to ledger; nil: none is outside).
func missingFacts(ledger []facts.Fact, outside []bool, summary string) []facts.Fact {
	return checkedMissing(nil, ledger, outside, summary)
}

// checkedMissing is missingFacts by checker, the Checker of ledger (nil: one is made).
func checkedMissing(checker *facts.Checker, ledger []facts.Fact, outside []bool, summary string) []facts.Fact {
	idx := missingIndexes(checker, ledger, outside, summary)
	if len(idx) == 0 {
		return nil
	}
	out := make([]facts.Fact, len(idx)) // a long ledger misses thousands: one allocation
	for i, k := range idx {
		out[i] = ledger[k]
	}
	return out
}

// missingIndexes is checkedMissing as the indexes in ledger of the facts it returns, ascending.
func missingIndexes(checker *facts.Checker, ledger []facts.Fact, outside []bool, summary string) []int32 {
	if checker == nil {
		checker = facts.NewChecker(ledger)
	}
	kept := checker.Kept(summary)
	n := 0
	for i, ok := range kept {
		if kept[i] = ok || outside != nil && outside[i]; !kept[i] {
			n++
		}
	}
	if n == 0 {
		return nil
	}
	out := make([]int32, 0, n)
	for i, ok := range kept {
		if !ok {
			out = append(out, int32(i))
		}
	}
	return out
}

// factTexts returns the exact values of fs, most important first, once each.
func factTexts(fs []facts.Fact) []string {
	sorted := slices.Clone(fs)
	slices.SortStableFunc(sorted, func(a, b facts.Fact) int { return b.Weight - a.Weight })
	out := make([]string, 0, len(sorted))
	seen := make(map[string]bool, len(sorted))
	for _, f := range sorted {
		if !seen[f.Text] {
			seen[f.Text] = true
			out = append(out, f.Text)
		}
	}
	return out
}

// droppedWeight is the weight of the facts of f.ledger at idx (top: of those that outrank
// the write actions only).
func (f factFit) droppedWeight(idx []int32, top bool) int {
	w := 0
	for _, k := range idx {
		if x := &f.ledger[k]; !top || facts.OutranksWrites(*x) {
			w += x.Weight
		}
	}
	return w
}

// cutLines returns the longest run of whole leading lines of text within max tokens.
func cutLines(text string, max int, count func(string) int) string {
	if count(text) <= max {
		return text
	}
	lines := strings.SplitAfter(text, "\n")
	lo, hi := 0, len(lines) // lines[:lo] fits; lines[:hi] does not
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if count(strings.Join(lines[:mid], "")) <= max {
			lo = mid
		} else {
			hi = mid
		}
	}
	return strings.TrimRight(strings.Join(lines[:lo], ""), "\n")
}
