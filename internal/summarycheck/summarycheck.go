// Package summarycheck checks that a stored summary has the prompt's sections: every line of
// its body under a known heading, each heading once, in the prompt's order. Tests and the
// life simulation call it on the summaries a compaction stores.
package summarycheck

import (
	"fmt"
	"strings"

	"github.com/memcascade/memcascade/transcript"
)

// Sections returns the body of each section of summary (by transcript section number; ""
// for a section it does not have), or an error naming the first line outside a known
// heading, a heading seen twice or out of order, or a summary with no section at all. The
// summary's first line, "Summary of the earlier conversation ...", is its header and is
// skipped.
func Sections(summary string) ([transcript.NumSections]string, error) {
	var out [transcript.NumSections]string
	var lines [transcript.NumSections][]string
	sec, last, seen := -1, -1, 0
	for i, line := range strings.Split(summary, "\n") {
		t := strings.TrimSpace(line)
		if t == "" || (i == 0 && strings.HasPrefix(t, "Summary of ")) {
			continue
		}
		if s := transcript.SectionOf(t); s >= 0 {
			if s <= last {
				return out, fmt.Errorf("line %d: heading %q after %q", i+1, t, transcript.Heading(last))
			}
			sec, last = s, s
			seen++
			continue
		}
		if sec < 0 {
			return out, fmt.Errorf("line %d: %q is outside any section", i+1, t)
		}
		if strings.HasPrefix(t, "#") {
			return out, fmt.Errorf("line %d: unknown heading %q", i+1, t)
		}
		lines[sec] = append(lines[sec], line)
	}
	if seen == 0 {
		return out, fmt.Errorf("no section in the summary")
	}
	for s := range out {
		out[s] = strings.Join(lines[s], "\n")
	}
	return out, nil
}
