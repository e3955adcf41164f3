// Package db holds the SQLite schema, the queries (db/queries/*.sql, compiled to Go by sqlc into
// the *.gen.go files) and the few functions that open a database and run transactions, and
// Handle: an open database of either backend, SQLite or PostgreSQL (package db/postgres, which
// registers its URLs here). With db/postgres it is the only package that contains SQL.
//
// It owns the schema, its migrations, the identification of a database file and the decoding of
// rows shared by several packages (Attempt). It must not import any other package of this
// module: memory and cascade build on it.
package db

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"math/rand/v2"
	"net/url"
	"os"
	"slices"
	"strings"
	"time"

	"modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:generate go tool sqlc generate -f ../sqlc.yaml

//go:embed migrations/*.sql
var migrationFiles embed.FS

// Migrations upgrade a database one version at a time: Migrations[i] takes a database from
// version i to version i+1 (PRAGMA user_version). They are the files db/migrations/NNNN.sql in
// order; a new database runs them all. schema.sql is the schema they build, written whole for
// sqlc (TestSchemaMatchesMigrations checks that the two agree).
var Migrations = loadMigrations()

func loadMigrations() []string {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, name := range names {
		if want := fmt.Sprintf("migrations/%04d.sql", i+1); name != want {
			panic(fmt.Sprintf("db: migration %s out of sequence, want %s", name, want))
		}
		b, err := migrationFiles.ReadFile(name)
		if err != nil {
			panic(err)
		}
		out[i] = string(b)
	}
	return out
}

// Version is the schema version this build writes.
var Version = len(Migrations)

// ErrNewerSchema is returned by Open for a database written by a newer version of memcascade.
var ErrNewerSchema = errors.New("database was written by a newer version of memcascade")

// ErrNoDatabase is returned by OpenWith with NoCreate or ReadOnly when the file is missing or
// empty: nothing is created.
var ErrNoDatabase = errors.New("no database")

// ErrOlderSchema is returned by OpenWith with ReadOnly for a memcascade database written by an
// older version: reading it needs its migration, which only a writing open runs.
var ErrOlderSchema = errors.New("database was written by an older version of memcascade")

// ApplicationID is the PRAGMA application_id of every database this package creates: the four
// ASCII bytes "MCas" read as a big-endian 32-bit integer. SQLite keeps it at offset 68 of the
// file header, where tools such as file(1) read it.
const ApplicationID = 0x4D436173

// ForeignError is returned by Open for a file that is not a memcascade database: another
// application's SQLite file, or not SQLite at all. The file is left as it was: it is read, never
// written, and no -wal or -shm file is left beside it.
type ForeignError struct {
	Path string
	What string // what the file looks like: "a GeoPackage database", "an SQLite database with tables a, b"
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s is %s, not a memcascade database: refusing to use it (the file is left untouched)", e.Path, e.What)
}

// Options set what an open may do to the file.
type Options struct {
	// NoCreate refuses a missing (or empty) file with ErrNoDatabase instead of creating it. An
	// existing database is still migrated and marked with ApplicationID.
	NoCreate bool
	// ReadOnly opens for reading only: it implies NoCreate, never migrates (an older schema is
	// ErrOlderSchema) and never writes the application id. The handle can still write; the
	// caller promises not to.
	ReadOnly bool
}

// Open opens (creating it with mode 0600 when missing) the SQLite database at path and brings
// its schema up to date. Every pooled connection uses WAL, a busy timeout, foreign keys and
// immediate write transactions. A file that is not a memcascade database is refused with a
// *ForeignError and left byte-identical: a memcascade database carries ApplicationID, and one
// written before the id existed is recognised by its tables (and gets the id here).
func Open(ctx context.Context, path string) (*sql.DB, error) {
	return open(ctx, path, Migrations, Options{})
}

// OpenWith is Open with options: see Options.
func OpenWith(ctx context.Context, path string, opt Options) (*sql.DB, error) {
	return open(ctx, path, Migrations, opt)
}

