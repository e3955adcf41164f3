package compact

import (
	"slices"
	"testing"

	"github.com/memcascade/memcascade/internal/testdb"
)

// TestReasonsMatchSchema: allReasons, the one list of the compaction reasons, is what both
// schemas allow in compactions.reason.
func TestReasonsMatchSchema(t *testing.T) {
	reasons := slices.Sorted(slices.Values(allReasons))
	for _, path := range []string{"../db/schema.sql", "../db/postgres/schema.sql"} {
		want := testdb.SchemaCheck(t, path, "reason")
		slices.Sort(want)
		if !slices.Equal(reasons, want) {
			t.Errorf("allReasons = %v, %s allows %v", reasons, path, want)
		}
	}
}
