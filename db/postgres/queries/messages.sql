-- name: InsertMessage :exec
INSERT INTO messages (thread_id, seq, role, content, name, tool_calls, tool_call_id, raw, tokens, created_at)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10);

-- The GIN index messages_fts is kept up to date by PostgreSQL itself, in the transaction that
-- inserts the rows.

-- name: ListMessages :many
-- The full history of a thread, oldest first.
SELECT * FROM messages WHERE thread_id = $1 ORDER BY seq;

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
-- Full-text search over message text. query is a tsquery in to_tsquery's syntax, built by
-- TSQuery from quoted words (never user text as it is). The text expression is the one the
-- index messages_fts is built on, so the index is used. archived: the message is covered by
-- the thread's current summary, or left out or masked by its current view, so it is no longer
-- in the active context. The marks reach ts_headline as double-quoted option values. The
-- parameters come in the order of db's SearchMessagesParams, so the two structs convert.
SELECT m.thread_id, m.seq, m.role,
       CAST(ts_headline('simple',
           left(coalesce(m.content, '') || ' ' || coalesce(m.name, '') || ' ' || coalesce(m.tool_calls, ''), 100000),
           p.q, p.options) AS TEXT) AS snippet,
       CAST(CAST(EXISTS (
           SELECT 1 FROM compactions c
           WHERE c.id = (SELECT max(c2.id) FROM compactions c2
                         WHERE c2.thread_id = m.thread_id AND c2.status = 'applied')
             AND (m.seq BETWEEN c.from_seq AND c.to_seq
                  OR (c.view <> '' AND m.seq <= c.view_seq AND (
                      EXISTS (SELECT 1 FROM jsonb_array_elements(CAST(nullif(c.view, '') AS JSONB) -> 'omitted') o
                              WHERE m.seq BETWEEN CAST(o.value ->> 0 AS BIGINT) AND CAST(o.value ->> 1 AS BIGINT))
                      OR EXISTS (SELECT 1 FROM jsonb_array_elements(CAST(nullif(c.view, '') AS JSONB) -> 'masked') k
                                 WHERE CAST(k.value ->> 'seq' AS BIGINT) = m.seq))))
       ) AS INTEGER) AS BIGINT) AS archived
FROM (SELECT 'StartSel="' || replace(CAST(sqlc.arg(mark_open) AS TEXT), '"', '""')
             || '", StopSel="' || replace(CAST(sqlc.arg(mark_close) AS TEXT), '"', '""')
             || '", MaxWords=16, MinWords=4, MaxFragments=1, FragmentDelimiter="..."' AS options,
        to_tsquery('simple', sqlc.arg(query)) AS q) p
JOIN messages m
  ON to_tsvector('simple', left(coalesce(m.content, '') || ' ' || coalesce(m.name, '') || ' ' || coalesce(m.tool_calls, ''), 100000)) @@ p.q
WHERE (CAST(sqlc.arg(thread_id) AS TEXT) = '' OR m.thread_id = sqlc.arg(thread_id))
ORDER BY ts_rank(to_tsvector('simple', left(coalesce(m.content, '') || ' ' || coalesce(m.name, '') || ' ' || coalesce(m.tool_calls, ''), 100000)), p.q) DESC,
         m.thread_id, m.seq
-- A negative max_rows means no limit, as in SQLite (LIMIT NULL is none).
LIMIT nullif(greatest(CAST(sqlc.arg(max_rows) AS BIGINT), -1), -1);

-- name: SearchSummaries :many
-- Full-text search over summary text (query as for SearchMessages). superseded: a newer
-- applied compaction of the thread folded this summary in, or it was reverted.
SELECT c.id, c.thread_id, c.to_seq, c.summary_role, c.status,
       CAST(ts_headline('simple', coalesce(c.summary, ''), p.q, p.options) AS TEXT) AS snippet,
       CAST(CAST(c.id <> coalesce((SELECT max(c2.id) FROM compactions c2
                                   WHERE c2.thread_id = c.thread_id AND c2.status = 'applied'), 0) AS INTEGER) AS BIGINT) AS superseded
FROM (SELECT 'StartSel="' || replace(CAST(sqlc.arg(mark_open) AS TEXT), '"', '""')
             || '", StopSel="' || replace(CAST(sqlc.arg(mark_close) AS TEXT), '"', '""')
             || '", MaxWords=16, MinWords=4, MaxFragments=1, FragmentDelimiter="..."' AS options,
        to_tsquery('simple', sqlc.arg(query)) AS q) p
JOIN compactions c ON c.summary IS NOT NULL AND to_tsvector('simple', coalesce(c.summary, '')) @@ p.q
WHERE (CAST(sqlc.arg(thread_id) AS TEXT) = '' OR c.thread_id = sqlc.arg(thread_id))
ORDER BY ts_rank(to_tsvector('simple', coalesce(c.summary, '')), p.q) DESC, c.id
-- A negative max_rows means no limit, as in SQLite (LIMIT NULL is none).
LIMIT nullif(greatest(CAST(sqlc.arg(max_rows) AS BIGINT), -1), -1);
