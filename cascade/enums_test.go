package cascade_test

import (
	"slices"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/internal/testdb"
)

// TestOutcomesMatchSchema: cascade.Outcomes, the one list of attempt outcomes, is what both
// schemas allow in cascade_attempts.outcome.
func TestOutcomesMatchSchema(t *testing.T) {
	t.Parallel()
	var got []string
	for _, o := range cascade.Outcomes {
		got = append(got, string(o))
	}
	for _, path := range []string{"../db/schema.sql", "../db/postgres/schema.sql"} {
		if want := testdb.SchemaCheck(t, path, "outcome"); !slices.Equal(got, want) {
			t.Errorf("Outcomes = %v, %s allows %v", got, path, want)
		}
	}
}

// TestClassesDistinct: the tables of classes and event kinds list each value once.
func TestClassesDistinct(t *testing.T) {
	t.Parallel()
	seen := map[cascade.Class]bool{}
	for _, c := range cascade.Classes {
		if seen[c] || c == "" {
			t.Errorf("class %q listed twice or empty", c)
		}
		seen[c] = true
	}
	kinds := map[cascade.EventKind]bool{}
	for _, k := range cascade.EventKinds {
		if kinds[k] || k == "" {
			t.Errorf("event kind %q listed twice or empty", k)
		}
		kinds[k] = true
	}
}
