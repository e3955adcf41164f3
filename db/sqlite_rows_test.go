package db

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"slices"
	"testing"
)

// TestEachMessageColumnsBetween: the rows EachMessageColumnsBetween gives are those of
// ListMessageColumnsBetween, in its order, NULL columns included, on the handle's queries and
// in a transaction; fn's error ends the read.
func TestEachMessageColumnsBetween(t *testing.T) {
	ctx := context.Background()
	h := openWithThread(t, "t")
	q := h.Q()
	for seq := int64(1); seq <= 40; seq++ {
		p := InsertMessageParams{ThreadID: "t", Seq: seq, Role: "user", Raw: "{}", Tokens: 10 + seq, CreatedAt: seq}
		switch seq % 3 {
		case 0:
			p.Content = sql.NullString{String: fmt.Sprint("message ", seq), Valid: true}
		case 1:
			p.Role, p.ToolCalls = "assistant", sql.NullString{String: `[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]`, Valid: true}
		case 2:
			p.Role, p.ToolCallID, p.Name = "tool", sql.NullString{String: "c", Valid: true}, sql.NullString{String: "f", Valid: true}
			p.Content = sql.NullString{String: "", Valid: true}
		}
		if err := q.InsertMessage(ctx, p); err != nil {
			t.Fatal(err)
		}
	}
	arg := ListMessageColumnsBetweenParams{ThreadID: "t", FromSeq: 5, ToSeq: 33}
	want, err := q.ListMessageColumnsBetween(ctx, arg)
	if err != nil || len(want) != 29 {
		t.Fatalf("%d rows, %v", len(want), err)
	}
	each := func(q Querier) []ListMessageColumnsBetweenRow {
		var got []ListMessageColumnsBetweenRow
		if err := EachMessageColumnsBetween(ctx, q, arg, func(r ListMessageColumnsBetweenRow) error {
			got = append(got, r)
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		return got
	}
	if got := each(q); !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	err = h.ReadTx(ctx, func(q Querier) error {
		if got := each(q); !slices.Equal(got, want) {
			t.Errorf("in a transaction: rows %v, want %v", got, want)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	stop, n := errors.New("stop"), 0
	err = EachMessageColumnsBetween(ctx, q, arg, func(ListMessageColumnsBetweenRow) error {
		n++
		if n == 3 {
			return stop
		}
		return nil
	})
	if !errors.Is(err, stop) || n != 3 {
		t.Fatalf("after fn's error: %v, %d rows read", err, n)
	}
}
