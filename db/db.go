// Package db holds what the store and the cascade use of a database: Handle, an open database
// of either backend, whose Querier (sqlc's interface, compiled from the SQLite queries in
// queries/*.sql into the *.gen.go files) and transactions are all they use; the rows and
// parameters of those queries; the transaction runner both backends use; and the decoding of
// rows shared by several packages (Attempt).
//
// It is also the SQLite backend, a database in one file and the default, always linked: its
// schema (schema.sql, which the migrations in migrations/ build), and the sqlite_*.go files: the
// open with its pragmas, the identification of a file that is not memcascade's, the migrations,
// and the operations a Handle asks of it (backup, vacuum, check, the search query). Its init
// registers file paths (Files) with Register.
//
// The PostgreSQL backend is the subpackage db/postgres, with files of the same names where they
// have the same job (open.go for sqlite_open.go, and so on); it registers its URL schemes with
// Register when a program links it in. With it, this package is the only code that contains
// SQL. It must not import any other package of this module: memory and cascade build on it.
package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"time"
)

// The errors of this package and of the backends' opens.
var (
	// ErrNewerSchema is returned by a backend's open for a database written by a newer version
	// of memcascade.
	ErrNewerSchema = errors.New("database was written by a newer version of memcascade")

	// ErrNoDatabase is returned by an open with NoCreate or ReadOnly when the file is missing or
	// empty, or the PostgreSQL database has no memcascade schema: nothing is created.
	ErrNoDatabase = errors.New("no database")

	// ErrOlderSchema is returned by an open with ReadOnly for a memcascade database written by an
	// older version: reading it needs its migration, which only a writing open runs.
	ErrOlderSchema = errors.New("database was written by an older version of memcascade")

	// ErrUnsupported is returned for an operation the database's backend does not have.
	ErrUnsupported = errors.New("not supported by this database")

	// ErrNoPostgres is the error of opening a postgres:// URL in a program that does not link
	// the PostgreSQL backend: a library program links it with a blank import of package db/postgres;
	// memctl built with -tags nopostgres leaves it out.
	ErrNoPostgres = errors.New(`this program has no PostgreSQL support: link it in with import _ "github.com/memcascade/memcascade/db/postgres" (memctl built with -tags nopostgres leaves it out)`)

	// ErrRetry, returned (or wrapped) by a transaction's function, asks RunTx and Retry to run it
	// again: what it read is no longer so (another writer created the row it found missing).
	ErrRetry = errors.New("run the transaction again")
)

// Options set what an open may do to the file.
type Options struct {
	// NoCreate refuses a missing (or empty) file with ErrNoDatabase instead of creating it. An
	// existing database is still migrated and marked with ApplicationID.
	NoCreate bool
	// ReadOnly opens for reading only: it implies NoCreate, never migrates (an older schema is
	// ErrOlderSchema) and never writes the application id. The handle can still write; the
	// caller promises not to. A search still indexes the messages committed but not indexed
	// yet, if any, before it reads the index (SQLite; see Handle.IndexPending).
	ReadOnly bool
	// NoIndexer starts no goroutine that indexes new messages for search after their commits
	// (SQLite; tests, and tools that index with IndexPending when they choose): a search still
	// indexes them first.
	NoIndexer bool
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
