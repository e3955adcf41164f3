package memory_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
)

// otherSpellings returns names that reach the database at name another way: a symlink and a
// ./ path for a file; postgresql:// for postgres://, and the parameters in another order.
func otherSpellings(t *testing.T, name string) []string {
	t.Helper()
	if testdb.Backend() == testdb.SQLite {
		link := filepath.Join(t.TempDir(), "link.db")
		if err := os.Symlink(name, link); err != nil {
			t.Fatal(err)
		}
		rel, err := filepath.Rel(mustGetwd(t), name)
		if err != nil {
			t.Fatal(err)
		}
		return []string{link, "./" + rel, filepath.Dir(name) + "/../" + filepath.Base(filepath.Dir(name)) + "/" + filepath.Base(name)}
	}
	other := "postgresql://" + strings.TrimPrefix(name, "postgres://")
	base, query, _ := strings.Cut(name, "?")
	parts := strings.Split(query, "&")
	for i, j := 0, len(parts)-1; i < j; i, j = i+1, j-1 {
		parts[i], parts[j] = parts[j], parts[i]
	}
	return []string{other, base + "?" + strings.Join(parts, "&")}
}

func mustGetwd(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	return wd
}

// TestCopyOntoItselfAnotherSpelling: a copy of a database onto itself, named another way, is
// refused and changes nothing, also when the database holds no thread but an attempt log and
// cooldowns (which a copy would otherwise append to themselves).
func TestCopyOntoItselfAnotherSpelling(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, threads := range []bool{false, true} {
		src, name := storetest.Open(t)
		if threads {
			copySource(t, src)
		}
		for i := range 3 {
			if _, err := src.DB().Q().InsertAttempt(ctx, db.InsertAttemptParams{Provider: "p", Model: "m", Outcome: "ok", StartedAt: int64(i + 1)}); err != nil {
				t.Fatal(err)
			}
		}
		if err := src.DB().Q().UpsertCooldown(ctx, db.UpsertCooldownParams{Provider: "p", CoolingUntil: 5, ConsecutiveFailures: 1, UpdatedAt: 1}); err != nil {
			t.Fatal(err)
		}
		want := dumpStore(t, src)
		for _, other := range otherSpellings(t, name) {
			dst := openAt(t, other)
			_, err := memory.Copy(ctx, src, dst)
			if !errors.Is(err, memory.ErrCopySame) {
				t.Errorf("threads %v: copy %s onto %s: err %v, want ErrCopySame", threads, db.Display(name), db.Display(other), err)
			}
			sameDump(t, "after a copy onto itself", want, dumpStore(t, src))
		}
	}
}

// TestCopyBetweenSchemasOfOneServer: two schemas of one PostgreSQL database are two
// databases; a copy between them is no copy onto itself.
func TestCopyBetweenSchemasOfOneServer(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	src := openAt(t, testdb.Schema(t, os.Getenv(testdb.Env)))
	copySource(t, src)
	want := dumpStore(t, src)
	dst := openAt(t, testdb.Schema(t, os.Getenv(testdb.Env)))
	if _, err := memory.Copy(ctx, src, dst); err != nil {
		t.Fatal(err)
	}
	sameDump(t, "copy to another schema", want, dumpStore(t, dst))
}
