-- Schema version 8: what the upstream reported of the prompts of the replies memctl serve
-- stored, per thread: the replies counted, their prompt tokens and, of those, the tokens read
-- from the upstream's prompt cache (OpenAI's cached_tokens, Anthropic's
-- cache_read_input_tokens). Keep this file ASCII-only.

ALTER TABLE threads ADD COLUMN replies INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN prompt_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE threads ADD COLUMN cached_tokens INTEGER NOT NULL DEFAULT 0;
