package memory_test

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/memory"
)

// schemaCheck returns the values a schema's CHECK (column IN (...)) allows, sorted.
func schemaCheck(t *testing.T, path, column string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`CHECK \(` + column + ` IN \(([^)]*)\)\)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no CHECK on %s", path, column)
	}
	var out []string
	for _, v := range strings.Split(string(m[1]), ",") {
		out = append(out, strings.Trim(strings.TrimSpace(v), "'"))
	}
	slices.Sort(out)
	return out
}

// TestStatusesAndReasonsMatchSchema: memory.Statuses (less not_needed and planned, which are
// never stored) and memory.Reasons, the one lists of them, are what both schemas allow.
func TestStatusesAndReasonsMatchSchema(t *testing.T) {
	var statuses, reasons []string
	for _, s := range memory.Statuses {
		if s != memory.StatusNotNeeded && s != memory.StatusPlanned {
			statuses = append(statuses, string(s))
		}
	}
	for _, r := range memory.Reasons {
		reasons = append(reasons, string(r))
	}
	slices.Sort(statuses)
	slices.Sort(reasons)
	for _, path := range []string{"../db/schema.sql", "../db/postgres/schema.sql"} {
		if want := schemaCheck(t, path, "status"); !slices.Equal(statuses, want) {
			t.Errorf("stored Statuses = %v, %s allows %v", statuses, path, want)
		}
		if want := schemaCheck(t, path, "reason"); !slices.Equal(reasons, want) {
			t.Errorf("Reasons = %v, %s allows %v", reasons, path, want)
		}
	}
}
