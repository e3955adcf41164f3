// Package dbtest runs the db.Querier conformance suite (conformance_test.go): one test per
// behaviour the store and the cascade rely on, each run on every backend as a subtest
// ("sqlite", "postgres"), through db.Handle and db.Querier only, so that the two engines'
// queries are held to one behaviour. It is for tests only.
package dbtest

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/memcascade/memcascade/db"
	_ "github.com/memcascade/memcascade/db/postgres" // postgres:// URLs
	"github.com/memcascade/memcascade/internal/testdb"
)

// Run runs fn once per backend, as the subtests "sqlite" (a new file) and "postgres" (a schema
// of its own on the server of MEMCASCADE_TEST_POSTGRES; skipped, saying so, when it is unset),
// each with a new, empty database closed when the subtest ends.
func Run(t *testing.T, fn func(t *testing.T, h *db.Handle)) {
	t.Helper()
	backends := []struct {
		name string
		open func(t *testing.T) string
	}{
		{"sqlite", func(t *testing.T) string { return filepath.Join(t.TempDir(), "conformance.db") }},
		{"postgres", func(t *testing.T) string {
			if os.Getenv(testdb.Env) == "" {
				t.Skipf("%s is not set: the conformance suite ran on SQLite only", testdb.Env)
			}
			return testdb.Schema(t, os.Getenv(testdb.Env))
		}},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			h, err := db.OpenHandle(context.Background(), b.open(t), db.Options{})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(func() {
				if err := h.Close(); err != nil {
					t.Error(err)
				}
			})
			if h.Backend != b.name {
				t.Fatalf("opened a %s database, want %s", h.Backend, b.name)
			}
			fn(t, h)
		})
	}
}
