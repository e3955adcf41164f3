-- Schema version 5: an applied summary stores the ledger of what it covers (a JSON array of
-- facts and actions of the original messages), so that a later compaction folding the summary
-- in checks against the original messages' facts, never a re-reading of the summary's text.
-- Rows written before have none (''): their summary's text is read instead. Keep this file
-- ASCII-only.

ALTER TABLE compactions ADD COLUMN ledger TEXT NOT NULL DEFAULT '';
