package db

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/binary"
	"errors"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// foreignDB writes an SQLite database of another application at path, with stmts run on a plain
// connection (rollback journal unless a statement changes it), and closes it.
func foreignDB(t *testing.T, path string, stmts ...string) {
	t.Helper()
	sqldb, err := sql.Open("sqlite", "file:"+url.PathEscape(path))
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	sqldb.SetMaxOpenConns(1)
	for _, s := range stmts {
		if _, err := sqldb.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
}

// walCopy leaves at path a WAL-mode database whose changes are still in its -wal file, with no
// -shm beside it: the files of a database copied while its application had it open.
func walCopy(t *testing.T, path string, stmts ...string) {
	t.Helper()
	src := filepath.Join(t.TempDir(), "src.db")
	sqldb, err := sql.Open("sqlite", "file:"+url.PathEscape(src)+"?_pragma=journal_mode(WAL)&_pragma=wal_autocheckpoint(0)")
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	sqldb.SetMaxOpenConns(1)
	for _, s := range stmts {
		if _, err := sqldb.Exec(s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	for _, suffix := range []string{"", "-wal"} {
		data, err := os.ReadFile(src + suffix)
		if err != nil {
			t.Fatal(err)
		}
		if suffix == "-wal" && len(data) == 0 {
			t.Fatal("setup: the log is empty")
		}
		if err := os.WriteFile(path+suffix, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// fingerprint is the hash of the file and the list of files in its directory.
func fingerprint(t *testing.T, path string) string {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	sum := sha256.Sum256(data)
	return string(sum[:]) + strings.Join(names, "\x00")
}

func headerID(t *testing.T, path string) uint32 {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil || len(data) < 72 {
		t.Fatalf("read header: %v", err)
	}
	return binary.BigEndian.Uint32(data[68:72])
}

// TestNewDatabaseHasApplicationID: a database this package creates says whose it is in its
// header, where file(1) and identify read it.
func TestNewDatabaseHasApplicationID(t *testing.T) {
	path := filepath.Join(t.TempDir(), "m.db")
	sqldb, err := OpenSQLite(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	sqldb.Close()
	if id := headerID(t, path); id != ApplicationID {
		t.Fatalf("application_id 0x%08X, want 0x%08X", id, ApplicationID)
	}
	if got := string(binary.BigEndian.AppendUint32(nil, ApplicationID)); got != "MCas" {
		t.Fatalf("the id spells %q, documented as \"MCas\"", got)
	}
}

// TestForeignFilesRefusedUntouched: another application's file is refused whatever the open
// mode, with what it looks like, and left byte-identical with no -wal, -shm or -journal beside it.
func TestForeignFilesRefusedUntouched(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		make func(t *testing.T, path string)
		says string
	}{
		{"tables and no id", func(t *testing.T, p string) {
			foreignDB(t, p, "CREATE TABLE notes (id INTEGER PRIMARY KEY, body TEXT)", "INSERT INTO notes (body) VALUES ('mine')")
		}, "an SQLite database with tables notes"},
		{"wal mode, tables and no id", func(t *testing.T, p string) {
			foreignDB(t, p, "PRAGMA journal_mode=WAL", "CREATE TABLE bookmarks (url TEXT)", "CREATE TABLE visits (at INTEGER)")
		}, "tables bookmarks, visits"},
		{"wal mode, its log kept and no -shm (tables only in the log)", func(t *testing.T, p string) {
			walCopy(t, p, "CREATE TABLE bookmarks (url TEXT)")
		}, "write-ahead log"},
		{"a chat app's threads and messages", func(t *testing.T, p string) {
			foreignDB(t, p, "PRAGMA user_version=3", "CREATE TABLE threads (id TEXT)", "CREATE TABLE messages (body TEXT)")
		}, "tables messages, threads"},
		{"GeoPackage", func(t *testing.T, p string) {
			foreignDB(t, p, "PRAGMA application_id=1196444487", "CREATE TABLE gpkg_contents (table_name TEXT)")
		}, "GeoPackage"},
		{"unknown id", func(t *testing.T, p string) {
			foreignDB(t, p, "PRAGMA application_id=305419896")
		}, "application_id 0x12345678"},
		{"printable unknown id", func(t *testing.T, p string) {
			foreignDB(t, p, "PRAGMA application_id=1481923159", "CREATE TABLE t (x)") // "XTZW"
		}, `"XTZW"`},
		{"schema version only", func(t *testing.T, p string) {
			foreignDB(t, p, "PRAGMA user_version=7")
		}, "no tables"},
		{"not SQLite", func(t *testing.T, p string) {
			os.WriteFile(p, []byte("threads,messages\n1,2\n"), 0o644)
		}, "not an SQLite database"},
		{"short file", func(t *testing.T, p string) {
			os.WriteFile(p, []byte("SQLite format 3\x00"), 0o644)
		}, "not an SQLite database"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "other.db")
			tc.make(t, path)
			before := fingerprint(t, path)
			for _, opt := range []Options{{}, {NoCreate: true}, {ReadOnly: true}} {
				_, err := OpenSQLiteWith(ctx, path, opt)
				var fe *ForeignError
				if !errors.As(err, &fe) || !strings.Contains(err.Error(), tc.says) || !strings.Contains(err.Error(), path) {
					t.Fatalf("%+v: got %v, want a ForeignError saying %q", opt, err, tc.says)
				}
				if after := fingerprint(t, path); after != before {
					t.Fatalf("%+v: the file or its directory changed", opt)
				}
			}
		})
	}
}

// TestOlderDatabaseWithoutID: a memcascade database created before the application id existed
// is read as it is by a read-only open, and gets the id at the next writing open.
func TestOlderDatabaseWithoutID(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	sqldb, err := OpenSQLite(ctx, path)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := sqldb.Exec("PRAGMA application_id = 0"); err != nil {
		t.Fatal(err)
	}
	sqldb.Close()
	if id := headerID(t, path); id != 0 {
		t.Fatalf("setup: application_id 0x%08X", id)
	}
	ro, err := OpenSQLiteWith(ctx, path, Options{ReadOnly: true})
	if err != nil {
		t.Fatalf("read-only open of an older memcascade database: %v", err)
	}
	if _, err := New(ro).ListThreads(ctx, ""); err != nil {
		t.Fatal(err)
	}
	ro.Close()
	if id := headerID(t, path); id != 0 {
		t.Fatal("a read-only open wrote the application id")
	}
	rw, err := OpenSQLiteWith(ctx, path, Options{NoCreate: true})
	if err != nil {
		t.Fatal(err)
	}
	rw.Close()
	if id := headerID(t, path); id != ApplicationID {
		t.Fatalf("after a writing open: application_id 0x%08X, want 0x%08X", id, ApplicationID)
	}
}

// TestNoCreate: an open that may not create leaves a missing path missing and an empty file
// as it is.
func TestNoCreate(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	path := filepath.Join(dir, "m.db")
	for _, opt := range []Options{{NoCreate: true}, {ReadOnly: true}} {
		if _, err := OpenSQLiteWith(ctx, path, opt); !errors.Is(err, ErrNoDatabase) || err.Error() != "no database at "+path {
			t.Fatalf("%+v: got %v, want \"no database at %s\"", opt, err, path)
		}
		if entries, _ := os.ReadDir(dir); len(entries) != 0 {
			t.Fatalf("%+v: the open created %s", opt, entries[0].Name())
		}
	}
	os.WriteFile(path, nil, 0o600)
	if _, err := OpenSQLiteWith(ctx, path, Options{ReadOnly: true}); !errors.Is(err, ErrNoDatabase) {
		t.Fatalf("empty file: got %v, want ErrNoDatabase", err)
	}
	if st, _ := os.Stat(path); st.Size() != 0 {
		t.Fatal("a read-only open wrote to an empty file")
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatal("a read-only open left files beside an empty one")
	}
}

// TestReadOnlyRefusesOlderSchema: a read-only open never migrates; it says a writing command
// upgrades the database.
func TestReadOnlyRefusesOlderSchema(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "m.db")
	v1, err := openWithMigrations(ctx, path, sqliteMigrations)
	if err != nil {
		t.Fatal(err)
	}
	v1.Close()
	v2 := append(sqliteMigrations[:len(sqliteMigrations):len(sqliteMigrations)], "CREATE TABLE notes (id INTEGER PRIMARY KEY) STRICT;")
	_, err = openWithMigrations(ctx, path, v2, Options{ReadOnly: true})
	if !errors.Is(err, ErrOlderSchema) || !strings.Contains(err.Error(), "a command that writes upgrades it") {
		t.Fatalf("got %v, want ErrOlderSchema", err)
	}
	sqldb, err := openWithMigrations(ctx, path, sqliteMigrations, Options{ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer sqldb.Close()
	var version int
	sqldb.QueryRow("PRAGMA user_version").Scan(&version)
	if version != len(sqliteMigrations) {
		t.Fatalf("user_version %d after a refused read-only open, want %d", version, len(sqliteMigrations))
	}
}
