package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"os"
	"time"

	msqlite "modernc.org/sqlite"
	sqlite3 "modernc.org/sqlite/lib"
)

//go:generate go tool sqlc generate -f ../sqlc.yaml

// SQLite is the backend of file paths, always linked.
func init() { Register(Files, openSQLite) }

// openSQLite opens the SQLite database at path (OpenHandle calls it for every name that is
// not a URL): OpenSQLiteWith, and the Handle over it.
func openSQLite(ctx context.Context, path string, opt Options) (*Handle, error) {
	sqldb, err := openSQLitePool(ctx, path, sqliteMigrations, opt, true)
	if err != nil {
		return nil, err
	}
	ops := sqliteOps
	// A reader starts no indexer: its searches index what they need (IndexPending).
	ops.noIndexer = opt.ReadOnly || opt.NoIndexer
	h, err := NewHandle(ctx, sqldb, "sqlite", path, ops)
	if err != nil {
		sqldb.Close()
		return nil, err
	}
	return h, nil
}

// sqliteOps are the operations of an SQLite database (see Ops).
var sqliteOps = Ops{
	Prepare:   func(ctx context.Context, sqldb *sql.DB) (Querier, error) { return Prepare(ctx, sqldb) },
	Bind:      func(q Querier, tx *sql.Tx) Querier { return q.(*Queries).WithTx(tx) },
	Write:     nil, // BEGIN IMMEDIATE: the driver's _txlock
	Locked:    nil,
	Read:      &sql.TxOptions{ReadOnly: true},
	OneWriter: true,
	Retryable: sqliteBusy,
	Match:     ftsQuery,

	SearchThreadMessages:  searchThreadMessagesSQLite,
	SearchThreadSummaries: searchThreadSummariesSQLite,
	// New messages are indexed for search after their commit (sqlite_fts.go).
	Pending:    sqlitePending,
	IndexBatch: sqliteIndexBatch,
	Close:      func(q Querier) error { return q.(*Queries).Close() },
	// PASSIVE: it copies what no reader still needs and never waits for a writer or a reader.
	Checkpoint: func(ctx context.Context, sqldb *sql.DB) error {
		_, err := sqldb.ExecContext(ctx, "PRAGMA wal_checkpoint(PASSIVE)")
		return err
	},
	Backup: backupSQLite,
	Vacuum: vacuumSQLite,
	Check:  CheckSQLite,
	Size: func(_ context.Context, _ *sql.DB, path string) (int64, error) {
		var n int64
		for _, p := range []string{path, path + "-wal"} {
			if st, err := os.Stat(p); err == nil {
				n += st.Size()
			}
		}
		return n, nil
	},
}

// ApplicationID is the PRAGMA application_id of every SQLite database this package creates: the four
// ASCII bytes "MCas" read as a big-endian 32-bit integer. SQLite keeps it at offset 68 of the
// file header, where tools such as file(1) read it.
const ApplicationID = 0x4D436173

// ForeignError is returned by an SQLite open for a file that is not a memcascade database: another
// application's SQLite file, or not SQLite at all. The file is left as it was: it is read, never
// written, and no -wal or -shm file is left beside it.
type ForeignError struct {
	Path string
	What string // what the file looks like: "a GeoPackage database", "an SQLite database with tables a, b"
}

func (e *ForeignError) Error() string {
	return fmt.Sprintf("%s is %s, not a memcascade database: refusing to use it (the file is left untouched)", e.Path, e.What)
}

// OpenSQLite opens (creating it with mode 0600 when missing) the SQLite database at path and brings
// its schema up to date. Every pooled connection uses WAL, a busy timeout, foreign keys and
// immediate write transactions. A file that is not a memcascade database is refused with a
// *ForeignError and left byte-identical: a memcascade database carries ApplicationID, and one
// written before the id existed is recognised by its tables (and gets the id here).
func OpenSQLite(ctx context.Context, path string) (*sql.DB, error) {
	return openWithMigrations(ctx, path, sqliteMigrations, Options{})
}

