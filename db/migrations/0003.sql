-- Schema version 3: compactions that shape the active view without a summary, or beside one
-- (strategies mask, hybrid and window, and a view fitted when summarizing failed). Keep this
-- file ASCII-only.
--
-- view is '' for a compaction whose view is its summary alone: the messages before from_seq,
-- the summary, the messages after to_seq. Otherwise it is a JSON object that says how the
-- view differs from the history up to view_seq: the compaction whose summary is in it
-- ("summary", covering from_seq..to_seq), the tool results replaced by a placeholder
-- ("masked"), the seq ranges left out ("omitted") and the results cut short ("cut").
-- Messages after view_seq are in the view as they are. view_tokens and view_messages are the
-- size of the view up to view_seq, so a thread's size is read from stored counts.
ALTER TABLE compactions ADD COLUMN view TEXT NOT NULL DEFAULT '';
ALTER TABLE compactions ADD COLUMN view_seq INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN view_tokens INTEGER NOT NULL DEFAULT 0;
ALTER TABLE compactions ADD COLUMN view_messages INTEGER NOT NULL DEFAULT 0;
