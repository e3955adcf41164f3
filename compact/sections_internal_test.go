package compact

import (
	"strings"
	"testing"

	"github.com/memcascade/memcascade/facts"
	"github.com/memcascade/memcascade/transcript"
)

// TestParseSections: prose with no heading goes under Work done; known headings (built-in,
// their variants, one's own prompt's) keep their lines; lines under a heading of the model's
// own go under Work done, the heading as plain text; facts added go under their kind's
// section, the sections in the prompt's order.
func TestParseSections(t *testing.T) {
	h := factFit{headings: []string{"## Objective"}}.headingOf
	got := parseSections("the conversation went on.\n\n## Objective\nbook a flight\n### Next steps\npay\n## Random\nmore prose", h).
		render([]facts.Group{{Kind: facts.KindConstraint, Text: "- C"}, {Kind: facts.KindID, Text: "- IDs: R1"}, {Kind: facts.KindToolCall, Text: "- T"}})
	want := strings.Join([]string{
		"## Objective", "book a flight", "- C", "",
		transcript.Heading(transcript.SectionWork), "the conversation went on.", "", "Random", "more prose", "- T", "",
		transcript.Heading(transcript.SectionNext), "pay", "",
		transcript.Heading(transcript.SectionFacts), "- IDs: R1",
	}, "\n")
	if got != want {
		t.Fatalf("got\n%s\nwant\n%s", got, want)
	}
}
