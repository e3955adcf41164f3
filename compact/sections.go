package compact

import (
	"strings"

	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/transcript"
)

// The stored summary always has the prompt's sections (transcript.Heading, or the headings
// of one's own prompt), in their order, and no text outside them; a section with nothing in
// it is left out, as the prompt asks.
//
//   - The provider's answer is parsed by those headings. Text outside any known heading (an
//     answer with no headings at all, or lines under a heading of the model's own) goes under
//     "Work done": an unstructured summary narrates what happened in the conversation, which
//     is that section's content, and putting it there never passes it off as the user's
//     goal, a constraint or the open work.
//   - The ledger facts the answer misses go under the section of their kind: the user's
//     constraints under "Goal and constraints", tool calls with their outcome and the errors
//     under "Work done", ids, amounts, dates and the other values under "Key facts".
//
// A re-compaction updates the previous summary section by section: an LLM rung receives it
// as the summary to update (llm.Request.Previous, its own block of the request, not a
// message of the transcript), the offline rung merges its parsed sections (package
// extractive), and the facts it held come back from the stored ledger into the same sections
// here, whatever the provider wrote.

// summarySections is a summary body cut by section.
type summarySections struct {
	heading func(sec int) string
	lines   [transcript.NumSections][]string
}

// parseSections cuts text by the known headings (heading names them; the built-in ones
// and their variants are recognised too, see transcript.SectionOf).
func parseSections(text string, heading func(int) string) *summarySections {
	ss := &summarySections{heading: heading}
	sec := -1
	for line := range strings.SplitSeq(text, "\n") {
		trimmed := strings.TrimSpace(line)
		if s := knownSection(trimmed, heading); s >= 0 {
			sec = s
			continue
		}
		if strings.HasPrefix(trimmed, "#") {
			sec = -1 // a heading of the model's own: what follows is outside the known ones
			trimmed = strings.TrimSpace(strings.TrimLeft(trimmed, "#"))
			line = trimmed
		}
		if trimmed == "" && sec < 0 && len(ss.lines[transcript.SectionWork]) == 0 {
			continue
		}
		s := sec
		if s < 0 {
			s = transcript.SectionWork
		}
		ss.lines[s] = append(ss.lines[s], strings.TrimRight(line, " \t\r"))
	}
	return ss
}

func knownSection(line string, heading func(int) string) int {
	for sec := range transcript.NumSections {
		if line == heading(sec) {
			return sec
		}
	}
	return transcript.SectionOf(line)
}

// sectionOfKind is the section a missing fact of kind k goes under.
func sectionOfKind(k facts.Kind) int {
	switch k {
	case facts.KindConstraint:
		return transcript.SectionGoal
	case facts.KindToolCall, facts.KindError:
		return transcript.SectionWork
	}
	return transcript.SectionFacts
}

// missingHeadings is the size bound of the headings that adding facts could open: those of
// the sections facts go to that the summary does not have yet.
func (ss *summarySections) missingHeadings(count func(string) int) int {
	n := 0
	for _, sec := range []int{transcript.SectionGoal, transcript.SectionWork, transcript.SectionFacts} {
		if !ss.has(sec) {
			n += count(ss.heading(sec)) + 2
		}
	}
	return n
}

func (ss *summarySections) has(sec int) bool {
	for _, l := range ss.lines[sec] {
		if strings.TrimSpace(l) != "" {
			return true
		}
	}
	return false
}

// render writes the sections with groups of facts added under the section of their kind.
func (ss *summarySections) render(groups []facts.Group) string {
	var extra [transcript.NumSections][]string
	for _, g := range groups {
		sec := sectionOfKind(g.Kind)
		extra[sec] = append(extra[sec], g.Text)
	}
	var b strings.Builder
	for sec := range transcript.NumSections {
		body := strings.Trim(strings.Join(ss.lines[sec], "\n"), "\n")
		if strings.TrimSpace(body) == "" {
			body = ""
		}
		if len(extra[sec]) > 0 {
			if body != "" {
				body += "\n"
			}
			body += strings.Join(extra[sec], "\n")
		}
		if body == "" {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(ss.heading(sec))
		b.WriteByte('\n')
		b.WriteString(body)
	}
	return b.String()
}
