package db

import (
	"context"
	"database/sql"
	"path/filepath"
	"strings"
	"testing"
)

// openWithThread opens a new SQLite file, closed when the test ends, holding one empty thread
// of that name.
func openWithThread(t *testing.T, thread string) *Handle {
	t.Helper()
	ctx := context.Background()
	h, err := openSQLite(ctx, filepath.Join(t.TempDir(), "t.db"), Options{})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { h.Close() })
	if _, err := h.Q().InsertThread(ctx, InsertThreadParams{ID: thread, Model: "m", Encoding: "o200k_base", Metadata: "{}", Settings: "{}", CreatedAt: 1, UpdatedAt: 1}); err != nil {
		t.Fatal(err)
	}
	return h
}

// TestInsertLargeMessage: InsertLargeMessage stores what InsertMessage stores (a NULL text
// included), takes the values out of its argument, and leaves none handed over when the
// statement fails.
func TestInsertLargeMessage(t *testing.T) {
	ctx := context.Background()
	h := openWithThread(t, "t")
	q := h.Q()
	text := strings.Repeat("large text ", 1000)
	raw := `{"role":"user","content":"` + text + `"}`
	args := []InsertMessageParams{
		{ThreadID: "t", Seq: 1, Role: "user", Content: sql.NullString{String: text, Valid: true}, Raw: raw, Tokens: 2001, CreatedAt: 7},
		{ThreadID: "t", Seq: 2, Role: "assistant", Name: sql.NullString{String: "n", Valid: true}, ToolCalls: sql.NullString{String: "[]", Valid: true}, Raw: `{"role":"assistant","content":null}`, Tokens: 4, CreatedAt: 8},
	}
	want := make([]InsertMessageParams, len(args))
	copy(want, args)
	err := h.WithTx(ctx, func(q Querier) error {
		for i := range args {
			if err := q.(LargeMessageInserter).InsertLargeMessage(ctx, &args[i]); err != nil {
				return err
			}
			if args[i].Content.Valid || args[i].Raw != "" {
				t.Errorf("message %d: the argument still holds its text or stored JSON", i+1)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	rows, err := q.ListMessages(ctx, "t")
	if err != nil || len(rows) != len(want) {
		t.Fatalf("%d rows, %v", len(rows), err)
	}
	for i, r := range rows {
		w := want[i]
		got := InsertMessageParams{ThreadID: r.ThreadID, Seq: r.Seq, Role: r.Role, Content: r.Content, Name: r.Name, ToolCalls: r.ToolCalls, ToolCallID: r.ToolCallID, Raw: r.Raw, Tokens: r.Tokens, CreatedAt: r.CreatedAt}
		if got != w {
			t.Errorf("message %d stored as %.80v, want %.80v", i+1, got, w)
		}
	}
	// A failing statement (the seq is taken) takes nothing: the values are dropped.
	dup := InsertMessageParams{ThreadID: "t", Seq: 1, Role: "user", Content: sql.NullString{String: "x", Valid: true}, Raw: "{}", Tokens: 1, CreatedAt: 9}
	if err := q.(LargeMessageInserter).InsertLargeMessage(ctx, &dup); err == nil {
		t.Fatal("a message at a taken seq was inserted")
	}
	n := 0
	handed.Range(func(any, any) bool { n++; return true })
	if n != 0 {
		t.Errorf("%d values left handed over", n)
	}
	// memcascade_take refuses a key with no value.
	if _, err := h.DB.ExecContext(ctx, "SELECT memcascade_take(?)", int64(-1)); err == nil || !strings.Contains(err.Error(), "no value") {
		t.Errorf("memcascade_take of an unknown key: %v", err)
	}
}
