package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestSQLiteOnlyBuild: memctl built with -tags nopostgres links no PostgreSQL driver (the
// desktop build stays its size), the default build does, and the SQLite-only binary refuses a
// postgres:// URL naming what it lacks.
func TestSQLiteOnlyBuild(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("a build of memctl, nothing for the race detector: the run without -short (scripts/test's first) runs it whole")
	}
	for _, tc := range []struct {
		tags string
		want bool
	}{{"nopostgres", false}, {"", true}} {
		out, err := exec.Command("go", "list", "-deps", "-tags", tc.tags, ".").CombinedOutput()
		if err != nil {
			t.Fatalf("go list -tags %q: %v\n%s", tc.tags, err, out)
		}
		if got := strings.Contains(string(out), "github.com/jackc/pgx/v5"); got != tc.want {
			t.Errorf("-tags %q: links pgx = %v, want %v", tc.tags, got, tc.want)
		}
	}
	bin := goBuild(t, "nopostgres", true) // run once: built as the test binary was
	cmd := exec.Command(bin, "--db", "postgres://u:pw@127.0.0.1:1/x", "threads")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 || !strings.Contains(string(out), "no PostgreSQL support") || strings.Contains(string(out), "pw@") {
		t.Errorf("SQLite-only memctl with a postgres:// URL: exit %d, %q", code, out)
	}
}

// goBuild builds memctl with the build tags given into a temporary directory of t and returns
// its path; with race, it builds as the test binary was built (with -race under -race), so the
// packages the test binary compiled are reused from the build cache: under -race a build
// without it compiles every package again (modernc.org/sqlite and its libc included). A test
// that runs the binary at length asks for no race: a binary built with -race runs several
// times slower.
func goBuild(t *testing.T, tags string, race bool) string {
	t.Helper()
	bin := filepath.Join(t.TempDir(), "memctl")
	args := []string{"build", "-o", bin}
	if tags != "" {
		args = append(args, "-tags", tags)
	}
	if race && raceBuild {
		args = append(args, "-race")
	}
	if out, err := exec.Command("go", append(args, ".")...).CombinedOutput(); err != nil {
		t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return bin
}
