-- name: InsertCompaction :one
INSERT INTO compactions (
    thread_id, status, reason, strategy, base_id, last_seq, token_limit, reserve_tokens,
    target_ratio, trigger_ratio, tokens_before, tokens_after, messages_before, messages_after,
    kept_messages, owner_host, owner_pid, lease_until, error, detail, created_at, updated_at
) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15, $16, $17, $18, $19, $20, $21, $22)
RETURNING id;

-- name: GetCompaction :one
SELECT * FROM compactions WHERE id = $1;

-- name: CurrentCompaction :one
-- The applied compaction whose summary is in the thread's active context: the newest applied one.
SELECT * FROM compactions
WHERE thread_id = $1 AND status = 'applied'
ORDER BY id DESC
LIMIT 1;

-- name: LatestSettledCompaction :one
-- The newest applied or ineffective compaction: automatic compaction waits for messages after
-- its last_seq.
SELECT * FROM compactions
WHERE thread_id = $1 AND status IN ('applied', 'ineffective')
ORDER BY id DESC
LIMIT 1;

-- name: ApplyCompaction :execrows
-- SetCompactionTokens follows in the same transaction (as after ApplyView).
UPDATE compactions SET
    status = 'applied', from_seq = $1, to_seq = $2, summary = $3, summary_role = $4, summary_tokens = $5,
    tokens_after = $6, messages_after = $7, summarized_messages = $8, kept_messages = $9, passes = $10,
    chunks = $11, facts_total = $12, facts_kept = $13, facts_dropped = $14, provider = $15, model = $16,
    duration_ms = $17, error = $18, view = $19, view_seq = $20, view_tokens = $21, view_messages = $22, ledger = $23,
    ledger_base = $24, cache_prefix_tokens = $25, updated_at = $26
WHERE id = $27 AND status IN ('running', 'applied');

-- name: ApplyView :execrows
-- Commits a view that no new summary made (mask, window, or a view fitted after summarizing
-- failed): the summary columns are left as they are.
UPDATE compactions SET
    status = 'applied', from_seq = $1, to_seq = $2, view = $3, view_seq = $4, view_tokens = $5,
    view_messages = $6, tokens_after = $7, messages_after = $8, summarized_messages = $9, kept_messages = $10,
    facts_total = $11, facts_kept = $12, facts_dropped = $13, cache_prefix_tokens = $14, updated_at = $15
WHERE id = $16 AND status IN ('running', 'applied');

-- name: FinishCompaction :execrows
-- Ends a compaction that did not apply a summary (status failed or ineffective), or records the
-- final figures of an applied one.
UPDATE compactions SET
    status = $1, tokens_after = $2, messages_after = $3, summarized_messages = $4, kept_messages = $5,
    passes = $6, chunks = $7, requests = $8, provider = $9, model = $10, duration_ms = $11, error = $12,
    detail = $13, facts_dropped = $14, updated_at = $15
WHERE id = $16 AND status IN ('running', 'applied');

-- name: RenewLease :execrows
-- A running compaction proves it is alive: recovery marks interrupted only a row whose lease
-- has expired, whatever host or process namespace wrote it.
UPDATE compactions SET lease_until = $1 WHERE id = $2 AND status = 'running';

-- name: MarkInterrupted :execrows
-- Ends a running compaction whose lease expired; the lease is checked again here, so a
-- compaction that renewed it meanwhile is left alone.
UPDATE compactions SET
    status = 'failed', error = 'interrupted', tokens_after = tokens_before,
    messages_after = messages_before, updated_at = sqlc.arg(updated_at)
WHERE id = sqlc.arg(id) AND status = 'running' AND lease_until < sqlc.arg(now);

-- name: SetCompactionStatus :execrows
UPDATE compactions SET status = sqlc.arg(new_status), error = sqlc.arg(error), updated_at = sqlc.arg(updated_at)
WHERE id = sqlc.arg(id) AND status = sqlc.arg(old_status);

-- name: ListCompactions :many
-- Reports newest first; thread_id '' lists every thread.
SELECT * FROM compactions
WHERE CAST(sqlc.arg(thread_id) AS TEXT) = '' OR thread_id = sqlc.arg(thread_id)
ORDER BY id DESC
-- A negative max_rows means no limit, as in SQLite (LIMIT NULL is none).
LIMIT nullif(greatest(CAST(sqlc.arg(max_rows) AS BIGINT), -1), -1);

-- name: CompactionLedger :one
-- The stored ledger of an applied summary ('' for a row written before ledgers were stored)
-- and the compaction it is the difference from (NULL: the ledger is whole).
SELECT ledger, ledger_base FROM compactions WHERE id = $1;

-- name: ListRunningCompactions :many
SELECT * FROM compactions WHERE status = 'running' ORDER BY id;

-- name: SetCompactionTokens :exec
-- Records, with an applied compaction's range and view, the tokens of the messages its summary
-- covers and of those up to its view_seq: ListThreads reads the active context's size from them
-- and the thread's message_tokens. Those up to view_seq are the thread's message_tokens (every
-- message's, up to its last_seq) less the messages after view_seq, appended while the
-- compaction ran (mostly none): the sum is over those, not over the whole history.
UPDATE compactions SET
    covered_tokens = (SELECT coalesce(sum(m.tokens), 0) FROM messages m
                      WHERE m.thread_id = compactions.thread_id AND m.seq BETWEEN compactions.from_seq AND compactions.to_seq),
    view_prefix_tokens = (SELECT t.message_tokens FROM threads t WHERE t.id = compactions.thread_id)
                       - (SELECT coalesce(sum(m.tokens), 0) FROM messages m
                          WHERE m.thread_id = compactions.thread_id AND m.seq > compactions.view_seq)
WHERE compactions.id = sqlc.arg(id);
