package postgres

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
)

// identity names the server (its system identifier, shared only by its physical replicas), the
// database and the table threads the pool's search_path reaches: two URLs name one memcascade
// database exactly when their identities are equal.
func identity(ctx context.Context, sqldb *sql.DB) (string, error) {
	var id string
	err := sqldb.QueryRowContext(ctx, `SELECT CAST((SELECT system_identifier FROM pg_control_system()) AS TEXT)
  || '/' || CAST((SELECT oid FROM pg_database WHERE datname = current_database()) AS TEXT)
  || '/' || coalesce(CAST(CAST(to_regclass('threads') AS OID) AS TEXT), '')`).Scan(&id)
	return id, err
}

// vacuum reclaims the space of deleted rows and refreshes the planner's statistics of every
// table (VACUUM runs outside a transaction).
func vacuum(ctx context.Context, sqldb *sql.DB) error {
	_, err := sqldb.ExecContext(ctx, "VACUUM (ANALYZE) threads, messages, compactions, cascade_attempts, provider_cooldowns")
	return err
}

// check verifies what PostgreSQL does not enforce by itself: the schema version is this
// build's, and every thread's messages run 1..last_seq without a gap. The server keeps its own
// pages and constraints.
func check(ctx context.Context, sqldb *sql.DB) error {
	version, err := readVersion(ctx, sqldb)
	if err != nil {
		return err
	}
	if version != len(Migrations) {
		return fmt.Errorf("schema version %d, this build writes %d", version, len(Migrations))
	}
	rows, err := sqldb.QueryContext(ctx, `SELECT t.id FROM threads t
LEFT JOIN (SELECT thread_id, count(*) AS n, coalesce(max(seq), 0) AS top FROM messages GROUP BY thread_id) m
  ON m.thread_id = t.id
WHERE coalesce(m.n, 0) <> t.last_seq OR coalesce(m.top, 0) <> t.last_seq
ORDER BY t.id LIMIT 10`)
	if err != nil {
		return err
	}
	defer rows.Close()
	var bad []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return err
		}
		bad = append(bad, fmt.Sprintf("%q", id))
	}
	if err := rows.Err(); err != nil {
		return err
	}
	if len(bad) > 0 {
		return fmt.Errorf("threads whose messages do not run 1..last_seq: %s", strings.Join(bad, ", "))
	}
	return nil
}
