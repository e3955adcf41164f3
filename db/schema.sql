-- memcascade schema, version 12: what the migrations in migrations/ build, written whole for
-- sqlc and for readers (TestSchemaMatchesMigrations checks they agree). The open
-- (sqlite_open.go) applies the migrations; PRAGMA user_version records the version.
-- Times are integer Unix milliseconds. Keep this file ASCII-only.

-- A conversation. The id is chosen by the caller.
CREATE TABLE threads (
    id          TEXT    NOT NULL PRIMARY KEY,
    model       TEXT    NOT NULL,          -- the model whose tokenizer counts this thread
    encoding    TEXT    NOT NULL,          -- the tiktoken encoding resolved for it at creation
    metadata    TEXT    NOT NULL DEFAULT '{}',
    last_seq    INTEGER NOT NULL DEFAULT 0, -- seq of the newest message (0: none yet)
    open_calls  TEXT    NOT NULL DEFAULT '[]', -- ids of tool calls not answered yet (JSON array)
    created_at  INTEGER NOT NULL,
    updated_at  INTEGER NOT NULL,
    settings    TEXT    NOT NULL DEFAULT '{}', -- compaction settings of this thread (JSON object)
    -- What the upstream reported of the prompts of the replies memctl serve stored (see
    -- migrations/0008.sql): replies counted, their prompt tokens, and of those the tokens read
    -- from its prompt cache.
    replies       INTEGER NOT NULL DEFAULT 0,
    prompt_tokens INTEGER NOT NULL DEFAULT 0,
    cached_tokens INTEGER NOT NULL DEFAULT 0,
    -- What those replies cost at serve's upstream price, in micro-dollars (see
    -- migrations/0009.sql); NULL: none was priced.
    upstream_cost_micros INTEGER,
    -- The tokens of all its messages (see migrations/0011.sql), kept by the append that
    -- writes them: listing threads sums no message.
    message_tokens INTEGER NOT NULL DEFAULT 0
) STRICT;

-- The append-only log. Compaction never updates or deletes a row; only deleting the whole
-- thread removes them.
CREATE TABLE messages (
    id            INTEGER NOT NULL PRIMARY KEY,
    thread_id     TEXT    NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq           INTEGER NOT NULL,        -- 1, 2, 3... within the thread
    role          TEXT    NOT NULL CHECK (role IN ('system', 'developer', 'user', 'assistant', 'tool')),
    content       TEXT,                    -- the text of the content (string or text parts); NULL when none
    name          TEXT,
    tool_calls    TEXT,                    -- the tool calls as JSON, NULL when none
    tool_call_id  TEXT,
    raw           TEXT    NOT NULL,        -- the whole message as JSON, unknown fields included
    tokens        INTEGER NOT NULL,        -- counted once at append, per-message overhead included
    created_at    INTEGER NOT NULL,
    UNIQUE (thread_id, seq)
) STRICT;

-- Sizes of a thread's messages without reading the rows: threads and active-context totals.
CREATE INDEX messages_tokens ON messages (thread_id, seq, tokens);

-- One row per compaction that got past planning.
CREATE TABLE compactions (
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
    -- With ledger_base set (see migrations/0011.sql), the ledger is written as the difference
    -- from the ledger of compaction ledger_base, an older one of the same thread (a JSON
    -- object; compact/ledger.go reads both forms).
    ledger              TEXT    NOT NULL DEFAULT '',
    ledger_base         INTEGER,
    -- Applied: the tokens of the messages from_seq..to_seq, and of those up to view_seq (see
    -- migrations/0011.sql), so that the size of the active context is read from the thread's
    -- message_tokens without summing its messages.
    covered_tokens      INTEGER NOT NULL DEFAULT 0,
    view_prefix_tokens  INTEGER NOT NULL DEFAULT 0,
    -- Applied: the tokens of the active context it was planned on before the first entry it
    -- changed, the prompt prefix an upstream's cache still holds after it (tokens_before less
    -- this is the prefix it invalidated); NULL on a row applied before schema version 11.
    cache_prefix_tokens INTEGER
) STRICT;

CREATE INDEX compactions_thread ON compactions (thread_id, id);
CREATE INDEX compactions_current ON compactions (thread_id, status, id);
CREATE INDEX compactions_running ON compactions (status) WHERE status = 'running';

