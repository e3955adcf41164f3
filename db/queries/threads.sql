-- name: GetThread :one
SELECT * FROM threads WHERE id = ?;

-- name: InsertThread :exec
INSERT INTO threads (id, model, encoding, metadata, created_at, updated_at)
VALUES (?, ?, ?, ?, ?, ?);

-- name: SetThreadTail :exec
UPDATE threads SET last_seq = ?, open_calls = ?, updated_at = ? WHERE id = ?;

-- name: ListThreads :many
SELECT t.*,
       CAST((SELECT count(*) FROM compactions c WHERE c.thread_id = t.id) AS INTEGER) AS compactions
FROM threads t
ORDER BY t.updated_at DESC, t.id;

-- name: DeleteThread :execrows
DELETE FROM threads WHERE id = ?;
