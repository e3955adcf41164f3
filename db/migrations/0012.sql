-- Schema version 12: new messages are indexed for search after the commit that appends them,
-- in batches, not in that transaction (at every commit FTS5 flushed its pending terms and
-- merged segments: a large part of an append's cost). fts_state records what is indexed: every
-- message whose id is at or under indexed_id is in messages_fts, none above it is. Every
-- message of a database migrated from version 11 is indexed already. The delete trigger removes
-- from the index only a message that was indexed (a 'delete' of a row FTS5 never indexed
-- corrupts the index), and lowers indexed_id when the newest messages are deleted, as SQLite
-- gives a new message the id after the highest left. Keep this file ASCII-only.

CREATE TABLE fts_state (
    id          INTEGER NOT NULL PRIMARY KEY CHECK (id = 1),
    indexed_id  INTEGER NOT NULL
) STRICT;

INSERT INTO fts_state (id, indexed_id) SELECT 1, coalesce(max(id), 0) FROM messages;

DROP TRIGGER messages_fts_delete;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, body)
    SELECT 'delete', old.id, substr(concat_ws(' ', old.content, old.name, old.tool_calls), 1, 100000)
    FROM fts_state WHERE old.id <= fts_state.indexed_id;
    UPDATE fts_state SET indexed_id = (SELECT coalesce(max(id), 0) FROM messages)
    WHERE indexed_id > (SELECT coalesce(max(id), 0) FROM messages);
END;
