-- Schema version 7: a compaction's strategy is any registered strategy's name (a program
-- registers its own with compact.Register), not one of the four built in. Keep this file
-- ASCII-only.
--
-- compactions and cascade_attempts are rebuilt, as in 0006.sql (SQLite cannot change a CHECK
-- constraint in place): the new attempts table first refers to the new compactions table, so
-- dropping the old ones deletes nothing, and the renames carry the reference over.

DROP TRIGGER summaries_fts_insert;
DROP TRIGGER summaries_fts_update;
DROP TRIGGER summaries_fts_delete;

CREATE TABLE compactions_v7 (
    id                  INTEGER NOT NULL PRIMARY KEY,
    thread_id           TEXT    NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    status              TEXT    NOT NULL CHECK (status IN ('running', 'applied', 'ineffective', 'failed', 'reverted')),
    reason              TEXT    NOT NULL CHECK (reason IN ('threshold', 'emergency', 'forced', 'requested')),
    strategy            TEXT    NOT NULL DEFAULT 'summarize' CHECK (strategy <> ''), -- a registered strategy's name
    base_id             INTEGER,           -- the applied compaction this one was planned on (NULL: none)
    last_seq            INTEGER NOT NULL,  -- the thread's newest seq when planned
    from_seq            INTEGER,           -- applied: the first seq the summary covers
    to_seq              INTEGER,           -- applied: the last seq the summary covers
    summary             TEXT,
    summary_role        TEXT,
    summary_tokens      INTEGER NOT NULL DEFAULT 0,
    token_limit         INTEGER NOT NULL,  -- the settings it ran with: the wait rule compares them
    reserve_tokens      INTEGER NOT NULL DEFAULT 0,
    target_ratio        REAL    NOT NULL DEFAULT 0,
    trigger_ratio       REAL    NOT NULL DEFAULT 0,
    tokens_before       INTEGER NOT NULL,
    tokens_after        INTEGER NOT NULL DEFAULT 0,
    messages_before     INTEGER NOT NULL,
    messages_after      INTEGER NOT NULL DEFAULT 0,
    summarized_messages INTEGER NOT NULL DEFAULT 0,
    kept_messages       INTEGER NOT NULL DEFAULT 0,
    passes              INTEGER NOT NULL DEFAULT 0,
    chunks              INTEGER NOT NULL DEFAULT 0, -- requests of the provider whose summary was used
    requests            INTEGER NOT NULL DEFAULT 0, -- requests sent to every provider
    facts_total         INTEGER NOT NULL DEFAULT 0,
    facts_kept          INTEGER NOT NULL DEFAULT 0,
    facts_dropped       TEXT    NOT NULL DEFAULT '[]', -- JSON array of the fact values left out
    provider            TEXT    NOT NULL DEFAULT '',
    model               TEXT    NOT NULL DEFAULT '',
    duration_ms         INTEGER NOT NULL DEFAULT 0,
    error               TEXT    NOT NULL DEFAULT '',
    detail              TEXT    NOT NULL DEFAULT '', -- why it ended as it did, in words
    owner_host          TEXT    NOT NULL DEFAULT '', -- who ran it (for people; recovery reads the lease)
    owner_pid           INTEGER NOT NULL DEFAULT 0,
    lease_until         INTEGER NOT NULL DEFAULT 0,  -- running: renewed while it works; past it, interrupted
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL,
    -- The view, when it is not the summary alone (see migrations/0003.sql): a JSON object of
    -- the summary in it, the masked results, the omitted ranges and the cut results, up to
    -- view_seq; view_tokens and view_messages are its size up to view_seq.
    view                TEXT    NOT NULL DEFAULT '',
    view_seq            INTEGER NOT NULL DEFAULT 0,
    view_tokens         INTEGER NOT NULL DEFAULT 0,
    view_messages       INTEGER NOT NULL DEFAULT 0,
    -- The ledger of what an applied summary covers (see migrations/0005.sql): a JSON array of
    -- the facts and actions of the original messages, each with its kind, the seq it came from,
    -- its entity and whether it was named dropped; '' for a row with no summary of its own.
    ledger              TEXT    NOT NULL DEFAULT ''
) STRICT;

INSERT INTO compactions_v7 SELECT * FROM compactions;

CREATE TABLE cascade_attempts_v7 (
    id                INTEGER NOT NULL PRIMARY KEY,
    compaction_id     INTEGER REFERENCES compactions_v7 (id) ON DELETE CASCADE,
    provider          TEXT    NOT NULL,
    model             TEXT    NOT NULL,
    started_at        INTEGER NOT NULL,
    duration_ms       INTEGER NOT NULL,
    outcome           TEXT    NOT NULL CHECK (outcome IN ('ok', 'error', 'skipped_cooldown', 'skipped_window', 'skipped_budget')),
    http_status       INTEGER NOT NULL DEFAULT 0,
    error_class       TEXT    NOT NULL DEFAULT '',
    error             TEXT    NOT NULL DEFAULT '', -- redacted
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    usage_estimated   INTEGER NOT NULL DEFAULT 0  -- 1: the tokens were counted locally (the server sent no usage)
) STRICT;

INSERT INTO cascade_attempts_v7 SELECT * FROM cascade_attempts;

DROP TABLE cascade_attempts;
DROP TABLE compactions;
ALTER TABLE compactions_v7 RENAME TO compactions;
ALTER TABLE cascade_attempts_v7 RENAME TO cascade_attempts;

CREATE INDEX compactions_thread ON compactions (thread_id, id);
CREATE INDEX compactions_current ON compactions (thread_id, status, id);
CREATE INDEX compactions_running ON compactions (status) WHERE status = 'running';
CREATE INDEX cascade_attempts_compaction ON cascade_attempts (compaction_id);
CREATE INDEX cascade_attempts_provider ON cascade_attempts (provider, id);

CREATE TRIGGER summaries_fts_insert AFTER INSERT ON compactions WHEN new.summary IS NOT NULL BEGIN
    INSERT INTO summaries_fts (rowid, summary) VALUES (new.id, new.summary);
END;

CREATE TRIGGER summaries_fts_update AFTER UPDATE OF summary ON compactions
WHEN old.summary IS NOT new.summary BEGIN
    INSERT INTO summaries_fts (summaries_fts, rowid, summary)
    SELECT 'delete', old.id, old.summary WHERE old.summary IS NOT NULL;
    INSERT INTO summaries_fts (rowid, summary)
    SELECT new.id, new.summary WHERE new.summary IS NOT NULL;
END;

CREATE TRIGGER summaries_fts_delete AFTER DELETE ON compactions WHEN old.summary IS NOT NULL BEGIN
    INSERT INTO summaries_fts (summaries_fts, rowid, summary) VALUES ('delete', old.id, old.summary);
END;
