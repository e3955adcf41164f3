-- name: InsertAttempt :one
INSERT INTO cascade_attempts (
    compaction_id, provider, model, started_at, duration_ms, outcome, http_status, error_class,
    error, prompt_tokens, completion_tokens
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
RETURNING id;

-- name: ListAttempts :many
-- The attempt log newest first; provider '' lists every provider.
SELECT * FROM cascade_attempts
WHERE CAST(sqlc.arg(provider) AS TEXT) = '' OR provider = sqlc.arg(provider)
ORDER BY id DESC
LIMIT sqlc.arg(max_rows);

-- name: ListCompactionAttempts :many
SELECT * FROM cascade_attempts WHERE compaction_id = ? ORDER BY id;

-- name: GetCooldown :one
SELECT * FROM provider_cooldowns WHERE provider = ?;

-- name: ListCooldowns :many
SELECT * FROM provider_cooldowns ORDER BY provider;

-- name: UpsertCooldown :exec
INSERT INTO provider_cooldowns (provider, cooling_until, consecutive_failures, last_error, updated_at)
VALUES (?, ?, ?, ?, ?)
ON CONFLICT (provider) DO UPDATE SET
    cooling_until = excluded.cooling_until,
    consecutive_failures = excluded.consecutive_failures,
    last_error = excluded.last_error,
    updated_at = excluded.updated_at;
