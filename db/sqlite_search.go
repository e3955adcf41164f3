package db

import (
	"context"
	"strings"
)

// ftsQuery turns search text into an FTS5 query that requires every word of SearchTerms: each
// word is a quoted phrase (inner quotes doubled), so no user text is read as FTS5 syntax; a
// prefix is the phrase followed by *. "" when there is no word. (FTS5 reads a query string only
// up to its first NUL, which would leave a phrase unterminated: SearchTerms splits there.)
func ftsQuery(text string) string {
	var parts []string
	for _, t := range SearchTerms(text) {
		phrase := `"` + strings.ReplaceAll(t.Word, `"`, `""`) + `"`
		if t.Prefix {
			phrase += "*"
		}
		parts = append(parts, phrase)
	}
	return strings.Join(parts, " ")
}

// A thread's search on SQLite. FTS5's bm25 weighs each word by how many rows of the whole index
// hold it, and counts them by reading the word's every row: a search scoped to one thread of a
// large database read the hits of all threads (and, when threads append in turns, the thread's
// rowid range holds the others' rows too). So a thread's search ranks among the thread's own
// rows: it indexes the thread's text in a temporary FTS5 table of the connection (same
// tokenizer, so the same rows match as in the thread's part of a global search), ranks there
// with bm25 over the thread's own statistics (its rows, their lengths, the rows holding each
// word), and empties the table. Its cost is the thread's text, whatever the rest of the database
// holds. When the thread is the database's only thread, the database's index holds exactly the
// thread's rows, so its bm25 is the thread's already: the search runs there, at the cost of its
// hits.

// The temporary index of a thread's search, in the connection's temp schema: made on the
// connection's first thread search and kept (making or dropping a table changes the schema,
// which expires the connection's prepared statements: SQLite prepares each again at its next
// use), filled with the thread's rows for one search and emptied after it ('delete-all',
// which reads no text: the index reads its text from a view of the tables). One search runs
// at a time on a connection; a read transaction that fills it and is rolled back (an error)
// leaves it empty as well.
const (
	threadMessagesFTS  = "temp.memcascade_thread_messages"
	threadSummariesFTS = "temp.memcascade_thread_summaries"
)

// soleThread reports whether the thread is the only thread with messages (summaries: with
// compactions that hold a summary) in the database.
const soleThreadMessages = `SELECT NOT EXISTS (SELECT 1 FROM messages WHERE thread_id < ?1)
   AND NOT EXISTS (SELECT 1 FROM messages WHERE thread_id > ?1)`

const soleThreadSummaries = `SELECT NOT EXISTS (SELECT 1 FROM compactions WHERE thread_id < ?1 AND summary IS NOT NULL)
   AND NOT EXISTS (SELECT 1 FROM compactions WHERE thread_id > ?1 AND summary IS NOT NULL)`

// threadFTSMake are the statements that make the temporary indexes (each a no-op when it is
// there). The text of the messages is that of messages_text, and the tokenizer that of
// messages_fts and summaries_fts (schema.sql).
var threadFTSMake = []string{
	`CREATE TEMP VIEW IF NOT EXISTS memcascade_thread_messages_text (id, body) AS SELECT id, body FROM main.messages_text`,
	`CREATE VIRTUAL TABLE IF NOT EXISTS temp.memcascade_thread_messages USING fts5 (body,
    content = 'memcascade_thread_messages_text', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2')`,
	`CREATE TEMP VIEW IF NOT EXISTS memcascade_thread_summaries_text (id, body) AS SELECT id, summary FROM main.compactions`,
	`CREATE VIRTUAL TABLE IF NOT EXISTS temp.memcascade_thread_summaries USING fts5 (body,
    content = 'memcascade_thread_summaries_text', content_rowid = 'id', tokenize = 'unicode61 remove_diacritics 2')`,
}

// threadFTSFill makes the temporary indexes if need be and fills table by fill (which binds
// the thread as ?1); the caller empties it with threadFTSEmpty.
func threadFTSFill(ctx context.Context, tx DBTX, table, fill, thread string) error {
	var made bool
	if err := tx.QueryRowContext(ctx, "SELECT EXISTS (SELECT 1 FROM temp.sqlite_schema WHERE name = 'memcascade_thread_summaries')").Scan(&made); err != nil {
		return err
	}
	if !made {
		for _, stmt := range threadFTSMake {
			if _, err := tx.ExecContext(ctx, stmt); err != nil {
				return err
			}
		}
	}
	_, err := tx.ExecContext(ctx, "INSERT INTO "+table+" (rowid, body) "+fill, thread)
	return err
}

func threadFTSEmpty(ctx context.Context, tx DBTX, table string) error {
	name := strings.TrimPrefix(table, "temp.")
	_, err := tx.ExecContext(ctx, "INSERT INTO "+table+" ("+name+") VALUES ('delete-all')")
	return err
}

