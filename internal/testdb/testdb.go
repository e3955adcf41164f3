// Package testdb gives tests a fresh database on each backend: one factory, so that the store,
// compactor and cascade suites run whole on SQLite and on PostgreSQL. It is for tests only.
//
// The package under test must link db/postgres in (it registers postgres:// URLs). A package's
// TestMain calls Main: the tests run once on SQLite, then, when the environment
// variable MEMCASCADE_TEST_POSTGRES holds a PostgreSQL URL, once more on PostgreSQL. Name gives
// each test a new database of the backend of the run: a file in its temporary directory, or a
// schema of its own on the server, dropped when the test ends.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"testing"
)

// Env names the variable that holds the PostgreSQL server's URL.
const Env = "MEMCASCADE_TEST_POSTGRES"

// The backends.
const (
	SQLite   = "sqlite"
	Postgres = "postgres"
)

var backend = SQLite

// Backend returns the backend of the current run.
func Backend() string { return backend }

// childEnv carries the backend of a run to a child test process (see Environ).
const childEnv = "MEMCASCADE_TESTDB_CHILD"

// Environ is the environment for a child process of a test that runs the test binary again:
// the child runs its tests once, on the backend of this run.
func Environ() []string { return append(os.Environ(), childEnv+"="+backend) }

// Main runs the package's tests on SQLite, then on PostgreSQL when Env is set, and exits. A
// fuzzing run (-test.fuzz) runs once, on SQLite; a child process (Environ) once, on its
// parent's backend.
func Main(m *testing.M) {
	if b := os.Getenv(childEnv); b != "" {
		backend = b
		os.Exit(m.Run())
	}
	code := m.Run()
	url := os.Getenv(Env)
	fuzz := flag.Lookup("test.fuzz")
	switch {
	case code != 0:
	case fuzz != nil && fuzz.Value.String() != "":
	case url == "":
		if testing.Verbose() {
			fmt.Printf("testdb: %s is not set: these tests ran on SQLite only\n", Env)
		}
	default:
		backend = Postgres
		fmt.Printf("testdb: the same tests again, on PostgreSQL (%s)\n", Env)
		code = m.Run()
	}
	os.Exit(code)
}

// Name returns the name of a new, empty database for t on the current backend: the path of
// file in a temporary directory of t, or the URL of a schema made for t alone on the server of
// Env (its search_path set), dropped with everything in it when t ends.
func Name(t testing.TB, file string) string {
	t.Helper()
	if backend == SQLite {
		return filepath.Join(t.TempDir(), file)
	}
	return Schema(t, os.Getenv(Env))
}

// Schema makes a schema of its own for t on the server at base and returns base with its
// search_path set to it; the schema is dropped with everything in it when t ends. An empty base
// skips t, naming Env.
func Schema(t testing.TB, base string) string {
	t.Helper()
	if base == "" {
		t.Skipf("%s is not set: no PostgreSQL server to test against (e.g. postgres://postgres@127.0.0.1:5432/test?sslmode=disable)", Env)
	}
	admin, err := sql.Open("pgx", base)
	if err != nil {
		t.Fatal(err)
	}
	u, drop, err := NewSchema(context.Background(), admin, base, "test_")
	if err != nil {
		admin.Close()
		t.Fatalf("the server of %s: %v", Env, err)
	}
	t.Cleanup(func() {
		if err := drop(); err != nil {
			t.Error(err)
		}
		admin.Close()
	})
	return u
}

// NewSchema creates a schema named prefix and random hex digits through admin, a connection to
// the server at base, and returns base with its search_path set to it and a function that
// drops it with everything in it. For tests and benchmarks.
func NewSchema(ctx context.Context, admin *sql.DB, base, prefix string) (string, func() error, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", nil, fmt.Errorf("the server's URL: %w", err)
	}
	var b [6]byte
	rand.Read(b[:])
	schema := prefix + hex.EncodeToString(b[:])
	// schema is the caller's constant prefix and hex digits, never outside text.
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		return "", nil, fmt.Errorf("create schema %s: %w", schema, err)
	}
	drop := func() error {
		if _, err := admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err != nil {
			return fmt.Errorf("drop schema %s: %w", schema, err)
		}
		return nil
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), drop, nil
}

// SQLiteOnly skips t on PostgreSQL: it tests what only an SQLite file has (its bytes, its
// modes, its journal). It ran in the SQLite run.
func SQLiteOnly(t testing.TB, what string) {
	t.Helper()
	if backend != SQLite {
		t.Skipf("SQLite only (%s): ran in the SQLite run", what)
	}
}

// PostgresOnly skips t outside the PostgreSQL run (it tests what only a server has: its
// connections) and returns the URL of a fresh schema for t (see Schema). Without Env it skips,
// naming Env.
func PostgresOnly(t testing.TB, what string) string {
	t.Helper()
	if os.Getenv(Env) == "" {
		t.Skipf("%s is not set: no PostgreSQL server to test %s against", Env, what)
	}
	if backend != Postgres {
		t.Skipf("PostgreSQL only (%s): runs in the PostgreSQL run", what)
	}
	return Schema(t, os.Getenv(Env))
}
