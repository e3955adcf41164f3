-- Schema version 11: an applied summary's ledger may be stored as the difference from the
-- ledger of an older compaction of its thread, ledger_base, instead of whole: a thread's ledger
-- grows with every message it covers, and storing it whole at every compaction made the total
-- quadratic in the thread's length. NULL: the ledger column holds the whole ledger (every row
-- written before this version). Keep this file ASCII-only.

ALTER TABLE compactions ADD COLUMN ledger_base INTEGER;

-- Schema version 11 also keeps the sizes that listing threads read: a thread's message_tokens
-- (every message's tokens, added by the append that writes them), and on a compaction the
-- tokens of the messages its summary covers and of those up to its view's view_seq (written
-- with the row when it is applied). Listing threads summed every active message of every thread.

ALTER TABLE threads ADD COLUMN message_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN covered_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN view_prefix_tokens INTEGER NOT NULL DEFAULT 0;

-- And, on an applied compaction, the tokens of the context it was planned on before the first
-- entry it changed: the prompt prefix an upstream's cache keeps across it. NULL on the rows
-- applied before: not known.
ALTER TABLE compactions ADD COLUMN cache_prefix_tokens INTEGER;

UPDATE threads SET message_tokens = (
    SELECT coalesce(sum(m.tokens), 0) FROM messages m WHERE m.thread_id = threads.id);
UPDATE compactions SET
    covered_tokens = (SELECT coalesce(sum(m.tokens), 0) FROM messages m
                      WHERE m.thread_id = compactions.thread_id AND m.seq BETWEEN compactions.from_seq AND compactions.to_seq),
    view_prefix_tokens = (SELECT coalesce(sum(m.tokens), 0) FROM messages m
                          WHERE m.thread_id = compactions.thread_id AND m.seq <= compactions.view_seq)
WHERE status = 'applied';