// searchThreadMessagesSQLite is SearchMessages for arg.ThreadID, ranked among the thread's own
// messages. The rows, snippets and archived flags are those SearchMessages gives for the thread.
func searchThreadMessagesSQLite(ctx context.Context, q Querier, arg SearchMessagesParams) (_ []SearchMessagesRow, err error) {
	qs, ok := q.(*Queries)
	if !ok { // not the SQLite queries: no connection to make the table on
		return q.SearchMessages(ctx, arg)
	}
	tx := qs.db
	var sole bool
	if err := tx.QueryRowContext(ctx, soleThreadMessages, arg.ThreadID).Scan(&sole); err != nil {
		return nil, err
	}
	if sole {
		return q.SearchMessages(ctx, arg)
	}
	if err := threadFTSFill(ctx, tx, threadMessagesFTS,
		"SELECT t.id, t.body FROM main.messages m JOIN main.messages_text t ON t.id = m.id WHERE m.thread_id = ?1", arg.ThreadID); err != nil {
		return nil, err
	}
	defer func() {
		if e := threadFTSEmpty(ctx, tx, threadMessagesFTS); err == nil && e != nil {
			err = e
		}
	}()
	// The archived flag as in SearchMessages (queries/messages.sql).
	rows, err := tx.QueryContext(ctx, `WITH hits AS (
    SELECT m.id, m.seq, bm25(memcascade_thread_messages) AS score
    FROM `+threadMessagesFTS+` f
    JOIN messages m ON m.id = f.rowid
    WHERE f.body MATCH ?1
    ORDER BY score, m.seq
    LIMIT ?2
)
SELECT m.thread_id, m.seq, m.role,
       CAST(snippet(memcascade_thread_messages, 0, CAST(?3 AS TEXT), CAST(?4 AS TEXT), '...', 16) AS TEXT) AS snippet,
       CAST(EXISTS (
           SELECT 1 FROM compactions c
           WHERE c.id = (SELECT max(c2.id) FROM compactions c2
                         WHERE c2.thread_id = m.thread_id AND c2.status = 'applied')
             AND (m.seq BETWEEN c.from_seq AND c.to_seq
                  OR (c.view <> '' AND m.seq <= c.view_seq AND (
                      EXISTS (SELECT 1 FROM json_each(c.view, '$.omitted') o
                              WHERE m.seq BETWEEN json_extract(o.value, '$[0]') AND json_extract(o.value, '$[1]'))
                      OR EXISTS (SELECT 1 FROM json_each(c.view, '$.masked') k
                                 WHERE json_extract(k.value, '$.seq') = m.seq))))
       ) AS INTEGER) AS archived
FROM hits h
JOIN `+threadMessagesFTS+` ON memcascade_thread_messages.rowid = h.id
JOIN messages m ON m.id = h.id
WHERE memcascade_thread_messages.body MATCH ?1
ORDER BY h.score, h.seq`, arg.Query, arg.MaxRows, arg.MarkOpen, arg.MarkClose)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SearchMessagesRow
	for rows.Next() {
		var r SearchMessagesRow
		if err := rows.Scan(&r.ThreadID, &r.Seq, &r.Role, &r.Snippet, &r.Archived); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, rows.Close()
}

// searchThreadSummariesSQLite is SearchSummaries for arg.ThreadID, ranked among the thread's own
// summaries.
func searchThreadSummariesSQLite(ctx context.Context, q Querier, arg SearchSummariesParams) (_ []SearchSummariesRow, err error) {
	qs, ok := q.(*Queries)
	if !ok { // not the SQLite queries: no connection to make the table on
		return q.SearchSummaries(ctx, arg)
	}
	tx := qs.db
	var sole bool
	if err := tx.QueryRowContext(ctx, soleThreadSummaries, arg.ThreadID).Scan(&sole); err != nil {
		return nil, err
	}
	if sole {
		return q.SearchSummaries(ctx, arg)
	}
	if err := threadFTSFill(ctx, tx, threadSummariesFTS,
		"SELECT id, summary FROM main.compactions WHERE thread_id = ?1 AND summary IS NOT NULL", arg.ThreadID); err != nil {
		return nil, err
	}
	defer func() {
		if e := threadFTSEmpty(ctx, tx, threadSummariesFTS); err == nil && e != nil {
			err = e
		}
	}()
	// The columns and the superseded flag as in SearchSummaries (queries/messages.sql).
	rows, err := tx.QueryContext(ctx, `SELECT c.id, c.thread_id, c.to_seq, c.summary_role, c.status,
       CAST(snippet(memcascade_thread_summaries, 0, CAST(?3 AS TEXT), CAST(?4 AS TEXT), '...', 16) AS TEXT) AS snippet,
       CAST(c.id <> coalesce((SELECT max(c2.id) FROM compactions c2
                              WHERE c2.thread_id = c.thread_id AND c2.status = 'applied'), 0) AS INTEGER) AS superseded
FROM `+threadSummariesFTS+`
JOIN compactions c ON c.id = memcascade_thread_summaries.rowid
WHERE memcascade_thread_summaries.body MATCH ?1
ORDER BY bm25(memcascade_thread_summaries), c.id
LIMIT ?2`, arg.Query, arg.MaxRows, arg.MarkOpen, arg.MarkClose)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []SearchSummariesRow
	for rows.Next() {
		var r SearchSummariesRow
		if err := rows.Scan(&r.ID, &r.ThreadID, &r.ToSeq, &r.SummaryRole, &r.Status, &r.Snippet, &r.Superseded); err != nil {
			return nil, err
		}
		out = append(out, r)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	return out, rows.Close()
}
