//go:build heavy

package reliability

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/memory"
)

// memctlPath is the memctl binary TestMain builds; workDir is the directory memctl runs in
// (empty, so no memctl.yaml is found there and the built-in extractive cascade is used).
var memctlPath, workDir string

// helperEnv, when set in the environment, makes the test binary run a helper of the soak
// (writer or compactor) instead of the tests.
const helperEnv = "MEMCASCADE_RELIABILITY_HELPER"

func TestMain(m *testing.M) {
	if mode := os.Getenv(helperEnv); mode != "" {
		os.Exit(runHelper(mode))
	}
	dir, err := os.MkdirTemp("", "memcascade-reliability-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	memctlPath, workDir = filepath.Join(dir, "memctl"), filepath.Join(dir, "cwd")
	if err := os.Mkdir(workDir, 0o755); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	build := exec.Command("go", "build", "-o", memctlPath, "./cmd/memctl")
	build.Dir = ".."
	build.Stdout, build.Stderr = os.Stderr, os.Stderr
	if err := build.Run(); err != nil {
		fmt.Fprintf(os.Stderr, "build memctl: %v\n", err)
		os.RemoveAll(dir)
		os.Exit(1)
	}
	code := m.Run()
	os.RemoveAll(dir)
	os.Exit(code)
}

// cleanEnv is the environment without memctl's own variables and with the per-user
// directories inside the test's work directory, so no user setting leaks in.
func cleanEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		if !strings.HasPrefix(kv, "MEMCTL_") && !strings.HasPrefix(kv, helperEnv+"=") && !strings.HasPrefix(kv, "XDG_") {
			env = append(env, kv)
		}
	}
	return append(env, "XDG_CONFIG_HOME="+filepath.Join(workDir, "xdg-config"), "XDG_DATA_HOME="+filepath.Join(workDir, "xdg-data"))
}

// memctlCmd returns the command running memctl on db.
func memctlCmd(db string, args ...string) *exec.Cmd {
	cmd := exec.Command(memctlPath, append([]string{"--db", db}, args...)...)
	cmd.Dir, cmd.Env = workDir, cleanEnv()
	return cmd
}

// run is the outcome of a memctl run.
type run struct {
	stdout   []byte
	stderr   string
	code     int
	duration time.Duration
}

// memctl runs memctl on db to completion.
func memctl(t testing.TB, db string, args ...string) run {
	t.Helper()
	cmd := memctlCmd(db, args...)
	var out, errb bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errb
	start := time.Now()
	err := cmd.Run()
	r := run{stdout: out.Bytes(), stderr: errb.String(), duration: time.Since(start)}
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		r.code = ee.ExitCode()
	case err != nil:
		t.Fatalf("memctl %s: %v", strings.Join(args, " "), err)
	}
	return r
}

// mustMemctl runs memctl on db and fails the test unless it exits 0.
func mustMemctl(t testing.TB, db string, args ...string) run {
	t.Helper()
	r := memctl(t, db, args...)
	if r.code != 0 {
		t.Fatalf("memctl %s: exit %d: %s", strings.Join(args, " "), r.code, r.stderr)
	}
	if strings.Contains(r.stderr, "SQLITE_BUSY") || strings.Contains(r.stderr, "database is locked") {
		t.Fatalf("memctl %s: a busy error reached the caller: %s", strings.Join(args, " "), r.stderr)
	}
	return r
}

// reports returns the compaction reports of db (`memctl reports --json`), newest first.
func reports(t testing.TB, db string) []memory.Report {
	t.Helper()
	var reps []memory.Report
	if err := json.Unmarshal(mustMemctl(t, db, "reports", "--json", "--limit", "100000").stdout, &reps); err != nil {
		t.Fatalf("memctl reports --json: %v", err)
	}
	return reps
}

// copyDB copies a closed, checkpointed database file (no -wal) to dst, replacing dst and any
// -wal and -shm files beside it.
func copyDB(t testing.TB, src, dst string) {
	t.Helper()
	if _, err := os.Stat(src + "-wal"); err == nil {
		t.Fatalf("copy %s: it has a -wal file (not closed cleanly)", src)
	}
	for _, suffix := range []string{"", "-wal", "-shm"} {
		if err := os.Remove(dst + suffix); err != nil && !errors.Is(err, os.ErrNotExist) {
			t.Fatal(err)
		}
	}
	in, err := os.Open(src)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	out, err := os.OpenFile(dst, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := io.Copy(out, in); err != nil {
		t.Fatal(err)
	}
	if err := out.Close(); err != nil {
		t.Fatal(err)
	}
}

// checkDatabase opens db and checks that SQLite finds it intact: integrity_check, foreign
// keys, and both full-text indexes against their content (db.CheckSQLite).
func checkDatabase(t testing.TB, path string) {
	t.Helper()
	ctx := context.Background()
	sqldb, err := db.OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	if err := db.CheckSQLite(ctx, sqldb); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// envInt reads a positive integer from the environment.
func envInt(t testing.TB, name string, def int) int {
	t.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}
