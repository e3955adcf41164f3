package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"text/tabwriter"
	"time"
)

// update rewrites the golden files from the current output:
//
//	go test ./cmd/memctl -run TestGolden -update
var update = flag.Bool("update", false, "rewrite cmd/memctl/testdata/golden/*.stdout from the current output")

// goldenStep is one memctl run of TestGolden: its arguments, its expected exit code, and the
// golden file (testdata/golden/NAME.stdout) its normalised stdout must equal.
type goldenStep struct {
	name string
	code int
	args []string
}

// goldenSteps run in order against one database: each sees what the ones before wrote.
// Conversations: t1 and t2 are testdata conversations (the offline extractive summarizer of
// the default config compacts them, so no network is involved).
func goldenSteps() []goldenStep {
	t1 := testdata("conversations/tau_bench_airline_gpt4o_task13_trial2_success.jsonl")
	t2 := testdata("conversations/sweagent_marshmallow1867_function_calling.jsonl")
	return []goldenStep{
		{"import", 0, []string{"import", "t1", t1}},
		{"import-json", 0, []string{"import", "t2", t2, "--json"}},
		{"export", 0, []string{"export", "t2"}},
		{"export-json", 0, []string{"export", "t2", "--json"}},
		{"threads", 0, []string{"threads"}},
		{"threads-json", 0, []string{"threads", "--json"}},
		{"show", 0, []string{"show", "t2"}},
		{"show-json", 0, []string{"show", "t2", "--json"}},
		{"tokens", 0, []string{"tokens", "--model", "gpt-4o", t1}},
		{"tokens-json", 0, []string{"tokens", "--model", "gpt-4o", t1, "--json"}},
		{"search", 0, []string{"search", "reservation"}},
		{"search-json", 0, []string{"search", "reservation", "--limit", "5", "--json"}},
		{"compact-dry-run", 0, []string{"compact", "t1", "--limit", "5000", "--dry-run"}},
		{"compact-dry-run-json", 0, []string{"compact", "t1", "--limit", "5000", "--dry-run", "--json"}},
		{"compact-not-needed", 0, []string{"compact", "t1"}},
		{"compact-not-needed-json", 0, []string{"compact", "t1", "--json"}},
		{"compact", 0, []string{"compact", "t1", "--limit", "5000"}},
		{"compact-json", 0, []string{"compact", "t2", "--limit", "4000", "--json"}},
		{"compact-forced-json", 0, []string{"compact", "t2", "--limit", "3000", "--force", "--json"}},
		{"show-active-compacted", 0, []string{"show", "t1"}},
		{"show-all", 0, []string{"show", "t1", "--all"}},
		{"show-all-json", 0, []string{"show", "t2", "--all", "--json"}},
		{"export-compacted", 0, []string{"export", "t1"}},
		{"export-all", 0, []string{"export", "t1", "--all"}},
		{"search-summary", 0, []string{"search", "reservation", "--thread", "t1", "--limit", "3"}},
		{"reports", 0, []string{"reports"}},
		{"reports-json", 0, []string{"reports", "--json"}},
		{"reports-thread", 0, []string{"reports", "t2"}},
		{"report", 0, []string{"report", "1"}},
		{"report-json", 0, []string{"report", "1", "--json"}},
		{"revert-older", 1, []string{"revert", "2", "--json"}},
		{"revert", 0, []string{"revert", "1"}},
		{"revert-json", 0, []string{"revert", "3", "--json"}},
		{"threads-after", 0, []string{"threads"}},
		{"providers", 0, []string{"providers"}},
		{"providers-json", 0, []string{"providers", "--json"}},
		{"attempts", 0, []string{"attempts"}},
		{"attempts-json", 0, []string{"attempts", "--json"}},
		{"attempts-compaction", 0, []string{"attempts", "--compaction", "1"}},
		{"config", 0, []string{"config"}},
		{"config-json", 0, []string{"config", "--json"}},
		{"set", 0, []string{"set", "t1", "--limit", "8000", "--reserve", "500"}},
		{"set-json", 0, []string{"set", "t2", "--strategy", "summarize", "--ratio", "0.4", "--json"}},
		{"set-show", 0, []string{"set", "t1"}},
		{"set-unset-json", 0, []string{"set", "t1", "--unset", "reserve_tokens", "--json"}},
		{"threads-settings-json", 0, []string{"threads", "--json"}},
		{"check", 0, []string{"check"}},
		{"check-json", 0, []string{"check", "--json"}},
		{"copy", 0, []string{"copy", "m.db", "copy.db"}},
		{"copy-json", 0, []string{"copy", "m.db", "copy-json.db", "--json"}},
		{"prune-dry-run", 0, []string{"prune", "--older-than", "0s", "--dry-run"}},
		{"prune-dry-run-json", 0, []string{"prune", "--older-than", "0s", "--dry-run", "--json"}},
		{"providers-reset", 0, []string{"providers", "reset", "offline"}},
		{"providers-reset-all-json", 0, []string{"providers", "reset", "--all", "--json"}},
		{"delete", 0, []string{"delete", "t2", "--yes"}},
		{"delete-json", 0, []string{"delete", "t1", "--yes", "--json"}},
		{"threads-empty", 0, []string{"threads"}},
		{"threads-empty-json", 0, []string{"threads", "--json"}},
	}
}