func open(ctx context.Context, path string, migrations []string, opt ...Options) (*sql.DB, error) {
	var o Options
	if len(opt) > 0 {
		o = opt[0]
	}
	if o.ReadOnly {
		o.NoCreate = true
	}
	if path == "" {
		return nil, errors.New("open database: empty path")
	}
	state, err := identify(ctx, path)
	if err != nil {
		return nil, err
	}
	switch state {
	case fileMissing, fileEmpty:
		if o.NoCreate {
			return nil, fmt.Errorf("%w at %s", ErrNoDatabase, path)
		}
		if err := createFile(path); err != nil {
			return nil, err
		}
	}
	q := url.Values{}
	for _, p := range []string{"busy_timeout(10000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)"} {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	dsn := "file:" + url.PathEscape(path) + "?" + q.Encode()
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	var mode string
	if err := sqldb.QueryRowContext(ctx, "PRAGMA journal_mode").Scan(&mode); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if mode != "wal" {
		sqldb.Close()
		return nil, fmt.Errorf("open database %s: journal mode is %q, want wal", path, mode)
	}
	if o.ReadOnly {
		err = checkVersion(ctx, sqldb, len(migrations))
	} else {
		err = migrate(ctx, sqldb, migrations)
		if err == nil {
			err = markOwn(ctx, sqldb)
		}
	}
	if err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	return sqldb, nil
}

// checkVersion refuses a database whose schema is not the one this build reads.
func checkVersion(ctx context.Context, sqldb *sql.DB, want int) error {
	var version int
	if err := sqldb.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
		return err
	}
	switch {
	case version > want:
		return fmt.Errorf("%w (schema version %d, this build knows %d)", ErrNewerSchema, version, want)
	case version < want:
		return fmt.Errorf("%w (schema version %d, this build reads %d): a command that writes upgrades it", ErrOlderSchema, version, want)
	}
	return nil
}

// markOwn gives a database the application id: a new one, or one created before the id existed.
func markOwn(ctx context.Context, sqldb *sql.DB) error {
	var id int64
	if err := sqldb.QueryRowContext(ctx, "PRAGMA application_id").Scan(&id); err != nil {
		return err
	}
	if id == ApplicationID {
		return nil
	}
	return WithTx(ctx, sqldb, func(tx *sql.Tx) error {
		// PRAGMA takes no parameters; the value is a constant.
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA application_id = %d", ApplicationID))
		return err
	})
}

// createFile creates the database file with mode 0600 so SQLite never creates it with the
// process umask. SQLite gives its -wal and -shm files the same mode.
func createFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("create database: %w", err)
	}
	return f.Close()
}

// migrate brings the schema up to date. A database already up to date is only read: taking
// the write lock at every open would make every reader wait for any long write (an import)
// in another process.
func migrate(ctx context.Context, sqldb *sql.DB, migrations []string) error {
	var current int
	err := ReadTx(ctx, sqldb, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current)
	})
	if err != nil {
		return err
	}
	if current == len(migrations) {
		return nil
	}
	// Read again under the write lock: another process may have migrated meanwhile.
	return WithTx(ctx, sqldb, func(tx *sql.Tx) error {
		var version int
		if err := tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&version); err != nil {
			return err
		}
		if version > len(migrations) {
			return fmt.Errorf("%w (schema version %d, this build knows %d)", ErrNewerSchema, version, len(migrations))
		}
		for v := version; v < len(migrations); v++ {
			if _, err := tx.ExecContext(ctx, migrations[v]); err != nil {
				return fmt.Errorf("migrate to schema version %d: %w", v+1, err)
			}
		}
		if version == len(migrations) {
			return nil
		}
		// PRAGMA takes no parameters; the value is an int this code computed.
		_, err := tx.ExecContext(ctx, fmt.Sprintf("PRAGMA user_version = %d", len(migrations)))
		return err
	})
}

// WithTx runs fn in a write transaction (BEGIN IMMEDIATE) and commits it. When SQLite reports
// the database busy or locked (two writing processes can still meet despite WAL and the busy
// timeout), the whole transaction is retried with a jittered, growing pause until ctx ends. fn
// must therefore be safe to run more than once: it may only write through tx.
func WithTx(ctx context.Context, sqldb *sql.DB, fn func(tx *sql.Tx) error) error {
	return RunTx(ctx, sqldb, nil, IsBusy, fn)
}

