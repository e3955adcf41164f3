-- name: InsertAttempt :one
INSERT INTO cascade_attempts (
    compaction_id, provider, model, started_at, duration_ms, outcome, http_status, error_class,
    error, prompt_tokens, completion_tokens, usage_estimated, cost_micros
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)
RETURNING id;

-- name: ListAttempts :many
-- The attempt log newest first; provider '' lists every provider.
SELECT * FROM cascade_attempts
WHERE CAST(sqlc.arg(provider) AS TEXT) = '' OR provider = sqlc.arg(provider)
ORDER BY id DESC
-- A negative max_rows means no limit, as in SQLite (LIMIT NULL is none).
LIMIT nullif(greatest(CAST(sqlc.arg(max_rows) AS BIGINT), -1), -1);

-- name: ListCompactionAttempts :many
SELECT * FROM cascade_attempts WHERE compaction_id = $1 ORDER BY id;

-- name: GetCooldown :one
SELECT * FROM provider_cooldowns WHERE provider = $1;

-- name: ListCooldowns :many
SELECT * FROM provider_cooldowns ORDER BY provider;

-- name: UpsertCooldown :exec
INSERT INTO provider_cooldowns (provider, cooling_until, consecutive_failures, last_error, updated_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (provider) DO UPDATE SET
    cooling_until = excluded.cooling_until,
    consecutive_failures = excluded.consecutive_failures,
    last_error = excluded.last_error,
    updated_at = excluded.updated_at;

-- name: SetContextWindow :exec
-- Caches the window a provider's server reported (0 forgets it: the next turn asks again).
INSERT INTO provider_cooldowns (provider, context_window, context_window_at, updated_at)
VALUES (sqlc.arg(provider), sqlc.arg(context_window), sqlc.arg(context_window_at), sqlc.arg(context_window_at))
ON CONFLICT (provider) DO UPDATE SET
    context_window = excluded.context_window,
    context_window_at = excluded.context_window_at;

-- name: CompactionUsage :one
-- What one compaction cost: the requests sent (attempts whose outcome is ok or error; skips
-- send none), their tokens, their cost in micro-dollars, and estimated = 1 when any of them were counted locally because
-- the server sent no usage.
SELECT
    CAST(count(*) AS BIGINT) AS requests,
    CAST(coalesce(sum(prompt_tokens), 0) AS BIGINT) AS prompt_tokens,
    CAST(coalesce(sum(completion_tokens), 0) AS BIGINT) AS completion_tokens,
    CAST(coalesce(max(usage_estimated), 0) AS BIGINT) AS estimated,
    -- The cost of the priced attempts, and how many were priced (0: the cost is unknown).
    CAST(coalesce(sum(cost_micros), 0) AS BIGINT) AS cost_micros,
    CAST(count(cost_micros) AS BIGINT) AS priced
FROM cascade_attempts
WHERE compaction_id = $1 AND outcome IN ('ok', 'error');

-- name: ResetCooldown :execrows
-- Clears a provider's cooldown and failure count (memctl providers reset).
UPDATE provider_cooldowns SET cooling_until = 0, consecutive_failures = 0, last_error = '', updated_at = $1
WHERE provider = $2;

-- name: ResetAllCooldowns :execrows
UPDATE provider_cooldowns SET cooling_until = 0, consecutive_failures = 0, last_error = '', updated_at = $1
WHERE cooling_until <> 0 OR consecutive_failures <> 0 OR last_error <> '';
