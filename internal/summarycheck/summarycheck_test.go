package summarycheck

import (
	"strings"
	"testing"

	"github.com/memcascade/memcascade/transcript"
)

func TestSections(t *testing.T) {
	good := "Summary of the earlier conversation (messages 2 to 9):\n\n## Goal and constraints\n- book a flight\n\n## Work done\nsearched\n\n## Key facts\n- IDs: R1"
	got, err := Sections(good)
	if err != nil {
		t.Fatal(err)
	}
	if got[transcript.SectionGoal] != "- book a flight" || !strings.Contains(got[transcript.SectionWork], "searched") || got[transcript.SectionDecisions] != "" {
		t.Fatalf("sections: %q", got)
	}
	for name, bad := range map[string]string{
		"prose":      "Summary of the earlier conversation:\n\nthe conversation went on.",
		"before":     "text first\n## Work done\nx",
		"order":      "## Work done\nx\n## Goal and constraints\ny",
		"twice":      "## Work done\nx\n## Work done\ny",
		"unknown":    "## Work done\nx\n## Summary\ny",
		"no section": "",
	} {
		if _, err := Sections(bad); err == nil {
			t.Errorf("%s: %q accepted", name, bad)
		}
	}
}
