-- Housekeeping: what prune may delete (the PostgreSQL versions of db/queries/housekeeping.sql).

-- name: PrunableCompactions :many
-- Compaction reports prune may delete: failed, ineffective or reverted, settled before
-- sqlc.arg(before), with their attempt counts. Never an applied or running one, never one an
-- applied or running compaction was planned on (base_id) or whose ledger is written as the
-- difference from this one's (ledger_base), and never the newest applied or ineffective one of
-- its thread: automatic compaction's wait rule reads it.
SELECT c.id, c.thread_id, c.status, c.updated_at,
    CAST((SELECT count(*) FROM cascade_attempts a WHERE a.compaction_id = c.id) AS BIGINT) AS attempts
FROM compactions c
WHERE c.status IN ('failed', 'ineffective', 'reverted') AND c.updated_at < sqlc.arg(before)
    AND NOT EXISTS (
        SELECT 1 FROM compactions d
        WHERE (d.base_id = c.id OR d.ledger_base = c.id) AND d.status IN ('applied', 'running'))
    AND c.id <> coalesce((
        SELECT s.id FROM compactions s
        WHERE s.thread_id = c.thread_id AND s.status IN ('applied', 'ineffective')
        ORDER BY s.id DESC LIMIT 1), 0)
ORDER BY c.id;

-- name: DeletePrunableCompaction :execrows
-- Deletes one report PrunableCompactions listed (its attempts go with it: ON DELETE CASCADE);
-- the status is checked again.
DELETE FROM compactions WHERE id = $1 AND status IN ('failed', 'ineffective', 'reverted');

-- name: CountLooseAttempts :one
-- Attempts made for no compaction, started before sqlc.arg(before).
SELECT CAST(count(*) AS BIGINT) FROM cascade_attempts
WHERE compaction_id IS NULL AND started_at < sqlc.arg(before);

-- name: DeleteLooseAttempts :execrows
DELETE FROM cascade_attempts WHERE compaction_id IS NULL AND started_at < sqlc.arg(before);
