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
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14
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
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16,
    $17, $18, $19, $20, $21, $22, $23, $24, $25, $26, $27, $28, $29, $30, $31, $32,
    $33, $34, $35, $36, $37, $38, $39, $40, $41, $42, $43, $44, $45, $46,
    $47
);

-- name: CopyAttempt :exec
-- An attempt with every column, its id included.
INSERT INTO cascade_attempts (
    id, compaction_id, provider, model, started_at, duration_ms, outcome, http_status,
    error_class, error, prompt_tokens, completion_tokens, usage_estimated, cost_micros
) VALUES (
    $1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14
);

-- name: CopyCooldown :exec
-- A provider's cooldown row with every column; the caller has merged it with the row the
-- destination already holds.
INSERT INTO provider_cooldowns (
    provider, cooling_until, consecutive_failures, last_error, updated_at, context_window, context_window_at
) VALUES (
    $1, $2, $3, $4, $5, $6, $7
)
ON CONFLICT (provider) DO UPDATE SET
    cooling_until = excluded.cooling_until,
    consecutive_failures = excluded.consecutive_failures,
    last_error = excluded.last_error,
    updated_at = excluded.updated_at,
    context_window = excluded.context_window,
    context_window_at = excluded.context_window_at;

-- name: ResetIDSequences :exec
-- After rows were inserted with explicit ids (CopyCompaction, CopyAttempt): the identity
-- sequences continue after the largest id, so that the next InsertCompaction and
-- InsertAttempt do not collide with a copied row. setval is not undone by a rollback; the
-- value it sets is past every id the transaction saw, so that is harmless.
SELECT
    setval(pg_get_serial_sequence('compactions', 'id'), coalesce((SELECT max(id) FROM compactions), 0) + 1, false),
    setval(pg_get_serial_sequence('cascade_attempts', 'id'), coalesce((SELECT max(id) FROM cascade_attempts), 0) + 1, false);
