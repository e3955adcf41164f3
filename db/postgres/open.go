// Package postgres holds the PostgreSQL schema (schema.sql), its queries (queries/*.sql, compiled to
// Go by sqlc into the *.gen.go files, with the same names, parameters and results as package
// db's where PostgreSQL allows) and the functions that open a database and run transactions.
// It is the PostgreSQL backend of package db, whose transaction runner it shares; package db
// holds the SQLite backend itself (its schema.sql, queries/, migrations/ and sqlite_*.go), and
// a file here has the name of the SQLite file with the same job without the prefix (open.go,
// sqlite_open.go). It imports no other package of this module. The driver is pgx through
// database/sql.
//
// A program links it in for its side effect, as a database/sql driver:
//
//	import _ "github.com/memcascade/memcascade/db/postgres"
//
// which registers postgres:// and postgresql:// URLs with db.OpenHandle (and so memory.Open).
// memctl imports it unless built with -tags nopostgres; package memory does not, so a program
// that keeps only SQLite files links no PostgreSQL driver.
package postgres

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"
	"github.com/memcascade/memcascade/db"
)

//go:generate go tool sqlc generate -f ../../sqlc.yaml

// ErrNewerSchema is returned by Open for a database written by a newer version of memcascade:
// db.ErrNewerSchema, as for SQLite.
var ErrNewerSchema = db.ErrNewerSchema

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
	return openPool(ctx, rawURL, db.Options{})
}

// openPool connects to rawURL and prepares its schema as opt allows (see prepareSchema).
func openPool(ctx context.Context, rawURL string, opt db.Options) (*sql.DB, error) {
	if !IsURL(rawURL) {
		return nil, errors.New("open database: not a PostgreSQL URL (want postgres://... or postgresql://...)")
	}
	where := db.Display(rawURL)
	sqldb, err := connect(rawURL)
	if err != nil {
		return nil, fmt.Errorf("open database %s: %w", where, hidePassword(err, rawURL))
	}
	if err := prepareSchema(ctx, sqldb, opt); err != nil {
		sqldb.Close()
		return nil, fmt.Errorf("open database %s: %w", where, hidePassword(err, rawURL))
	}
	return sqldb, nil
}

// connect returns a pool of connections to rawURL (not yet dialled), which keeps the
// connections a burst opened (poolIdle). Each new connection turns
// PostgreSQL's just-in-time compilation off: this schema's queries are short, and compiling the
// thread listing cost more than running it (EXPLAIN ANALYZE, 100,000 threads: 1.40-2.00 s
// with it, 0.74-0.92 s of that compiling; 0.89-1.09 s without). A
// server that has no such setting (another engine speaking the protocol) ignores the refusal.
func connect(rawURL string) (*sql.DB, error) {
	cfg, err := pgx.ParseConfig(rawURL)
	if err != nil {
		return nil, err
	}
	sqldb := stdlib.OpenDB(*cfg, stdlib.OptionAfterConnect(func(ctx context.Context, c *pgx.Conn) error {
		_, _ = c.Exec(ctx, "SET jit = off")
		return nil
	}))
	sqldb.SetMaxIdleConns(poolIdle)
	sqldb.SetConnMaxIdleTime(poolIdleTime)
	return sqldb, nil
}

// poolIdle and poolIdleTime bound the idle connections a pool keeps: up to poolIdle, each
// until it has been idle for poolIdleTime. database/sql keeps two by default: under 50 agents
// at once through memctl serve, each turn's transactions found no idle connection, and the
// pool opened a new one (a server process forked, its settings, each query prepared again on
// it) and closed it as it came back: about 400 connections for 1,000 turns, 1.1 ms of serve's
// CPU a turn, ~300 turns/s; kept, 0.7 ms and ~600 turns/s (bench/run -only agents).
const (
	poolIdle     = 64
	poolIdleTime = 5 * time.Minute
)

func init() {
	db.Register("postgres", OpenHandle)
	db.Register("postgresql", OpenHandle)
}

// OpenHandle opens the PostgreSQL database at rawURL for package db (db.OpenHandle calls it for
// postgres:// and postgresql:// URLs). With opt.NoCreate a database without the memcascade
// schema is db.ErrNoDatabase; with opt.ReadOnly the schema is never migrated, and one written by
// an older version is db.ErrOlderSchema. Otherwise it is Open.
func OpenHandle(ctx context.Context, rawURL string, opt db.Options) (*db.Handle, error) {
	sqldb, err := openPool(ctx, rawURL, opt)
	if err != nil {
		return nil, err
	}
	where := db.Display(rawURL)
	h, err := db.NewHandle(ctx, sqldb, "postgres", where, Ops)
	if err != nil {
		sqldb.Close()
		return nil, err
	}
	return h, nil
}

