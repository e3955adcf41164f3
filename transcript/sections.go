package transcript

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
