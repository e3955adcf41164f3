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
}

// compose returns the summary text and the facts it leaves out: prose with the missing facts
// appended. When they do not all fit, room is made first by letting the facts use the hard
// budget, then by giving the facts budget ahead of the prose (the prose is cut at line ends,
// and what it loses is looked for again); only then are the least important facts left out
// (facts.Section keeps the most important ones: constraints, errors, tool calls and ids
// first).
func (f factFit) compose(prose string) (string, []facts.Fact) {
	m := &fitMemo{missing: map[string][]facts.Fact{}}
	text, dropped := f.with(m, prose, f.soft)
	if len(dropped) == 0 {
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
		if len(dropped) == 0 {
			return text, nil
		}
		if droppedWeight(dropped) < droppedWeight(bestDropped) {
			best, bestDropped = text, dropped
		}
	}
	return best, bestDropped
}

// fitMemo keeps what the tries of one compose share: the facts check of each text tried, and
// the sections of each list of missing facts (the tries at the soft and the hard budget
// usually miss the same facts, and often make the same text).
type fitMemo struct {
	missing  map[string][]facts.Fact
	sections []memoSection
}

type memoSection struct {
	missing []facts.Fact
	s       *facts.Sectioner
}

func (m *fitMemo) check(f factFit, text string) []facts.Fact {
	got, ok := m.missing[text]
	if !ok {
		got = f.missing(text)
		m.missing[text] = got
	}
	return got
}

func (m *fitMemo) sectioner(missing []facts.Fact, count func(string) int) *facts.Sectioner {
	for _, ms := range m.sections {
		if slices.Equal(ms.missing, missing) {
			return ms.s
		}
	}
	s := facts.NewSectioner(missing, count)
	m.sections = append(m.sections, memoSection{missing, s})
	return s
}

// with puts prose under the summary's sections and adds the facts it misses under the
// section of their kind, within budget tokens for the body (see sections.go).
func (f factFit) with(m *fitMemo, prose string, budget int) (string, []facts.Fact) {
	ss := parseSections(prose, f.headingOf)
	body := ss.render(nil)
	text := f.header + body
	missing := m.check(f, text)
	if len(missing) == 0 {
		return text, nil
	}
	// The headings the facts may open are reserved; the section title the sectioner counts
	// is not written, which leaves a margin for the joins.
	room := budget - f.count(body) - 2 - ss.missingHeadings(f.count)
	for range 4 {
		groups, n := m.sectioner(missing, f.count).FitGroups(room)
		if n == 0 {
			break
		}
		withFacts := ss.render(groups)
		over := f.count(withFacts) - budget
		if over <= 0 {
			text = f.header + withFacts
			break
		}
		room -= over
	}
	return text, m.check(f, text)
}

// headingOf is the heading of section sec: the prompt's own, else the built-in one.
func (f factFit) headingOf(sec int) string {
	if sec < len(f.headings) && f.headings[sec] != "" {
		return f.headings[sec]
	}
	return transcript.Heading(sec)
}

// missing returns the ledger facts that are neither outside the summary nor in text, a
// summary, read without its header (see summaryBody).
func (f factFit) missing(text string) []facts.Fact {
	return checkedMissing(f.checker, f.ledger, f.outside, summaryBody(text))
}

// missingFacts returns the facts of ledger that are not in summary and not marked in outside
// (parallel to ledger; nil: none is outside).
func missingFacts(ledger []facts.Fact, outside []bool, summary string) []facts.Fact {
	return checkedMissing(nil, ledger, outside, summary)
}

// checkedMissing is missingFacts by checker, the Checker of ledger (nil: one is made).
func checkedMissing(checker *facts.Checker, ledger []facts.Fact, outside []bool, summary string) []facts.Fact {
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
	out := make([]facts.Fact, 0, n) // a long ledger misses thousands: one allocation
	for i, ok := range kept {
		if !ok {
			out = append(out, ledger[i])
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

func droppedWeight(fs []facts.Fact) int {
	w := 0
	for _, f := range fs {
		w += f.Weight
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
