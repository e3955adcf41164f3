-- Copying a whole database into another (memctl copy, memory.Copy): every row with every
-- column, ids included. The same names, parameters and rows as in the other backend's copy.sql.

-- name: ListAllThreads :many
SELECT * FROM threads ORDER BY id;

-- name: ListAllCompactions :many
-- Every compaction, oldest first: a compaction's base_id names an older one.
SELECT * FROM compactions ORDER BY id;

-- name: ListAllAttempts :many
-- The whole attempt log oldest first, attempts made for no compaction included.
SELECT * FROM cascade_attempts ORDER BY id;

-- name: ListAllPins :many
-- Every pin (InsertPin writes them in the destination).
SELECT * FROM pins ORDER BY thread_id, seq;

-- name: ListCompactionIDs :many
SELECT id FROM compactions ORDER BY id;

-- name: ListAttemptIDs :many
SELECT id FROM cascade_attempts ORDER BY id;

-- name: CopyThread :exec
-- A thread with every column as the source database has it (its messages follow).
INSERT INTO threads (
    id, model, encoding, metadata, last_seq, open_calls, created_at, updated_at,
    settings, replies, prompt_tokens, cached_tokens, upstream_cost_micros, message_tokens
) VALUES (
    ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
);

-- name: CopyCompaction :exec
-- A compaction with every column, its id included.
INSERT INTO compactions (
    id, thread_id, status, reason, strategy, base_id, last_seq, from_seq,
    to_seq, summary, summary_role, summary_tokens, token_limit, reserve_tokens, target_ratio, trigger_ratio,
    tokens_before, tokens_after, messages_before, messages_after, summarized_messages, kept_messages, passes, chunks,
    requests, facts_total, facts_kept, facts_dropped, provider, model, duration_ms, error,
    detail, owner_host, owner_pid, lease_until, created_at, updated_at, view, view_seq,
    view_tokens, view_messages, ledger, ledger_base, covered_tokens, view_prefix_tokens,
    cache_prefix_tokens
) VALUES (
    ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
    ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?,
    ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
);

-- name: CopyAttempt :exec
-- An attempt with every column, its id included.
INSERT INTO cascade_attempts (
    id, compaction_id, provider, model, started_at, duration_ms, outcome, http_status,
    error_class, error, prompt_tokens, completion_tokens, usage_estimated, cost_micros
) VALUES (
    ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?
);

-- name: CopyCooldown :exec
-- A provider's cooldown row with every column; the caller has merged it with the row the
-- destination already holds.
INSERT INTO provider_cooldowns (
    provider, cooling_until, consecutive_failures, last_error, updated_at, context_window, context_window_at
) VALUES (
    ?, ?, ?, ?, ?, ?, ?
)
ON CONFLICT (provider) DO UPDATE SET
    cooling_until = excluded.cooling_until,
    consecutive_failures = excluded.consecutive_failures,
    last_error = excluded.last_error,
    updated_at = excluded.updated_at,
    context_window = excluded.context_window,
    context_window_at = excluded.context_window_at;

-- name: ResetIDSequences :exec
-- Nothing to do in SQLite: the ids are INTEGER PRIMARY KEY without AUTOINCREMENT (no
-- sqlite_sequence), so the next insert takes the largest id + 1 whatever ids were copied.
-- PostgreSQL's version moves its identity sequences past the copied ids.
SELECT 1;
