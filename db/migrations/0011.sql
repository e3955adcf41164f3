-- Schema version 11: an applied summary's ledger may be stored as the difference from the
-- ledger of an older compaction of its thread, ledger_base, instead of whole: a thread's ledger
-- grows with every message it covers, and storing it whole at every compaction made the total
-- quadratic in the thread's length. NULL: the ledger column holds the whole ledger (every row
-- written before this version). Keep this file ASCII-only.

ALTER TABLE compactions ADD COLUMN ledger_base INTEGER;