// ReadTx runs fn in a read-only transaction: one consistent snapshot, no write lock.
func ReadTx(ctx context.Context, sqldb *sql.DB, fn func(tx *sql.Tx) error) error {
	return RunTx(ctx, sqldb, &sql.TxOptions{ReadOnly: true}, IsBusy, fn)
}

// RunTx runs fn in a transaction begun with opts and commits it. When the transaction fails
// with an error retryable says may pass if run again (SQLite busy, a PostgreSQL serialization
// failure), the whole transaction is run again with a jittered, growing pause until ctx ends;
// fn must therefore only write through tx. Both backends' WithTx and ReadTx are this.
func RunTx(ctx context.Context, sqldb *sql.DB, opts *sql.TxOptions, retryable func(error) bool, fn func(tx *sql.Tx) error) error {
	return Retry(ctx, retryable, func() error {
		tx, err := sqldb.BeginTx(ctx, opts)
		if err != nil {
			return err
		}
		defer tx.Rollback()
		if err := fn(tx); err != nil {
			return err
		}
		if err := tx.Commit(); err != nil {
			return &CommitError{Err: err}
		}
		return nil
	})
}

// CommitError is the error of a transaction's COMMIT (RunTx): when the connection was lost
// during it, the server may have committed the transaction or not.
type CommitError struct{ Err error }

func (e *CommitError) Error() string { return "commit: " + e.Err.Error() }
func (e *CommitError) Unwrap() error { return e.Err }

// ErrRetry, returned (or wrapped) by a transaction's function, asks RunTx and Retry to run it
// again: what it read is no longer so (another writer created the row it found missing).
var ErrRetry = errors.New("run the transaction again")

// Retry runs fn until it succeeds, fails with an error retryable does not accept (ErrRetry is
// always accepted), or ctx ends,
// pausing between runs (jittered, from 5 ms doubling up to 500 ms).
func Retry(ctx context.Context, retryable func(error) bool, fn func() error) error {
	pause := 5 * time.Millisecond
	for {
		err := fn()
		if err == nil || !(retryable(err) || errors.Is(err, ErrRetry)) {
			return err
		}
		wait := pause/2 + rand.N(pause)
		select {
		case <-ctx.Done():
			return fmt.Errorf("%w (retried while it failed: %v)", ctx.Err(), err)
		case <-time.After(wait):
		}
		pause = min(pause*2, 500*time.Millisecond)
	}
}

// Check verifies a database: SQLite's integrity_check, the foreign keys, and both full-text
// indexes against the text they index. nil means intact.
func Check(ctx context.Context, sqldb *sql.DB) error {
	rows, err := sqldb.QueryContext(ctx, "PRAGMA integrity_check")
	if err != nil {
		return fmt.Errorf("integrity_check: %w", err)
	}
	var problems []string
	for rows.Next() {
		var s string
		if err := rows.Scan(&s); err != nil {
			rows.Close()
			return err
		}
		if s != "ok" {
			problems = append(problems, s)
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	if len(problems) > 0 {
		return fmt.Errorf("integrity_check: %s", strings.Join(problems, "; "))
	}
	var n int
	if err := sqldb.QueryRowContext(ctx, "SELECT count(*) FROM pragma_foreign_key_check").Scan(&n); err != nil {
		return fmt.Errorf("foreign_key_check: %w", err)
	}
	if n != 0 {
		return fmt.Errorf("foreign_key_check: %d rows refer to nothing", n)
	}
	for _, stmt := range []string{
		"INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')",
		"INSERT INTO summaries_fts (summaries_fts) VALUES ('integrity-check')",
	} {
		if _, err := sqldb.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("full-text index: %w", err)
		}
	}
	return nil
}

// IsBusy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED (any extended code).
func IsBusy(err error) bool {
	var se *sqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}
