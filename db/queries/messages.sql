-- name: InsertMessage :exec
INSERT INTO messages (thread_id, seq, role, content, name, tool_calls, tool_call_id, raw, tokens, created_at)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?);

-- New messages are indexed for search after the commit that appends them, not by a query of
-- the append: see schema.sql (fts_state) and sqlite_fts.go.

-- name: ListMessages :many
-- The full history of a thread, oldest first.
SELECT * FROM messages WHERE thread_id = ? ORDER BY seq;

-- name: ListMessagesBefore :many
-- Messages with seq below before_seq: the pinned head of the active context.
SELECT * FROM messages WHERE thread_id = sqlc.arg(thread_id) AND seq < sqlc.arg(before_seq) ORDER BY seq;

-- name: ListMessagesAfter :many
-- Messages with seq above after_seq: the live tail of the active context.
SELECT * FROM messages WHERE thread_id = sqlc.arg(thread_id) AND seq > sqlc.arg(after_seq) ORDER BY seq;

-- name: ListMessageColumnsAfter :many
-- The live tail without the stored JSON: what the compactor reads.
SELECT seq, role, content, name, tool_calls, tool_call_id, tokens FROM messages
WHERE thread_id = sqlc.arg(thread_id) AND seq > sqlc.arg(after_seq) ORDER BY seq;

-- name: ListMessageColumnsBefore :many
SELECT seq, role, content, name, tool_calls, tool_call_id, tokens FROM messages
WHERE thread_id = sqlc.arg(thread_id) AND seq < sqlc.arg(before_seq) ORDER BY seq;

-- name: ListMessageColumnsBetween :many
SELECT seq, role, content, name, tool_calls, tool_call_id, tokens FROM messages
WHERE thread_id = sqlc.arg(thread_id) AND seq >= sqlc.arg(from_seq) AND seq <= sqlc.arg(to_seq)
ORDER BY seq;

-- name: ListMessagesBetween :many
SELECT * FROM messages
WHERE thread_id = sqlc.arg(thread_id) AND seq >= sqlc.arg(from_seq) AND seq <= sqlc.arg(to_seq)
ORDER BY seq;

-- name: SearchMessages :many
-- Full-text search over message text. The hits are ranked first (hits), a thread's among its
-- own messages only (its ids bound the index's scan), and the snippet and the archived flag are
-- made for the rows returned only. archived: the message is covered by the thread's current
-- summary, or left out or masked by its current view, so it is no longer in the active context.
WITH hits AS (
    SELECT m.id, m.thread_id, m.seq, bm25(messages_fts) AS score
    FROM messages_fts
    JOIN messages m ON m.id = messages_fts.rowid
    WHERE messages_fts.body MATCH sqlc.arg(query)
      AND messages_fts.rowid >= CASE WHEN CAST(sqlc.arg(thread_id) AS TEXT) = '' THEN 0
          ELSE coalesce((SELECT min(t.id) FROM messages t WHERE t.thread_id = sqlc.arg(thread_id)), 0) END
      AND messages_fts.rowid <= CASE WHEN CAST(sqlc.arg(thread_id) AS TEXT) = '' THEN 9223372036854775807
          ELSE coalesce((SELECT max(t.id) FROM messages t WHERE t.thread_id = sqlc.arg(thread_id)), 0) END
      AND (CAST(sqlc.arg(thread_id) AS TEXT) = '' OR m.thread_id = sqlc.arg(thread_id))
    ORDER BY score, m.thread_id, m.seq
    LIMIT sqlc.arg(max_rows)
)
SELECT m.thread_id, m.seq, m.role,
       CAST(snippet(messages_fts, 0, CAST(sqlc.arg(mark_open) AS TEXT), CAST(sqlc.arg(mark_close) AS TEXT), '...', 16) AS TEXT) AS snippet,
       CAST(EXISTS (
           SELECT 1 FROM compactions c
           WHERE c.id = (SELECT max(c2.id) FROM compactions c2
                         WHERE c2.thread_id = m.thread_id AND c2.status = 'applied')
             AND (m.seq BETWEEN c.from_seq AND c.to_seq
                  OR (c.view <> '' AND m.seq <= c.view_seq AND (
                      EXISTS (SELECT 1 FROM json_each(c.view, '$.omitted') o
                              WHERE m.seq BETWEEN json_extract(o.value, '$[0]') AND json_extract(o.value, '$[1]'))
                      OR EXISTS (SELECT 1 FROM json_each(c.view, '$.masked') k
                                 WHERE json_extract(k.value, '$.seq') = m.seq))))
       ) AS INTEGER) AS archived
FROM hits h
JOIN messages_fts ON messages_fts.rowid = h.id
JOIN messages m ON m.id = h.id
WHERE messages_fts.body MATCH sqlc.arg(query)
ORDER BY h.score, h.thread_id, h.seq;

-- name: SearchSummaries :many
-- Full-text search over summary text. superseded: a newer applied compaction of the thread
-- folded this summary in, or it was reverted.
SELECT c.id, c.thread_id, c.to_seq, c.summary_role, c.status,
       CAST(snippet(summaries_fts, 0, CAST(sqlc.arg(mark_open) AS TEXT), CAST(sqlc.arg(mark_close) AS TEXT), '...', 16) AS TEXT) AS snippet,
       CAST(c.id <> coalesce((SELECT max(c2.id) FROM compactions c2
                              WHERE c2.thread_id = c.thread_id AND c2.status = 'applied'), 0) AS INTEGER) AS superseded
FROM summaries_fts
JOIN compactions c ON c.id = summaries_fts.rowid
WHERE summaries_fts.summary MATCH sqlc.arg(query)
  AND (CAST(sqlc.arg(thread_id) AS TEXT) = '' OR c.thread_id = sqlc.arg(thread_id))
ORDER BY bm25(summaries_fts), c.id
LIMIT sqlc.arg(max_rows);