// prepareSchema checks the server answers and brings the schema up to date, as opt allows.
func prepareSchema(ctx context.Context, sqldb *sql.DB, opt db.Options) error {
	if err := sqldb.PingContext(ctx); err != nil {
		return err
	}
	if !opt.NoCreate && !opt.ReadOnly {
		return migrate(ctx, sqldb, Migrations)
	}
	version, err := readVersion(ctx, sqldb)
	if err != nil {
		return err
	}
	switch {
	case version == 0:
		return fmt.Errorf("%w: the database has no memcascade schema", db.ErrNoDatabase)
	case version > len(Migrations):
		return fmt.Errorf("%w (schema version %d, this build knows %d)", ErrNewerSchema, version, len(Migrations))
	case version < len(Migrations) && opt.ReadOnly:
		return fmt.Errorf("%w (schema version %d, this build reads %d): a command that writes upgrades it", db.ErrOlderSchema, version, len(Migrations))
	case version < len(Migrations):
		return migrate(ctx, sqldb, Migrations)
	}
	return nil
}

// Ops are the operations of a PostgreSQL database (see db.Ops).
var Ops = db.Ops{
	// Nothing is prepared up front (one round trip a query, at every open): the driver prepares
	// each statement on first use and keeps it for the connection.
	Prepare:   func(_ context.Context, sqldb *sql.DB) (db.Querier, error) { return queries(New(sqldb)), nil },
	Bind:      func(q db.Querier, tx *sql.Tx) db.Querier { return queries(unwrap(q).WithTx(tx)) },
	Write:     writeTx,
	Locked:    &sql.TxOptions{Isolation: sql.LevelReadCommitted},
	Pipelined: pipelined,
	Read:      readTx,
	Retryable: IsRetryable,
	Lost:      IsConnLost,
	Match:     TSQuery,
	Close:     func(q db.Querier) error { return unwrap(q).Close() },
	Vacuum:    vacuum,
	Check:     check,
	Identity:  identity,
	Size: func(ctx context.Context, sqldb *sql.DB, _ string) (int64, error) {
		var n int64
		err := sqldb.QueryRowContext(ctx, `SELECT CAST(coalesce(sum(pg_total_relation_size(to_regclass(t))), 0) AS BIGINT)
FROM unnest(ARRAY['threads', 'messages', 'compactions', 'cascade_attempts', 'provider_cooldowns']) AS t`).Scan(&n)
		return n, err
	},
}

// WithTx runs fn in a SERIALIZABLE transaction and commits it: PostgreSQL then behaves as if
// write transactions ran one at a time, as SQLite's do. When PostgreSQL aborts it for a
// serialization failure (SQLSTATE 40001) or a deadlock (40P01), the whole transaction is
// retried with a jittered, growing pause until ctx ends. fn must therefore be safe to run more
// than once: it may only write through tx.
func WithTx(ctx context.Context, sqldb *sql.DB, fn func(tx *sql.Tx) error) error {
	return db.RunTx(ctx, sqldb, writeTx, IsRetryable, fn)
}

// ReadTx runs fn in a read-only REPEATABLE READ transaction: one consistent snapshot.
func ReadTx(ctx context.Context, sqldb *sql.DB, fn func(tx *sql.Tx) error) error {
	return db.RunTx(ctx, sqldb, readTx, IsRetryable, fn)
}

// The options of a writing and of a reading transaction, for WithTx, ReadTx and Ops.
var (
	writeTx = &sql.TxOptions{Isolation: sql.LevelSerializable}
	readTx  = &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true}
)

// IsConnLost reports whether err means the connection to the server was lost or could not be
// made: the network failed, the server went away, or the driver found its connection dead. An
// error the server reported (a *pgconn.PgError) and the end of a context are not.
func IsConnLost(err error) bool {
	var pe *pgconn.PgError
	if err == nil || errors.As(err, &pe) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) {
		return false
	}
	var ne net.Error
	var ce *pgconn.ConnectError
	return errors.Is(err, driver.ErrBadConn) || errors.Is(err, sql.ErrConnDone) ||
		errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) ||
		errors.As(err, &ne) || errors.As(err, &ce) || pgconn.SafeToRetry(err)
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
