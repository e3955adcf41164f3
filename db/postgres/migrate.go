// Package pg holds the PostgreSQL schema (schema.sql), its queries (queries/*.sql, compiled to
// Go by sqlc into the *.gen.go files, with the same names, parameters and results as package
// db's where PostgreSQL allows) and the functions that open a database and run transactions.
// It is the PostgreSQL side of package db, whose transaction runner it shares; it imports no
// other package of this module. The driver is pgx through database/sql.
package pg

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the database/sql driver "pgx"
	"github.com/memcascade/memcascade/db"
)

//go:generate go tool sqlc generate -f ../../sqlc.yaml

//go:embed schema.sql
var schemaSQL string

// Migrations upgrade a database one version at a time: Migrations[i] takes a database from
// version i to version i+1 (the row of schema_version). Version 1 is schema.sql whole; when a
// version 2 comes, schema.sql stays the whole schema for sqlc and the steps live beside it.
var Migrations = []string{schemaSQL}

// Version is the schema version this build writes.
var Version = len(Migrations)

// ErrNewerSchema is returned by Open for a database written by a newer version of memcascade.
var ErrNewerSchema = errors.New("database was written by a newer version of memcascade")

// migrateLock is the key of the transaction-scoped advisory lock that serializes migrations of
// one database: the four ASCII bytes "MCas", as db.ApplicationID.
const migrateLock = 0x4D436173

// IsURL reports whether name is a PostgreSQL connection URL (postgres:// or postgresql://)
// rather than the path of an SQLite file.
func IsURL(name string) bool {
	lower := strings.ToLower(name)
	return strings.HasPrefix(lower, "postgres://") || strings.HasPrefix(lower, "postgresql://")
}

// Open connects to the PostgreSQL database at rawURL (postgres://... or postgresql://...; its
// query parameters are pgx's, search_path among them) and brings its schema up to date in one
// transaction. A database written by a newer version is refused with ErrNewerSchema. Errors
// name the host and database, never the password.
func Open(ctx context.Context, rawURL string) (*sql.DB, error) {
	if !IsURL(rawURL) {
		return nil, errors.New("open database: not a PostgreSQL URL (want postgres://... or postgresql://...)")
	}
	where := describe(rawURL)
	sqldb, err := sql.Open("pgx", rawURL)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", where, err)
	}
	if err := sqldb.PingContext(ctx); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open database %s: %w", where, err)
	}
	if err := migrate(ctx, sqldb, Migrations); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open database %s: %w", where, err)
	}
	return sqldb, nil
}

// describe names a database URL for errors: host, port and database, without user or password.
func describe(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable PostgreSQL URL)"
	}
	return u.Scheme + "://" + u.Host + u.Path
}

// migrate brings the schema up to date. A database already up to date is only read. Otherwise
// every step runs in one transaction under an advisory lock, so two hosts opening a new
// database at once apply the schema once, and a failed step leaves nothing behind.
func migrate(ctx context.Context, sqldb *sql.DB, migrations []string) error {
	current, err := readVersion(ctx, sqldb)
	if err != nil {
		return err
	}
	if current > len(migrations) {
		return fmt.Errorf("%w (schema version %d, this build knows %d)", ErrNewerSchema, current, len(migrations))
	}
	if current == len(migrations) {
		return nil
	}
	return WithTx(ctx, sqldb, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", migrateLock); err != nil {
			return err
		}
		// A one-row table: the boolean key admits the single row true.
		if _, err := tx.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_version (
    one     BOOLEAN NOT NULL PRIMARY KEY DEFAULT true CHECK (one),
    version BIGINT  NOT NULL
)`); err != nil {
			return err
		}
		// Read again under the lock: another host may have migrated meanwhile.
		var version int
		err := tx.QueryRowContext(ctx, "SELECT version FROM schema_version").Scan(&version)
		if errors.Is(err, sql.ErrNoRows) {
			version = 0
		} else if err != nil {
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
		_, err = tx.ExecContext(ctx, `INSERT INTO schema_version (one, version) VALUES (true, $1)
ON CONFLICT (one) DO UPDATE SET version = excluded.version`, len(migrations))
		return err
	})
}

// readVersion reads the schema version: 0 for a database without the table schema_version.
func readVersion(ctx context.Context, sqldb *sql.DB) (int, error) {
	var version int
	err := ReadTx(ctx, sqldb, func(tx *sql.Tx) error {
		var exists bool
		if err := tx.QueryRowContext(ctx, "SELECT to_regclass('schema_version') IS NOT NULL").Scan(&exists); err != nil {
			return err
		}
		if !exists {
			version = 0
			return nil
		}
		err := tx.QueryRowContext(ctx, "SELECT version FROM schema_version").Scan(&version)
		if errors.Is(err, sql.ErrNoRows) {
			version = 0
			return nil
		}
		return err
	})
	return version, err
}

// WithTx runs fn in a SERIALIZABLE transaction and commits it: PostgreSQL then behaves as if
// write transactions ran one at a time, as SQLite's do. When PostgreSQL aborts it for a
// serialization failure (SQLSTATE 40001) or a deadlock (40P01), the whole transaction is
// retried with a jittered, growing pause until ctx ends. fn must therefore be safe to run more
// than once: it may only write through tx.
func WithTx(ctx context.Context, sqldb *sql.DB, fn func(tx *sql.Tx) error) error {
	return db.RunTx(ctx, sqldb, &sql.TxOptions{Isolation: sql.LevelSerializable}, IsRetryable, fn)
}

// ReadTx runs fn in a read-only REPEATABLE READ transaction: one consistent snapshot.
func ReadTx(ctx context.Context, sqldb *sql.DB, fn func(tx *sql.Tx) error) error {
	return db.RunTx(ctx, sqldb, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}, IsRetryable, fn)
}

// IsRetryable reports whether err is a PostgreSQL serialization failure (SQLSTATE 40001) or
// deadlock (40P01): the transaction was aborted and may succeed when run again.
func IsRetryable(err error) bool {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	return pe.Code == "40001" || pe.Code == "40P01"
}
