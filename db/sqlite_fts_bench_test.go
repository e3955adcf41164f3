package db

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// benchRows are the messages of the recorded conversations, copied n times with the text of
// each copy made distinct: the rows an import writes.
func benchRows(tb testing.TB, copies int) []InsertMessageParams {
	files, err := filepath.Glob("../testdata/conversations/*.jsonl")
	if err != nil || len(files) == 0 {
		tb.Fatalf("no recorded conversations: %v", err)
	}
	var out []InsertMessageParams
	for k := range copies {
		for _, f := range files {
			data, err := os.ReadFile(f)
			if err != nil {
				tb.Fatal(err)
			}
			for line := range bytes.SplitSeq(data, []byte("\n")) {
				var m struct {
					Role      string          `json:"role"`
					Content   any             `json:"content"`
					ToolCalls json.RawMessage `json:"tool_calls"`
				}
				if len(bytes.TrimSpace(line)) == 0 || json.Unmarshal(line, &m) != nil {
					continue
				}
				text, _ := m.Content.(string)
				text = fmt.Sprintf("[copy %d] %s", k, text)
				p := InsertMessageParams{Role: m.Role, Content: sql.NullString{String: text, Valid: true}, Raw: string(line), Tokens: int64(len(text) / 4)}
				if len(m.ToolCalls) > 0 && string(m.ToolCalls) != "null" {
					p.ToolCalls = sql.NullString{String: string(m.ToolCalls), Valid: true}
				}
				out = append(out, p)
			}
		}
	}
	return out
}

// indexRange adds the messages from_seq..to_seq of a thread to the full-text index in one
// statement: how appends indexed before schema version 12 (the store now indexes after the
// commit, sqlite_fts.go).
const indexRange = `INSERT INTO messages_fts (rowid, body)
SELECT t.id, t.body FROM messages m JOIN messages_text t ON t.id = m.id
WHERE m.thread_id = ? AND m.seq >= ? AND m.seq <= ?`

// BenchmarkIndexMessages compares ways of building the full-text index of the messages an
// import writes in one transaction (2,040 messages, 1.4 MB, into a database that grows by as
// much per op): a trigger per row; an insert per row into the index; indexRange (one INSERT
// ... SELECT per 4 MB of messages and at the end, what Store.Import did before schema version
// 12: here one, at the end); or the 'rebuild' command at the end, which reindexes every message stored.
func BenchmarkIndexMessages(b *testing.B) {
	ctx := context.Background()
	rows := benchRows(b, 15)
	size := 0
	for _, r := range rows {
		size += len(r.Raw)
	}
	for _, way := range []string{"trigger", "per-row", "batched", "rebuild"} {
		b.Run(way, func(b *testing.B) {
			sqldb, err := OpenSQLite(ctx, filepath.Join(b.TempDir(), "fts.db"))
			if err != nil {
				b.Fatal(err)
			}
			defer sqldb.Close()
			if way == "trigger" {
				_, err := sqldb.ExecContext(ctx, `CREATE TRIGGER messages_fts_insert AFTER INSERT ON messages BEGIN
    INSERT INTO messages_fts (rowid, body) VALUES (new.id, concat_ws(' ', new.content, new.name, new.tool_calls));
END`)
				if err != nil {
					b.Fatal(err)
				}
			}
			q, err := Prepare(ctx, sqldb)
			if err != nil {
				b.Fatal(err)
			}
			defer q.Close()
			perRow, err := sqldb.PrepareContext(ctx, `INSERT INTO messages_fts (rowid, body) VALUES (?, ?)`)
			if err != nil {
				b.Fatal(err)
			}
			defer perRow.Close()
			b.SetBytes(int64(size))
			b.ResetTimer()
			for i := range b.N {
				thread := fmt.Sprintf("t%d", i)
				err := SQLiteTx(ctx, sqldb, func(tx *sql.Tx) error {
					q := q.WithTx(tx)
					if _, err := q.InsertThread(ctx, InsertThreadParams{ID: thread, Model: "gpt-4o", Encoding: "o200k_base", Metadata: "{}", Settings: "{}"}); err != nil {
						return err
					}
					var id int64
					if err := tx.QueryRowContext(ctx, "SELECT coalesce(max(id), 0) FROM messages").Scan(&id); err != nil {
						return err
					}
					pending, from := 0, 1
					for j, r := range rows {
						r.ThreadID, r.Seq = thread, int64(j+1)
						if err := q.InsertMessage(ctx, r); err != nil {
							return err
						}
						id++
						switch way {
						case "per-row":
							body := strings.Join([]string{r.Content.String, r.ToolCalls.String}, " ")
							if _, err := tx.StmtContext(ctx, perRow).ExecContext(ctx, id, body); err != nil {
								return err
							}
						case "batched":
							if pending += len(r.Raw); pending >= 4<<20 {
								if _, err := tx.ExecContext(ctx, indexRange, thread, from, r.Seq); err != nil {
									return err
								}
								pending, from = 0, j+2
							}
						}
					}
					switch way {
					case "batched":
						_, err := tx.ExecContext(ctx, indexRange, thread, from, len(rows))
						return err
					case "rebuild":
						_, err := tx.ExecContext(ctx, "INSERT INTO messages_fts (messages_fts) VALUES ('rebuild')")
						return err
					}
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
