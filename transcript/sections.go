package transcript

import "strings"

// The sections of a summary, in their order. The summarization prompt asks a model for them
// under these headings and the offline summarizer writes them, so a later summary (by either)
// can fold an earlier one section by section.
const (
	SectionGoal = iota
	SectionDecisions
	SectionWork
	SectionNext
	SectionFacts
	NumSections
)

var sectionTitles = [NumSections]string{
	SectionGoal:      "Goal and constraints",
	SectionDecisions: "Decisions",
	SectionWork:      "Work done",
	SectionNext:      "Open tasks and next step",
	SectionFacts:     "Key facts",
}

// Heading is the heading line of section sec ("## Goal and constraints"); it panics when sec
// is not one of the Section constants.
func Heading(sec int) string { return "## " + sectionTitles[sec] }

// SectionOf returns the section a heading line names ("## Work done", "# Key facts"), by the
// first word of its title (goal, decisions, work, open or next) or the word "fact"; -1 when
// the line is not a heading or names none of them.
func SectionOf(line string) int {
	l := strings.ToLower(strings.TrimLeft(line, "# "))
	switch {
	case !strings.HasPrefix(line, "#"):
		return -1
	case strings.HasPrefix(l, "goal"):
		return SectionGoal
	case strings.HasPrefix(l, "decision"):
		return SectionDecisions
	case strings.HasPrefix(l, "work"):
		return SectionWork
	case strings.HasPrefix(l, "open") || strings.HasPrefix(l, "next"):
		return SectionNext
	case strings.Contains(l, "fact"):
		return SectionFacts
	}
	return -1
}
