-- name: GetThread :one
SELECT * FROM threads WHERE id = $1;

-- name: LockThread :one
-- The thread row an append changes, locked until the append's transaction ends: appends to
-- one thread from any number of hosts run one after another, so seq stays contiguous.
SELECT * FROM threads WHERE id = $1 FOR UPDATE;

-- name: InsertThread :execrows
-- Creates a thread with its settings (a JSON object, '{}' for none); 0 rows when another writer
-- created it first (the insert waits for that writer's transaction to end).
INSERT INTO threads (id, model, encoding, metadata, settings, created_at, updated_at)
VALUES ($1, $2, $3, $4, $5, $6, $7)
ON CONFLICT (id) DO NOTHING;

-- name: SetThreadTail :exec
-- The thread's new tail, once its messages up to last_seq are written; their tokens are added
-- to message_tokens (the SET reads the row as it was: the messages after the old last_seq).
UPDATE threads SET last_seq = sqlc.arg(last_seq), open_calls = sqlc.arg(open_calls), updated_at = sqlc.arg(updated_at),
    message_tokens = message_tokens + (SELECT coalesce(sum(m.tokens), 0) FROM messages m
        WHERE m.thread_id = threads.id AND m.seq > threads.last_seq AND m.seq <= sqlc.arg(last_seq))
WHERE threads.id = sqlc.arg(id);

-- name: AddReplyUsage :exec
-- Counts a stored reply's prompt as the upstream reported it, and adds its cost when it was
-- priced (a NULL cost leaves the thread's as it is).
UPDATE threads SET replies = replies + 1, prompt_tokens = prompt_tokens + sqlc.arg(prompt_tokens),
    cached_tokens = cached_tokens + sqlc.arg(cached_tokens),
    upstream_cost_micros = CASE WHEN CAST(sqlc.narg(cost_micros) AS BIGINT) IS NULL THEN upstream_cost_micros
        ELSE coalesce(upstream_cost_micros, 0) + CAST(sqlc.narg(cost_micros) AS BIGINT) END
WHERE id = sqlc.arg(id);

-- name: SetThreadTailAndUsage :exec
-- AddReplyUsage and SetThreadTail in one UPDATE (PostgreSQL only): a pipelined append that
-- stores a reply queues both, one after the other, for the same thread (see pipeline.go), and
-- sends this instead: one statement and one new version of the row where there were two.
UPDATE threads SET last_seq = sqlc.arg(last_seq), open_calls = sqlc.arg(open_calls), updated_at = sqlc.arg(updated_at),
    message_tokens = message_tokens + (SELECT coalesce(sum(m.tokens), 0) FROM messages m
        WHERE m.thread_id = threads.id AND m.seq > threads.last_seq AND m.seq <= sqlc.arg(last_seq)),
    replies = replies + 1, prompt_tokens = prompt_tokens + sqlc.arg(prompt_tokens),
    cached_tokens = cached_tokens + sqlc.arg(cached_tokens),
    upstream_cost_micros = CASE WHEN CAST(sqlc.narg(cost_micros) AS BIGINT) IS NULL THEN upstream_cost_micros
        ELSE coalesce(upstream_cost_micros, 0) + CAST(sqlc.narg(cost_micros) AS BIGINT) END
WHERE threads.id = sqlc.arg(id);

-- name: ListThreads :many
-- Every thread (or only the one named) with the size of its active context, from stored
-- counts: the messages outside the range of its current (newest applied) compaction, plus
-- that compaction's summary.
SELECT t.id, t.model, t.encoding, t.last_seq, t.created_at, t.updated_at, t.settings,
       t.replies, t.prompt_tokens, t.cached_tokens, t.upstream_cost_micros,
       -- What the attempts of its compactions cost, and how many were priced.
       CAST((SELECT coalesce(sum(a.cost_micros), 0) FROM cascade_attempts a JOIN compactions c ON c.id = a.compaction_id
             WHERE c.thread_id = t.id) AS BIGINT) AS compaction_cost_micros,
       CAST((SELECT count(a.cost_micros) FROM cascade_attempts a JOIN compactions c ON c.id = a.compaction_id
             WHERE c.thread_id = t.id) AS BIGINT) AS compaction_priced,
       CAST((SELECT count(*) FROM compactions c WHERE c.thread_id = t.id) AS BIGINT) AS compactions,
       -- A thread with pins and a compaction is measured by reading its active context.
       CAST((SELECT count(*) FROM pins p WHERE p.thread_id = t.id) AS BIGINT) AS pins,
       -- A compaction with a view (mask, window, fit) records the view's size up to its
       -- view_seq, its summary included; the messages after view_seq are added.
       CAST(CAST(cur.id IS NOT NULL AND cur.view = '' AS INTEGER) AS BIGINT) AS compacted,
       CAST(coalesce(cur.summary_tokens, 0) AS BIGINT) AS summary_tokens,
       -- seq runs 1..last_seq without gaps, so the count needs no scan.
       CAST(CASE WHEN cur.view <> '' THEN cur.view_messages + t.last_seq - cur.view_seq
                 ELSE coalesce(cur.from_seq, 1) - 1 + t.last_seq - coalesce(cur.to_seq, 0) END AS BIGINT) AS active_messages,
       -- The thread's message tokens less those the summary covers, or those up to view_seq
       -- (both recorded when the compaction was applied: messages never change).
       CAST(CASE WHEN cur.view <> '' THEN cur.view_tokens + t.message_tokens - cur.view_prefix_tokens
            ELSE t.message_tokens - coalesce(cur.covered_tokens, 0) END AS BIGINT) AS active_tokens
FROM threads t
LEFT JOIN compactions cur ON cur.id = (
    SELECT max(c2.id) FROM compactions c2 WHERE c2.thread_id = t.id AND c2.status = 'applied')
WHERE CAST(sqlc.arg('only') AS TEXT) = '' OR t.id = sqlc.arg('only')
ORDER BY t.updated_at DESC, t.id;

-- name: SetThreadSettings :execrows
-- The compaction settings of a thread (a JSON object); the thread's updated_at is about its
-- messages and does not change.
UPDATE threads SET settings = $1 WHERE id = $2;

-- name: SetThreadMetadata :execrows
-- What a host keeps about a thread beside its settings (a JSON object, see
-- memory.Store.SetThreadMeta); like the settings, it changes neither updated_at nor the
-- thread's messages.
UPDATE threads SET metadata = $1 WHERE id = $2;

-- name: DeleteThread :execrows
DELETE FROM threads WHERE id = $1;

-- name: InsertPin :exec
-- Pins a message with its unit; pinning it again changes nothing.
INSERT INTO pins (thread_id, seq, from_seq, to_seq, created_at)
VALUES ($1, $2, $3, $4, $5)
ON CONFLICT (thread_id, seq) DO NOTHING;

-- name: DeletePins :execrows
-- Unpins every pin whose unit holds the message seq.
DELETE FROM pins WHERE thread_id = sqlc.arg('thread_id') AND from_seq <= sqlc.arg('seq') AND to_seq >= sqlc.arg('seq');

-- name: ListPins :many
SELECT * FROM pins WHERE thread_id = $1 ORDER BY from_seq, seq;

-- name: ThreadVersion :one
-- What a thread's active context is made from, in one read of indexed rows: the thread's
-- counters and settings, its current (newest applied) compaction with the time it last
-- changed, and its pins. A copy of the active context kept between two reads is still the
-- thread's while they are the same. Every append reads it, so it is written to be cheap for
-- the executor to set up: the newest applied compaction is the first row of an index scan
-- (no max() aggregate, no join back on the id), and the pins an array of a scan in seq order
-- (no string_agg): 12 to 14 us of a backend's CPU a read instead of 16 to 19 (23 to 25
-- instead of 33 to 36 with 100,000 compactions), in a PL/pgSQL loop of 20,000 reads.
SELECT t.created_at, t.updated_at, t.last_seq, t.settings,
       CAST(coalesce(cur.id, 0) AS BIGINT) AS compaction_id,
       CAST(coalesce(cur.updated_at, 0) AS BIGINT) AS compaction_updated_at,
       CAST(array_to_string(ARRAY(SELECT p.seq || ':' || p.from_seq || ':' || p.to_seq
                                  FROM pins p WHERE p.thread_id = t.id ORDER BY p.seq), ',') AS TEXT) AS pins
FROM threads t
LEFT JOIN LATERAL (
    SELECT c.id, c.updated_at FROM compactions c WHERE c.thread_id = t.id AND c.status = 'applied'
    ORDER BY c.id DESC LIMIT 1) cur ON true
WHERE t.id = $1;
