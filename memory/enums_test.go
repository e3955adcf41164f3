package memory_test

import (
	"slices"
	"testing"

	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// TestStatusesAndReasonsMatchSchema: memory.Statuses (less those never stored: not_needed,
// planned, skipped, held) and memory.Reasons, the one lists of them, are what both schemas allow.
func TestStatusesAndReasonsMatchSchema(t *testing.T) {
	var statuses, reasons []string
	for _, s := range memory.Statuses {
		if memory.StatusStored(s) {
			statuses = append(statuses, string(s))
		}
	}
	for _, r := range memory.Reasons {
		reasons = append(reasons, string(r))
	}
	slices.Sort(statuses)
	slices.Sort(reasons)
	for _, path := range []string{"../db/schema.sql", "../db/postgres/schema.sql"} {
		if want := sorted(testdb.SchemaCheck(t, path, "status")); !slices.Equal(statuses, want) {
			t.Errorf("stored allStatuses = %v, %s allows %v", statuses, path, want)
		}
		if want := sorted(testdb.SchemaCheck(t, path, "reason")); !slices.Equal(reasons, want) {
			t.Errorf("allReasons = %v, %s allows %v", reasons, path, want)
		}
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
