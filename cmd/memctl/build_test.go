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
	if testing.Short() {
		t.Skip("builds memctl")
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
	bin := filepath.Join(t.TempDir(), "memctl")
	if out, err := exec.Command("go", "build", "-tags", "nopostgres", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("build: %v\n%s", err, out)
	}
	cmd := exec.Command(bin, "--db", "postgres://u:pw@127.0.0.1:1/x", "threads")
	out, err := cmd.CombinedOutput()
	if code := cmd.ProcessState.ExitCode(); err == nil || code != 1 || !strings.Contains(string(out), "no PostgreSQL support") || strings.Contains(string(out), "pw@") {
		t.Errorf("SQLite-only memctl with a postgres:// URL: exit %d, %q", code, out)
	}
}
