package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// ErrBackupExists is returned by Handle.Backup when its destination already exists: a backup never
// overwrites a file.
var ErrBackupExists = errors.New("backup destination already exists")

// backupSQLite writes a consistent copy of the SQLite database to path with VACUUM INTO: one read
// transaction's snapshot, taken while other connections and processes keep writing. The file
// is created first, mode 0600 and exclusively, so an existing path is refused
// (ErrBackupExists) and the copy is never readable by others; on failure it is removed. path
// reaches SQLite as a bound parameter, never as SQL text.
func backupSQLite(ctx context.Context, sqldb *sql.DB, path string) error {
	if path == "" {
		return errors.New("backup: empty path")
	}
	// An absolute file name: SQLite never reads it as a URI.
	abs, err := filepath.Abs(path)
	if err != nil {
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	f, err := os.OpenFile(abs, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
	if errors.Is(err, os.ErrExist) {
		return fmt.Errorf("%w: %s", ErrBackupExists, path)
	}
	if err != nil {
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	if err := f.Close(); err != nil {
		os.Remove(abs)
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	// VACUUM INTO takes an empty existing file; sqlc's grammar does not take the statement.
	if _, err := sqldb.ExecContext(ctx, "VACUUM INTO ?", abs); err != nil {
		os.Remove(abs)
		return fmt.Errorf("backup to %s: %w", path, err)
	}
	return nil
}

// vacuumSQLite rebuilds the database file, returning the space of deleted rows to the file system,
// and truncates the write-ahead log. It waits for other writers (the busy timeout), and
// retries while the database stays busy, until ctx ends.
func vacuumSQLite(ctx context.Context, sqldb *sql.DB) error {
	err := Retry(ctx, sqliteBusy, func() error {
		_, err := sqldb.ExecContext(ctx, "VACUUM")
		return err
	})
	if err != nil {
		return fmt.Errorf("vacuum: %w", err)
	}
	var busy, logged, done int
	if err := sqldb.QueryRowContext(ctx, "PRAGMA wal_checkpoint(TRUNCATE)").Scan(&busy, &logged, &done); err != nil {
		return fmt.Errorf("vacuum: checkpoint: %w", err)
	}
	return nil
}

// CheckSQLite verifies an SQLite database: SQLite's integrity_check, the foreign keys, and both full-text
// indexes against the text they index. nil means intact.
//
// The checks run on one connection, integrity_check and the foreign keys in one read
// transaction that first searches each full-text index: FTS5 keeps a connection's last view of
// an index's structure, and integrity_check can read it without asking whether another
// connection changed the index since (a search asks). Under appends, searches and the indexer
// at once, a pool connection reported "fts5: corruption found reading blob" in an index that a
// new connection, its own integrity_check and FTS5's integrity-check found sound: in 1 run of
// 10 to 20 of memory's TestAppendSearchConcurrent before, none of 160 after. (A plain FTS5
// table shows the same: its "checksum mismatch" on the connection that last read it before
// another wrote, "ok" after a search on that connection.)
func CheckSQLite(ctx context.Context, sqldb *sql.DB) error {
	conn, err := sqldb.Conn(ctx)
	if err != nil {
		return err
	}
	defer conn.Close()
	if err := checkSnapshot(ctx, conn); err != nil {
		return err
	}
	for _, stmt := range []string{
		"INSERT INTO messages_fts (messages_fts) VALUES ('integrity-check')",
		"INSERT INTO summaries_fts (summaries_fts) VALUES ('integrity-check')",
	} {
		if _, err := conn.ExecContext(ctx, stmt); err != nil {
			return fmt.Errorf("full-text index: %w", err)
		}
	}
	return nil
}

// checkSnapshot runs integrity_check and the foreign key check on conn, in one read
// transaction whose view of each full-text index is the database's (see CheckSQLite).
func checkSnapshot(ctx context.Context, conn *sql.Conn) (err error) {
	if _, err := conn.ExecContext(ctx, "BEGIN DEFERRED"); err != nil {
		return fmt.Errorf("integrity_check: %w", err)
	}
	defer func() {
		if _, rerr := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); rerr != nil && err == nil {
			err = fmt.Errorf("integrity_check: %w", rerr)
		}
	}()
	for _, fts := range []string{"messages_fts", "summaries_fts"} {
		var n int
		q := "SELECT count(*) FROM " + fts + " WHERE " + fts + " MATCH '\"memcascade\"'"
		if err := conn.QueryRowContext(ctx, q).Scan(&n); err != nil {
			return fmt.Errorf("full-text index %s: %w", fts, err)
		}
	}
	rows, err := conn.QueryContext(ctx, "PRAGMA integrity_check")
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
	if err := conn.QueryRowContext(ctx, "SELECT count(*) FROM pragma_foreign_key_check").Scan(&n); err != nil {
		return fmt.Errorf("foreign_key_check: %w", err)
	}
	if n != 0 {
		return fmt.Errorf("foreign_key_check: %d rows refer to nothing", n)
	}
	return nil
}
