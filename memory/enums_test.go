package memory_test

import (
	"slices"
	"testing"

	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// TestStatusesMatchSchema: memory.Statuses, the one list of the stored statuses, is what both
// schemas allow (compact's statuses of a compaction that did not run are never stored; its
// test checks the reasons).
func TestStatusesMatchSchema(t *testing.T) {
	var statuses []string
	for _, s := range memory.Statuses {
		statuses = append(statuses, string(s))
	}
	slices.Sort(statuses)
	for _, path := range []string{"../db/schema.sql", "../db/postgres/schema.sql"} {
		if want := sorted(testdb.SchemaCheck(t, path, "status")); !slices.Equal(statuses, want) {
			t.Errorf("allStatuses = %v, %s allows %v", statuses, path, want)
		}
	}
}

func sorted(s []string) []string {
	slices.Sort(s)
	return s
}
