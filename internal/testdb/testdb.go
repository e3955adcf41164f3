// Package testdb gives tests a fresh database on each backend: one factory, so that the store,
// compactor and cascade suites run whole on SQLite and on PostgreSQL. It is for tests only.
//
// The package under test must link the PostgreSQL backend in (SQLite is package db's own):
// db/postgres (import _ "github.com/memcascade/memcascade/db/postgres": it registers postgres:// URLs); this package links only pgx's database/sql driver, for Schema. A package's
// TestMain calls Main: the tests run once on SQLite and, when the environment variable
// MEMCASCADE_TEST_POSTGRES holds a PostgreSQL URL, once more on PostgreSQL, in a child process
// of the test binary that runs beside the SQLite run. Name gives
// each test a new database of the backend of the run: a file in its temporary directory, or a
// schema of its own on the server, dropped when the test ends.
package testdb

import (
	"bytes"
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // the database/sql driver "pgx", for the tests' schemas
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

// Main runs the package's tests on SQLite, then on PostgreSQL when Env is set, and exits. The
// PostgreSQL run is a child process of the test binary started at once (the same arguments,
// Environ's variable set), so the two backends' runs go on side by side; its output follows
// this process's own. A fuzzing run (-test.fuzz) runs once, on SQLite; a child process
// (Environ) once, on its parent's backend; with a profile or coverage flag the PostgreSQL run
// is a second run in this process, after the SQLite one.
func Main(m *testing.M) {
	if b := os.Getenv(childEnv); b != "" {
		backend = b
		exit(m.Run())
	}
	flag.Parse()
	url := os.Getenv(Env)
	switch {
	case flagSet("test.fuzz"):
		exit(m.Run())
	case url == "":
		code := m.Run()
		if testing.Verbose() {
			fmt.Printf("testdb: %s is not set: these tests ran on SQLite only\n", Env)
		}
		exit(code)
	case !childSafe():
		code := m.Run()
		if code == 0 {
			backend = Postgres
			fmt.Printf("testdb: the same tests again, on PostgreSQL (%s)\n", Env)
			code = m.Run()
		}
		exit(code)
	}
	var out bytes.Buffer
	child := exec.Command(os.Args[0], childArgs(os.Args[1:])...)
	child.Env = append(os.Environ(), childEnv+"="+Postgres)
	child.Stdout, child.Stderr = &out, &out
	started := child.Start()
	code := m.Run()
	if started != nil {
		fmt.Printf("testdb: the run on PostgreSQL did not start: %v\n", started)
		exit(1)
	}
	err := child.Wait()
	fmt.Printf("testdb: the same tests again, on PostgreSQL (%s), in a process of their own beside these\n", Env)
	os.Stdout.Write(out.Bytes())
	if err != nil {
		fmt.Printf("testdb: the run on PostgreSQL: %v\n", err)
		code = max(code, 1)
	}
	exit(code)
}

// exit removes the templates the tests made (see Template) and exits with code.
func exit(code int) {
	removeTemplates()
	os.Exit(code)
}

// flagSet reports whether the test flag name has a value other than its default.
func flagSet(name string) bool {
	f := flag.Lookup(name)
	return f != nil && f.Value.String() != f.DefValue
}

// childSafe reports whether a child process may run the PostgreSQL run beside this one: no
// flag names a file both would write (profiles, coverage, traces) or asks for a listing.
func childSafe() bool {
	for _, name := range []string{"test.coverprofile", "test.gocoverdir", "test.cpuprofile", "test.memprofile",
		"test.blockprofile", "test.mutexprofile", "test.trace", "test.list"} {
		if flagSet(name) {
			return false
		}
	}
	return true
}

// childArgs is the test binary's arguments for the child process, without -test.testlogfile
// (the log go test reads to cache the result is this process's alone).
func childArgs(args []string) []string {
	var out []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		name := strings.TrimLeft(a, "-")
		switch {
		case name == "test.testlogfile":
			i++ // its value is the next argument
		case strings.HasPrefix(name, "test.testlogfile="):
		default:
			out = append(out, a)
		}
	}
	return out
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
		// Two schemas dropped at once (the tests of one package run in parallel) can deadlock
		// on the catalog; PostgreSQL then aborts one of them (SQLSTATE 40P01), which may run
		// again.
		var err error
		for attempt := 0; attempt < 5; attempt++ {
			if _, err = admin.ExecContext(context.Background(), "DROP SCHEMA "+schema+" CASCADE"); err == nil || !strings.Contains(err.Error(), "40P01") {
				break
			}
			time.Sleep(time.Duration(attempt+1) * 50 * time.Millisecond)
		}
		if err != nil {
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

// SchemaCheck returns the values a schema file's CHECK (column IN (...)) allows, in the
// schema's order: the tests that hold a Go table of a stored enum against both schemas.
func SchemaCheck(t testing.TB, path, column string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`CHECK \(` + regexp.QuoteMeta(column) + ` IN \(([^)]*)\)\)`).FindSubmatch(b)
	if m == nil {
		t.Fatalf("%s: no CHECK on %s", path, column)
	}
	var out []string
	for _, v := range strings.Split(string(m[1]), ",") {
		out = append(out, strings.Trim(strings.TrimSpace(v), "'"))
	}
	return out
}
