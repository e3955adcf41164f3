package memory_test

import (
	"os/exec"
	"strings"
	"testing"
)

// TestOpenPostgresWithoutDriver: memory links no PostgreSQL driver itself; a program that opens
// a postgres:// URL without importing db/postgres is told the import to add (and the password
// stays out of the error). The test binary links the driver, so the program is a separate one.
func TestOpenPostgresWithoutDriver(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("builds a program")
	}
	deps, err := exec.Command("go", "list", "-deps", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go list -deps: %v\n%s", err, deps)
	}
	for _, p := range []string{"github.com/memcascade/memcascade/db/postgres", "github.com/jackc/pgx/v5"} {
		if strings.Contains(string(deps), p+"\n") {
			t.Errorf("package memory links %s", p)
		}
	}
	out, err := exec.Command("go", "run", "./testdata/nodriver").CombinedOutput()
	if err == nil {
		t.Fatalf("the open without the driver succeeded: %s", out)
	}
	want := `import _ "github.com/memcascade/memcascade/db/postgres"`
	if !strings.Contains(string(out), want) || !strings.Contains(string(out), "no PostgreSQL support") || strings.Contains(string(out), "secret") {
		t.Errorf("open of a postgres:// URL without the driver: %s\nwant it to name %s and not the password", out, want)
	}
}
