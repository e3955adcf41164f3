-- Schema version 2: the report records what a compaction ran with and left out, and a lease
-- replaces the process id as the sign that a running compaction is alive; attempts may be
-- skipped for a window too small or a budget spent; threads carry settings; providers cache
-- the window their server reports. Keep this file ASCII-only.
--
-- compactions and cascade_attempts are rebuilt (SQLite cannot change a CHECK constraint in
-- place). cascade_attempts refers to compactions: the new attempts table first refers to the
-- new compactions table, so dropping the old ones deletes nothing, and the renames carry the
-- reference over.

DROP TRIGGER summaries_fts_insert;
DROP TRIGGER summaries_fts_update;
DROP TRIGGER summaries_fts_delete;

CREATE TABLE compactions_v2 (
    id                  INTEGER NOT NULL PRIMARY KEY,
    thread_id           TEXT    NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    status              TEXT    NOT NULL CHECK (status IN ('running', 'applied', 'ineffective', 'failed', 'reverted')),
    reason              TEXT    NOT NULL CHECK (reason IN ('threshold', 'emergency', 'forced')),
    strategy            TEXT    NOT NULL DEFAULT 'summarize' CHECK (strategy IN ('summarize', 'mask', 'hybrid', 'window')),
    base_id             INTEGER,
    last_seq            INTEGER NOT NULL,
    from_seq            INTEGER,
    to_seq              INTEGER,
    summary             TEXT,
    summary_role        TEXT,
    summary_tokens      INTEGER NOT NULL DEFAULT 0,
    token_limit         INTEGER NOT NULL,
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
    chunks              INTEGER NOT NULL DEFAULT 0,
    requests            INTEGER NOT NULL DEFAULT 0,
    facts_total         INTEGER NOT NULL DEFAULT 0,
    facts_kept          INTEGER NOT NULL DEFAULT 0,
    facts_dropped       TEXT    NOT NULL DEFAULT '[]',
    provider            TEXT    NOT NULL DEFAULT '',
    model               TEXT    NOT NULL DEFAULT '',
    duration_ms         INTEGER NOT NULL DEFAULT 0,
    error               TEXT    NOT NULL DEFAULT '',
    detail              TEXT    NOT NULL DEFAULT '',
    owner_host          TEXT    NOT NULL DEFAULT '',
    owner_pid           INTEGER NOT NULL DEFAULT 0,
    lease_until         INTEGER NOT NULL DEFAULT 0,
    created_at          INTEGER NOT NULL,
    updated_at          INTEGER NOT NULL
) STRICT;

INSERT INTO compactions_v2 (
    id, thread_id, status, reason, base_id, last_seq, from_seq, to_seq, summary, summary_role,
    summary_tokens, token_limit, tokens_before, tokens_after, messages_before, messages_after,
    summarized_messages, kept_messages, passes, chunks, requests, facts_total, facts_kept, provider,
    model, duration_ms, error, owner_host, owner_pid, created_at, updated_at
)
SELECT
    id, thread_id, status, reason, base_id, last_seq, from_seq, to_seq, summary, summary_role,
    summary_tokens, token_limit, tokens_before, tokens_after, messages_before, messages_after,
    summarized_messages, kept_messages, passes, chunks, chunks, facts_total, facts_kept, provider,
    model, duration_ms, error, owner_host, owner_pid, created_at, updated_at
FROM compactions;

CREATE TABLE cascade_attempts_v2 (
    id                INTEGER NOT NULL PRIMARY KEY,
    compaction_id     INTEGER REFERENCES compactions_v2 (id) ON DELETE CASCADE,
    provider          TEXT    NOT NULL,
    model             TEXT    NOT NULL,
    started_at        INTEGER NOT NULL,
    duration_ms       INTEGER NOT NULL,
    outcome           TEXT    NOT NULL CHECK (outcome IN ('ok', 'error', 'skipped_cooldown', 'skipped_window', 'skipped_budget')),
    http_status       INTEGER NOT NULL DEFAULT 0,
    error_class       TEXT    NOT NULL DEFAULT '',
    error             TEXT    NOT NULL DEFAULT '',
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0
) STRICT;

INSERT INTO cascade_attempts_v2 SELECT * FROM cascade_attempts;

DROP TABLE cascade_attempts;
DROP TABLE compactions;
ALTER TABLE compactions_v2 RENAME TO compactions;
ALTER TABLE cascade_attempts_v2 RENAME TO cascade_attempts;

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

ALTER TABLE threads ADD COLUMN settings TEXT NOT NULL DEFAULT '{}';
ALTER TABLE provider_cooldowns ADD COLUMN context_window INTEGER NOT NULL DEFAULT 0;
ALTER TABLE provider_cooldowns ADD COLUMN context_window_at INTEGER NOT NULL DEFAULT 0;