var (
	// rfc3339 is a timestamp of JSON output (created_at, started_at, updated_at, ...).
	rfc3339 = regexp.MustCompile(`\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?(Z|[+-]\d\d:\d\d)`)
	// tableTime is a timestamp of human output (timeText): replaced by a placeholder of the
	// same width, so that the columns of a table stay as memctl aligned them.
	tableTime = regexp.MustCompile(`\d{4}-\d\d-\d\d \d\d:\d\d:\d\d`)
	// jsonMs is a measured duration in JSON output.
	jsonMs = regexp.MustCompile(`"duration_ms": \d+`)
	// humanMs is a measured duration in a report's summary line ("..., 2 chunks, 13 ms";
	// "1 chunk, 13 ms").
	humanMs = regexp.MustCompile(`(chunks?), \d+ ms`)
)

// normalise replaces in out what differs from one run to the next: the test's temporary
// directory ($DIR), timestamps of this run (within a day of now: the conversations hold
// timestamps of their own, which stay) and measured durations. Timestamps become
// 0000-00-00T00:00:00Z (JSON) or 0000-00-00 00:00:00 (tables, same width); durations 0.
func normalise(out, dir string) string {
	out = strings.ReplaceAll(out, dir, "$DIR")
	recent := func(layout string) func(string) string {
		return func(s string) string {
			t, err := time.Parse(layout, s)
			if err != nil || time.Since(t).Abs() > 24*time.Hour {
				return s
			}
			if layout == time.RFC3339Nano {
				return "0000-00-00T00:00:00Z"
			}
			return "0000-00-00 00:00:00"
		}
	}
	out = rfc3339.ReplaceAllStringFunc(out, recent(time.RFC3339Nano))
	out = tableTime.ReplaceAllStringFunc(out, recent(time.DateTime))
	out = jsonMs.ReplaceAllString(out, `"duration_ms": 0`)
	out = humanMs.ReplaceAllString(out, "$1, 0 ms")
	return msColumns(out)
}

// columnStart is where a column of a table header starts: after two spaces or more.
var columnStart = regexp.MustCompile(`\S+( \S+)*`)

// msColumns sets the MS cell (a measured duration) of every row of a table whose header has
// an MS column to 0, and aligns the table again as memctl's tables are aligned (tabwriter,
// padding 2): the output memctl prints when every attempt takes 0 ms. A table's rows are the
// lines after its header that keep its indentation; the columns are read at the header's
// offsets (the cells before MS are ASCII: ids, names, outcomes, numbers).
func msColumns(out string) string {
	lines := strings.Split(out, "\n")
	for i := 0; i < len(lines); i++ {
		cols := columnStart.FindAllStringIndex(lines[i], -1)
		ms := slices.IndexFunc(cols, func(c []int) bool { return lines[i][c[0]:c[1]] == "MS" })
		if ms < 0 || ms == len(cols)-1 {
			continue
		}
		indent := cols[0][0]
		end := i + 1
		for end < len(lines) && len(lines[end]) > indent && strings.TrimLeft(lines[end][:indent+1], " ") == lines[end][indent:indent+1] {
			end++
		}
		var b strings.Builder
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		for j := i; j < end; j++ {
			cells := make([]string, len(cols))
			for k, c := range cols {
				from, to := c[0], len(lines[j])
				if k+1 < len(cols) {
					to = min(cols[k+1][0], len(lines[j]))
				}
				if k == 0 {
					from = 0
				}
				if from < to {
					cells[k] = strings.TrimRight(lines[j][from:to], " ")
				}
			}
			if j > i {
				cells[ms] = "0"
			}
			fmt.Fprintln(tw, strings.Join(cells, "\t"))
		}
		tw.Flush()
		table := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
		lines = slices.Concat(lines[:i], table, lines[end:])
		i = end - 1
	}
	return strings.Join(lines, "\n")
}

// TestGolden runs every command, human and --json, against a database built from testdata
// conversations, and compares stdout with testdata/golden/NAME.stdout byte for byte: any
// change of output (a field, a column, a line) fails here, and -update rewrites the files.
func TestGolden(t *testing.T) {
	// Before newMemctl, which changes the working directory.
	goldenDir, err := filepath.Abs(filepath.Join("testdata", "golden"))
	if err != nil {
		t.Fatal(err)
	}
	m := newMemctl(t)
	seen := map[string]bool{}
	for _, st := range goldenSteps() {
		if seen[st.name] {
			t.Fatalf("two steps named %s", st.name)
		}
		seen[st.name] = true
		code, out, errs := m.run(st.args...)
		if code != st.code {
			t.Fatalf("%s: memctl %s: exit %d, want %d: %s", st.name, strings.Join(st.args, " "), code, st.code, errs)
		}
		got := normalise(out, m.dir)
		path := filepath.Join(goldenDir, st.name+".stdout")
		if *update {
			if err := os.MkdirAll(goldenDir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		want, err := os.ReadFile(path)
		if err != nil {
			t.Fatalf("%s: %v (run go test ./cmd/memctl -run TestGolden -update)", st.name, err)
		}
		if got != string(want) {
			t.Errorf("%s: memctl %s: stdout differs from %s:\n--- got\n%s\n--- want\n%s", st.name, strings.Join(st.args, " "), path, got, want)
		}
	}
	// A golden file no step writes is stale.
	files, _ := filepath.Glob(filepath.Join(goldenDir, "*.stdout"))
	for _, f := range files {
		if name := strings.TrimSuffix(filepath.Base(f), ".stdout"); !seen[name] {
			t.Errorf("%s: no step writes it", f)
		}
	}
}
