-- Schema version 10: the full-text index holds the first 100,000 characters of a message's
-- searchable text, as PostgreSQL's does. A message of 50 MB made its append index every word
-- of it, and a search whose words matched it build a snippet over all of it (one query ran
-- for over 20 minutes); both backends now index, and find, the same text. The index is rebuilt
-- from the bounded text, and the delete trigger removes exactly what was indexed. Keep this
-- file ASCII-only.

DROP TRIGGER messages_fts_delete;
DROP VIEW messages_text;

CREATE VIEW messages_text (id, body) AS
SELECT id, substr(concat_ws(' ', content, name, tool_calls), 1, 100000) FROM messages;

CREATE TRIGGER messages_fts_delete AFTER DELETE ON messages BEGIN
    INSERT INTO messages_fts (messages_fts, rowid, body)
    VALUES ('delete', old.id, substr(concat_ws(' ', old.content, old.name, old.tool_calls), 1, 100000));
END;

INSERT INTO messages_fts (messages_fts) VALUES ('rebuild');
