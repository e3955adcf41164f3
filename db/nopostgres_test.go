package db

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
)

// TestOpenPostgresUnlinked: package db links no PostgreSQL backend; a postgres:// URL opened
// without it is ErrNoPostgres, naming the import that links it, the database without its
// password; another scheme is refused naming it.
func TestOpenPostgresUnlinked(t *testing.T) {
	for _, u := range []string{"postgres://u:secret@127.0.0.1:1/x", "postgresql://u:secret@127.0.0.1:1/x"} {
		_, err := OpenHandle(context.Background(), u, Options{})
		if !errors.Is(err, ErrNoPostgres) || !strings.Contains(err.Error(), `import _ "github.com/memcascade/memcascade/db/postgres"`) ||
			!strings.Contains(err.Error(), "127.0.0.1:1/x") || strings.Contains(err.Error(), "secret") {
			t.Errorf("OpenHandle(%s): %v", u, err)
		}
	}
	if _, err := OpenHandle(context.Background(), "mysql://h/x", Options{}); err == nil || !strings.Contains(err.Error(), `"mysql"`) {
		t.Errorf("OpenHandle(mysql://...): %v", err)
	}
}

// TestOpenFileSQLite: a file path is always opened by the SQLite backend, which is this
// package's own: no import links it in.
func TestOpenFileSQLite(t *testing.T) {
	h, err := OpenHandle(context.Background(), filepath.Join(t.TempDir(), "m.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer h.Close()
	if h.Backend != "sqlite" {
		t.Errorf("OpenHandle of a file path: backend %q, want sqlite", h.Backend)
	}
}