// OpenSQLiteWith is OpenSQLite with options: see Options.
func OpenSQLiteWith(ctx context.Context, path string, opt Options) (*sql.DB, error) {
	return openWithMigrations(ctx, path, sqliteMigrations, opt)
}

// openWithMigrations is OpenSQLiteWith for a build whose migrations are migrations (tests).
func openWithMigrations(ctx context.Context, path string, migrations []string, opt ...Options) (*sql.DB, error) {
	var o Options
	if len(opt) > 0 {
		o = opt[0]
	}
	return openSQLitePool(ctx, path, migrations, o, false)
}

// poolIdle and poolIdleTime bound the idle connections a Handle's pool keeps (see openSQLitePool).
const (
	poolIdle     = 64
	poolIdleTime = 5 * time.Minute
)

// openSQLitePool opens the pool. handled: the pool is a Handle's, whose checkpointer moves the
// write-ahead log into the database (Ops.Checkpoint), so its commits do not; a pool alone
// (OpenSQLite, OpenSQLiteWith) checkpoints in its commits, as SQLite does by default.
func openSQLitePool(ctx context.Context, path string, migrations []string, o Options, handled bool) (*sql.DB, error) {
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
	pragmas := []string{"busy_timeout(10000)", "journal_mode(WAL)", "foreign_keys(1)", "synchronous(NORMAL)"}
	if handled {
		// The log is moved into the database by the handle's checkpointer, not by the commit
		// that fills it.
		pragmas = append(pragmas, "wal_autocheckpoint(0)")
	}
	for _, p := range pragmas {
		q.Add("_pragma", p)
	}
	q.Set("_txlock", "immediate")
	dsn := "file:" + url.PathEscape(path) + "?" + q.Encode()
	sqldb, err := sql.Open("sqlite", dsn)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", path, err)
	}
	if handled {
		// A connection costs about 1.3 ms of CPU to open: its pragmas, the schema parsed on
		// its first statement, and each query prepared again on it. database/sql opens one
		// for every caller that finds none idle, and kept two idle: the 50 first turns of 50
		// agents at once through memctl serve opened about 50 and closed 48 as they came
		// back, each burst. A Handle's pool keeps up to poolIdle, each until it has been
		// idle for poolIdleTime (what a burst opened is closed once the bursts stop).
		sqldb.SetMaxIdleConns(poolIdle)
		sqldb.SetConnMaxIdleTime(poolIdleTime)
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
		err = checkSQLiteVersion(ctx, sqldb, len(migrations))
	} else {
		err = migrateSQLite(ctx, sqldb, migrations)
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

// checkSQLiteVersion refuses a database whose schema is not the one this build reads.
func checkSQLiteVersion(ctx context.Context, sqldb *sql.DB, want int) error {
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
	return SQLiteTx(ctx, sqldb, func(tx *sql.Tx) error {
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

// SQLiteTx runs fn in a write transaction (BEGIN IMMEDIATE) and commits it. When SQLite reports
// the database busy or locked (two writing processes can still meet despite WAL and the busy
// timeout), the whole transaction is retried with a jittered, growing pause until ctx ends. fn
// must therefore be safe to run more than once: it may only write through tx.
func SQLiteTx(ctx context.Context, sqldb *sql.DB, fn func(tx *sql.Tx) error) error {
	return RunTx(ctx, sqldb, nil, sqliteBusy, fn)
}

// sqliteReadTx runs fn in a read-only transaction: one consistent snapshot, no write lock.
func sqliteReadTx(ctx context.Context, sqldb *sql.DB, fn func(tx *sql.Tx) error) error {
	return RunTx(ctx, sqldb, &sql.TxOptions{ReadOnly: true}, sqliteBusy, fn)
}

// sqliteBusy reports whether err is SQLite's SQLITE_BUSY or SQLITE_LOCKED (any extended code).
func sqliteBusy(err error) bool {
	var se *msqlite.Error
	if !errors.As(err, &se) {
		return false
	}
	switch se.Code() & 0xff {
	case sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED:
		return true
	}
	return false
}
