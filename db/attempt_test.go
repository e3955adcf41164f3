package db_test

import (
	"database/sql"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/memory"
)

// One type per record: cascade's and memory's Usage and Attempt views are db's types, so a
// value of one is a value of the other without conversion.
var (
	_ cascade.Usage   = db.Usage{}
	_ memory.Usage    = db.Usage{}
	_ cascade.Attempt = db.Attempt{}
	_ memory.Attempt  = db.AttemptView{}
)

func TestUsageOf(t *testing.T) {
	got := db.UsageOf(db.CompactionUsageRow{Requests: 3, PromptTokens: 100, CompletionTokens: 20, Estimated: 1})
	if want := (db.Usage{Requests: 3, PromptTokens: 100, CompletionTokens: 20, Estimated: true}); got != want {
		t.Fatalf("UsageOf = %+v, want %+v", got, want)
	}
	if db.UsageOf(db.CompactionUsageRow{}).Estimated {
		t.Fatal("estimated 0 decoded as true")
	}
}

func TestAttemptView(t *testing.T) {
	rows := []db.CascadeAttempt{{ID: 7, CompactionID: sql.NullInt64{Int64: 2, Valid: true}, Provider: "p", Model: "m",
		Outcome: "error", HttpStatus: 500, ErrorClass: "server", Error: "boom", DurationMs: 12, PromptTokens: 5,
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()}}
	a := db.Attempts(rows)[0]
	want := db.AttemptView{Provider: "p", Model: "m", Outcome: "error", HTTPStatus: 500, ErrorClass: "server",
		Error: "boom", DurationMs: 12}
	if got := a.View(); got != want {
		t.Fatalf("View = %+v, want %+v", got, want)
	}
	if a.CompactionID == nil || *a.CompactionID != 2 {
		t.Fatalf("compaction id = %v, want 2", a.CompactionID)
	}
}
