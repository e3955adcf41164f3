-- name: InsertCompaction :one
INSERT INTO compactions (
    thread_id, status, reason, strategy, base_id, last_seq, token_limit, reserve_tokens,
    target_ratio, trigger_ratio, tokens_before, tokens_after, messages_before, messages_after,
    kept_messages, owner_host, owner_pid, lease_until, error, detail, created_at, updated_at
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
RETURNING id;

-- name: GetCompaction :one
SELECT * FROM compactions WHERE id = ?;

-- name: CurrentCompaction :one
-- The applied compaction whose summary is in the thread's active context: the newest applied one.
SELECT * FROM compactions
WHERE thread_id = ? AND status = 'applied'
ORDER BY id DESC
LIMIT 1;

-- name: LatestSettledCompaction :one
-- The newest applied or ineffective compaction: automatic compaction waits for messages after
-- its last_seq.
SELECT * FROM compactions
WHERE thread_id = ? AND status IN ('applied', 'ineffective')
ORDER BY id DESC
LIMIT 1;

-- name: ApplyCompaction :execrows
-- SetCompactionTokens follows in the same transaction (as after ApplyView).
UPDATE compactions SET
    status = 'applied', from_seq = ?, to_seq = ?, summary = ?, summary_role = ?, summary_tokens = ?,
    tokens_after = ?, messages_after = ?, summarized_messages = ?, kept_messages = ?, passes = ?,
    chunks = ?, facts_total = ?, facts_kept = ?, facts_dropped = ?, provider = ?, model = ?,
    duration_ms = ?, error = ?, view = ?, view_seq = ?, view_tokens = ?, view_messages = ?, ledger = ?,
    ledger_base = ?, cache_prefix_tokens = ?, updated_at = ?
WHERE id = ? AND status IN ('running', 'applied');

-- name: ApplyView :execrows
-- Commits a view that no new summary made (mask, window, or a view fitted after summarizing
-- failed): the summary columns are left as they are.
UPDATE compactions SET
    status = 'applied', from_seq = ?, to_seq = ?, view = ?, view_seq = ?, view_tokens = ?,
    view_messages = ?, tokens_after = ?, messages_after = ?, summarized_messages = ?, kept_messages = ?,
    facts_total = ?, facts_kept = ?, facts_dropped = ?, cache_prefix_tokens = ?, updated_at = ?
WHERE id = ? AND status IN ('running', 'applied');

-- name: FinishCompaction :execrows
-- Ends a compaction that did not apply a summary (status failed or ineffective), or records the
-- final figures of an applied one.
UPDATE compactions SET
    status = ?, tokens_after = ?, messages_after = ?, summarized_messages = ?, kept_messages = ?,
    passes = ?, chunks = ?, requests = ?, provider = ?, model = ?, duration_ms = ?, error = ?,
    detail = ?, facts_dropped = ?, updated_at = ?
WHERE id = ? AND status IN ('running', 'applied');

-- name: RenewLease :execrows
-- A running compaction proves it is alive: recovery marks interrupted only a row whose lease
-- has expired, whatever host or process namespace wrote it.
UPDATE compactions SET lease_until = ? WHERE id = ? AND status = 'running';

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
LIMIT sqlc.arg(max_rows);

-- name: CompactionLedger :one
-- The stored ledger of an applied summary ('' for a row written before ledgers were stored)
-- and the compaction it is the difference from (NULL: the ledger is whole).
SELECT ledger, ledger_base FROM compactions WHERE id = ?;

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
