-- name: InsertCompaction :one
INSERT INTO compactions (
    thread_id, status, reason, base_id, last_seq, token_limit, tokens_before, messages_before,
    owner_host, owner_pid, error, created_at, updated_at
) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
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
UPDATE compactions SET
    status = 'applied', from_seq = ?, to_seq = ?, summary = ?, summary_role = ?, summary_tokens = ?,
    tokens_after = ?, messages_after = ?, summarized_messages = ?, kept_messages = ?, passes = ?,
    chunks = ?, facts_total = ?, facts_kept = ?, provider = ?, model = ?, duration_ms = ?, error = ?,
    updated_at = ?
WHERE id = ? AND status IN ('running', 'applied');

-- name: FinishCompaction :execrows
-- Ends a compaction that did not apply a summary (status failed or ineffective), or records the
-- final figures of an applied one.
UPDATE compactions SET
    status = ?, tokens_after = ?, messages_after = ?, summarized_messages = ?, kept_messages = ?,
    passes = ?, chunks = ?, provider = ?, model = ?, duration_ms = ?, error = ?, updated_at = ?
WHERE id = ? AND status IN ('running', 'applied');

-- name: SetCompactionStatus :execrows
UPDATE compactions SET status = sqlc.arg(new_status), error = sqlc.arg(error), updated_at = sqlc.arg(updated_at)
WHERE id = sqlc.arg(id) AND status = sqlc.arg(old_status);

-- name: ListCompactions :many
-- Reports newest first; thread_id '' lists every thread.
SELECT * FROM compactions
WHERE CAST(sqlc.arg(thread_id) AS TEXT) = '' OR thread_id = sqlc.arg(thread_id)
ORDER BY id DESC
LIMIT sqlc.arg(max_rows);

-- name: ListRunningCompactions :many
SELECT * FROM compactions WHERE status = 'running' ORDER BY id;
