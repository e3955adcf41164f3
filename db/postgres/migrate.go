package postgres

import (
	"context"
	"database/sql"
	_ "embed"
	"errors"
	"fmt"

	"github.com/memcascade/memcascade/db"
)

//go:embed schema.sql
var schemaSQL string

// Migrations upgrade a database one version at a time: Migrations[i] takes a database from
// version i to version i+1 (the row of schema_version). Version 1 is schema.sql whole, and
// schema.sql stays the whole schema for sqlc: the later steps are written so that a new
// database, which already has what they add, passes through them unchanged.
var Migrations = []string{
	schemaSQL,
	// Version 2: an applied summary stores the ledger of what it covers (as SQLite's 0005).
	`ALTER TABLE compactions ADD COLUMN IF NOT EXISTS ledger TEXT NOT NULL DEFAULT ''`,
	// Version 3: pinned messages, and a compaction the model asked for (as SQLite's 0006).
	`ALTER TABLE compactions DROP CONSTRAINT IF EXISTS compactions_reason_check;
ALTER TABLE compactions ADD CONSTRAINT compactions_reason_check
    CHECK (reason IN ('threshold', 'emergency', 'forced', 'requested'));
CREATE TABLE IF NOT EXISTS pins (
    thread_id   TEXT    NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq         BIGINT  NOT NULL,
    from_seq    BIGINT  NOT NULL,
    to_seq      BIGINT  NOT NULL,
    created_at  BIGINT  NOT NULL,
    PRIMARY KEY (thread_id, seq)
)`,
	// Version 4: a compaction's strategy is any registered strategy's name (as SQLite's 0007).
	`ALTER TABLE compactions DROP CONSTRAINT IF EXISTS compactions_strategy_check;
ALTER TABLE compactions ADD CONSTRAINT compactions_strategy_check CHECK (strategy <> '')`,
	// Version 5: the upstream's prompt and cached tokens of the replies stored (as SQLite's
	// 0008).
	`ALTER TABLE threads ADD COLUMN IF NOT EXISTS replies BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS prompt_tokens BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS cached_tokens BIGINT NOT NULL DEFAULT 0`,
	// Version 6: money: an attempt's cost, outcome skipped_cost, a thread's upstream cost (as
	// SQLite's 0009).
	`ALTER TABLE cascade_attempts ADD COLUMN IF NOT EXISTS cost_micros BIGINT;
ALTER TABLE cascade_attempts DROP CONSTRAINT IF EXISTS cascade_attempts_outcome_check;
ALTER TABLE cascade_attempts ADD CONSTRAINT cascade_attempts_outcome_check
    CHECK (outcome IN ('ok', 'error', 'skipped_cooldown', 'skipped_window', 'skipped_budget', 'skipped_cost'));
ALTER TABLE threads ADD COLUMN IF NOT EXISTS upstream_cost_micros BIGINT`,
	// Version 7: a ledger stored as the difference from an older compaction's, and the sizes
	// listing threads reads: a thread's message tokens, a compaction's covered and view prefix
	// tokens, and the prompt prefix a compaction kept (as SQLite's 0011).
	`ALTER TABLE compactions ADD COLUMN IF NOT EXISTS ledger_base BIGINT;
ALTER TABLE threads ADD COLUMN IF NOT EXISTS message_tokens BIGINT NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN IF NOT EXISTS covered_tokens BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS view_prefix_tokens BIGINT NOT NULL DEFAULT 0,
    ADD COLUMN IF NOT EXISTS cache_prefix_tokens BIGINT;
UPDATE threads SET message_tokens = (
    SELECT coalesce(sum(m.tokens), 0) FROM messages m WHERE m.thread_id = threads.id);
UPDATE compactions SET
    covered_tokens = (SELECT coalesce(sum(m.tokens), 0) FROM messages m
                      WHERE m.thread_id = compactions.thread_id AND m.seq BETWEEN compactions.from_seq AND compactions.to_seq),
    view_prefix_tokens = (SELECT coalesce(sum(m.tokens), 0) FROM messages m
                          WHERE m.thread_id = compactions.thread_id AND m.seq <= compactions.view_seq)
WHERE status = 'applied'`,
	// Version 8: the index that keeps a thread's seq unique holds the tokens too, and the index
	// messages_tokens (thread_id, seq, tokens) goes: one index less to write a message (about 5
	// us of the server's CPU of an insert's 45, and its WAL), for the same index-only reads. A
	// database created at version 8 has the constraint's index with tokens already (3 columns).
	`DO $$
BEGIN
    IF EXISTS (SELECT 1 FROM pg_index i WHERE i.indexrelid = to_regclass('messages_thread_id_seq_key') AND i.indnatts = 2) THEN
        CREATE UNIQUE INDEX messages_thread_seq_tokens ON messages (thread_id, seq) INCLUDE (tokens);
        ALTER TABLE messages DROP CONSTRAINT messages_thread_id_seq_key;
        ALTER TABLE messages ADD CONSTRAINT messages_thread_id_seq_key UNIQUE USING INDEX messages_thread_seq_tokens;
    END IF;
END $$;
DROP INDEX IF EXISTS messages_tokens`,
}

// Version is the schema version this build writes.
var Version = len(Migrations)

// migrateLock is the first key of the transaction-scoped advisory lock that serializes
// migrations of one database: the four ASCII bytes "MCas", as db.ApplicationID. The second is a
// hash of the schema migrated (current_schema(), the URL's search_path): the memories of one
// server in schemas of their own migrate side by side, without waiting for each other's lock.
const migrateLock = 0x4D436173

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
	// READ COMMITTED: each statement after the lock reads what the migration that held it
	// committed. A SERIALIZABLE or REPEATABLE READ transaction keeps the snapshot of its first
	// statement, taken before the lock was granted: a second process opening a new database at
	// the same time would find no version row and create the tables again ("relation already
	// exists").
	return db.RunTx(ctx, sqldb, &sql.TxOptions{Isolation: sql.LevelReadCommitted}, IsRetryable, func(tx *sql.Tx) error {
		if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1, coalesce(hashtext(current_schema()), 0))", migrateLock); err != nil {
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
