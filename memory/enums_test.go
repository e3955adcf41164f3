package memory_test

import (
	"slices"
	"testing"

	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// TestStatusesMatchSchema: memory.Statuses (less those never stored: not_needed, planned,
// skipped, held), the one list of them, is what both schemas allow (compact's test checks the
// reasons).
func TestStatusesMatchSchema(t *testing.T) {
	var statuses []string
	for _, s := range memory.Statuses {
		if memory.StatusStored(s) {
			statuses = append(statuses, string(s))
		}
	}
	slices.Sort(statuses)
	for _, path := range []string{"../db/schema.sql", "../db/postgres/schema.sql"} {
		if want := sorted(testdb.SchemaCheck(t, path, "status")); !slices.Equal(statuses, want) {
			t.Errorf("stored allStatuses = %v, %s allows %v", statuses, path, want)
		}
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