-- Messages pinned in a thread's active context: each stays there verbatim whatever a
-- compaction covers. A pin holds the whole unit of its message, from_seq..to_seq (an
-- assistant message with the tool results that answer its calls), so that a call never
-- leaves its result.
CREATE TABLE pins (
    thread_id   TEXT    NOT NULL REFERENCES threads (id) ON DELETE CASCADE,
    seq         INTEGER NOT NULL,          -- the message pinned
    from_seq    INTEGER NOT NULL,          -- its unit
    to_seq      INTEGER NOT NULL,
    created_at  INTEGER NOT NULL,
    PRIMARY KEY (thread_id, seq)
) STRICT;

-- One row per provider attempt, skipped ones included.
CREATE TABLE cascade_attempts (
    id                INTEGER NOT NULL PRIMARY KEY,
    compaction_id     INTEGER REFERENCES compactions (id) ON DELETE CASCADE,
    provider          TEXT    NOT NULL,
    model             TEXT    NOT NULL,
    started_at        INTEGER NOT NULL,
    duration_ms       INTEGER NOT NULL,
    outcome           TEXT    NOT NULL CHECK (outcome IN ('ok', 'error', 'skipped_cooldown', 'skipped_window', 'skipped_budget', 'skipped_cost')),
    http_status       INTEGER NOT NULL DEFAULT 0,
    error_class       TEXT    NOT NULL DEFAULT '',
    error             TEXT    NOT NULL DEFAULT '', -- redacted
    prompt_tokens     INTEGER NOT NULL DEFAULT 0,
    completion_tokens INTEGER NOT NULL DEFAULT 0,
    usage_estimated   INTEGER NOT NULL DEFAULT 0, -- 1: the tokens were counted locally (the server sent no usage)
    cost_micros       INTEGER                     -- micro-dollars at the provider's price; NULL: no price
) STRICT;

CREATE INDEX cascade_attempts_compaction ON cascade_attempts (compaction_id);
CREATE INDEX cascade_attempts_provider ON cascade_attempts (provider, id);

-- Cooldown state per provider name, shared by every process using the file.
CREATE TABLE provider_cooldowns (
    provider             TEXT    NOT NULL PRIMARY KEY,
    cooling_until        INTEGER NOT NULL DEFAULT 0,
    consecutive_failures INTEGER NOT NULL DEFAULT 0,
    last_error           TEXT    NOT NULL DEFAULT '',
    updated_at           INTEGER NOT NULL,
    context_window       INTEGER NOT NULL DEFAULT 0, -- the window its server reported (0: not asked)
    context_window_at    INTEGER NOT NULL DEFAULT 0
) STRICT;

-- Full-text indexes over message and summary text. They read their text from the tables above
-- (external content), so the text is stored once. Summaries are indexed and unindexed by
-- triggers. Messages are indexed after the commit that appends them (see migrations/0012.sql):
-- the handle's indexer adds the messages above fts_state.indexed_id in bounded batches, each
-- in a transaction of its own that moves indexed_id, a while after appends commit (the appends
-- of a burst make one batch); a search, memctl check and a copy first index what is left, so
-- they see every message committed before they began. Deletions are unindexed by a trigger.
-- The searchable text of a message: its content, name and tool calls, the first 100,000
-- characters of them (as PostgreSQL's index): a huge message neither slows its indexing nor
-- makes a search build its snippet over megabytes.
CREATE VIEW messages_text (id, body) AS
SELECT id, substr(concat_ws(' ', content, name, tool_calls), 1, 100000) FROM messages;

CREATE VIRTUAL TABLE messages_fts USING fts5 (
    body,
    content = 'messages_text', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2'
);

-- What messages_fts holds: every message whose id is at or under indexed_id, none above it.
-- One row.
CREATE TABLE fts_state (
    id          INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    indexed_id  INTEGER NOT NULL
) STRICT;

-- A deleted message leaves the index only if it was indexed (a 'delete' of a row FTS5 never
-- indexed corrupts the index). When the newest messages are deleted, indexed_id comes down to
-- the highest id left: SQLite gives a new message the id after it, which must count as not
-- indexed.
CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, body)
    SELECT 'delete', old.id, substr(concat_ws(' ', old.content, old.name, old.tool_calls), 1, 100000)
    FROM fts_state WHERE old.id <= fts_state.indexed_id;
    UPDATE fts_state SET indexed_id = (SELECT coalesce(max(id), 0) FROM messages)
    WHERE indexed_id > (SELECT coalesce(max(id), 0) FROM messages);
END;

CREATE VIRTUAL TABLE summaries_fts USING fts5 (
    summary,
    content = 'compactions', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2'
);

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
