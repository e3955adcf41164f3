package db

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"slices"
)

//go:embed migrations/*.sql
var sqliteMigrationFiles embed.FS

// sqliteMigrations upgrade an SQLite database one version at a time: sqliteMigrations[i]
// takes a database from version i to version i+1 (PRAGMA user_version). They are the files
// migrations/NNNN.sql in order; a new database runs them all. schema.sql is the schema they
// build, written whole for sqlc (TestSchemaMatchesMigrations checks that the two agree).
var sqliteMigrations = loadSQLiteMigrations()

func loadSQLiteMigrations() []string {
	names, err := fs.Glob(sqliteMigrationFiles, "migrations/*.sql")
	if err != nil {
		panic(err)
	}
	slices.Sort(names)
	out := make([]string, len(names))
	for i, name := range names {
		if want := fmt.Sprintf("migrations/%04d.sql", i+1); name != want {
			panic(fmt.Sprintf("sqlite: migration %s out of sequence, want %s", name, want))
		}
		b, err := sqliteMigrationFiles.ReadFile(name)
		if err != nil {
			panic(err)
		}
		out[i] = string(b)
	}
	return out
}

// SQLiteVersion is the schema version of the SQLite databases this build writes.
var SQLiteVersion = len(sqliteMigrations)

// migrateSQLite brings the schema up to date. A database already up to date is only read: taking
// the write lock at every open would make every reader wait for any long write (an import)
// in another process.
func migrateSQLite(ctx context.Context, sqldb *sql.DB, migrations []string) error {
	var current int
	err := sqliteReadTx(ctx, sqldb, func(tx *sql.Tx) error {
		return tx.QueryRowContext(ctx, "PRAGMA user_version").Scan(&current)
	})
	if err != nil {
		return err
	}
	if current == len(migrations) {
		return nil
	}
	// Read again under the write lock: another process may have migrated meanwhile.
	return SQLiteTx(ctx, sqldb, func(tx *sql.Tx) error {
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
