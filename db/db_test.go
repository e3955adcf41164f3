package db

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
)

// TestMigrateOlderDatabase: a database written at version 1 is brought to version 2 at open;
// one written by a newer version is refused.
func TestMigrateOlderDatabase(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	v1, err := open(ctx, path, Migrations)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := New(v1).ListThreads(ctx, ""); err != nil {
		t.Fatal(err)
	}
	v1.Close()

	v2 := append(Migrations[:len(Migrations):len(Migrations)], "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT NOT NULL) STRICT;")
	sqldb, err := open(ctx, path, v2)
	if err != nil {
		t.Fatalf("migrate to version %d: %v", len(v2), err)
	}
	var version int
	if err := sqldb.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil || version != len(v2) {
		t.Fatalf("user_version %d (%v), want %d", version, err, len(v2))
	}
	if _, err := sqldb.ExecContext(ctx, "INSERT INTO notes (body) VALUES ('migrated')"); err != nil {
		t.Fatalf("the new table is missing: %v", err)
	}
	sqldb.Close()

	// Opened again by the older build: refused, and the file is left as it was.
	if _, err := open(ctx, path, Migrations); !errors.Is(err, ErrNewerSchema) {
		t.Fatalf("got %v, want ErrNewerSchema", err)
	}
	again, err := open(ctx, path, v2)
	if err != nil {
		t.Fatal(err)
	}
	defer again.Close()
	var n int
	if err := again.QueryRowContext(ctx, "SELECT count(*) FROM notes").Scan(&n); err != nil || n != 1 {
		t.Fatalf("notes: %d, %v", n, err)
	}
}

// TestMigrationIsAtomic: a migration that fails leaves the database at its old version.
func TestMigrationIsAtomic(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	v1, err := open(ctx, path, Migrations)
	if err != nil {
		t.Fatal(err)
	}
	v1.Close()
	bad := append(Migrations[:len(Migrations):len(Migrations)], "CREATE TABLE half (id INTEGER PRIMARY KEY); SELECT nonsense FROM nowhere;")
	if _, err := open(ctx, path, bad); err == nil {
		t.Fatal("a failing migration was applied")
	}
	sqldb, err := open(ctx, path, Migrations)
	if err != nil {
		t.Fatalf("the database is no longer at version %d: %v", len(Migrations), err)
	}
	defer sqldb.Close()
	var n int
	sqldb.QueryRowContext(ctx, "SELECT count(*) FROM sqlite_schema WHERE name = 'half'").Scan(&n)
	if n != 0 {
		t.Fatal("a failed migration left a table behind")
	}
}
