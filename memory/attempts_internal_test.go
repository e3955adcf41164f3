package memory

import (
	"database/sql"
	"testing"
	"time"

	"github.com/memcascade/memcascade/db"
)

func TestUsageFrom(t *testing.T) {
	got := usageFrom(db.CompactionUsageRow{Requests: 3, PromptTokens: 100, CompletionTokens: 20, Estimated: 1})
	if want := (Usage{Requests: 3, PromptTokens: 100, CompletionTokens: 20, Estimated: true}); got != want {
		t.Fatalf("usageFrom = %+v, want %+v", got, want)
	}
	if usageFrom(db.CompactionUsageRow{}).Estimated {
		t.Fatal("estimated 0 decoded as true")
	}
}

func TestAttemptView(t *testing.T) {
	rows := []db.CascadeAttempt{{ID: 7, CompactionID: sql.NullInt64{Int64: 2, Valid: true}, Provider: "p", Model: "m",
		Outcome: "error", HttpStatus: 500, ErrorClass: "server", Error: "boom", DurationMs: 12, PromptTokens: 5,
		StartedAt: time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC).UnixMilli()}}
	a := attemptsOf(rows)[0]
	want := AttemptView{Provider: "p", Model: "m", Outcome: "error", HTTPStatus: 500, ErrorClass: "server",
		Error: "boom", DurationMs: 12}
	if got := a.view(); got != want {
		t.Fatalf("view = %+v, want %+v", got, want)
	}
	if a.CompactionID == nil || *a.CompactionID != 2 {
		t.Fatalf("compaction id = %v, want 2", a.CompactionID)
	}
}
