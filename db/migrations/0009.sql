-- Schema version 9: money. An attempt of a provider with a price (price_per_mtok in the
-- config) stores what its tokens cost, in micro-dollars (cost_micros; NULL: the provider has
-- no price, or no request was sent); a provider whose estimate is over the compaction's
-- max_cost is skipped with outcome skipped_cost. A thread stores what the upstream's replies
-- memctl serve stored cost at serve's upstream price (upstream_cost_micros; NULL: none
-- priced). Keep this file ASCII-only.
--
-- cascade_attempts is rebuilt (SQLite cannot change a CHECK constraint in place); no table
-- refers to it.

CREATE TABLE cascade_attempts_v9 (
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

INSERT INTO cascade_attempts_v9 (
    id, compaction_id, provider, model, started_at, duration_ms, outcome, http_status,
    error_class, error, prompt_tokens, completion_tokens, usage_estimated
) SELECT
    id, compaction_id, provider, model, started_at, duration_ms, outcome, http_status,
    error_class, error, prompt_tokens, completion_tokens, usage_estimated
FROM cascade_attempts;

DROP TABLE cascade_attempts;
ALTER TABLE cascade_attempts_v9 RENAME TO cascade_attempts;

CREATE INDEX cascade_attempts_compaction ON cascade_attempts (compaction_id);
CREATE INDEX cascade_attempts_provider ON cascade_attempts (provider, id);

ALTER TABLE threads ADD COLUMN upstream_cost_micros INTEGER;
