package memory

import (
	"context"
	"time"

	"github.com/memcascade/memcascade/db"
)

// Outcome is a compaction as automatic compaction weighs it (compact's wait rule and
// breaker; Compactions.LatestSettled and Compactions.Recent): its status, the context it
// started from, the newest message it saw, the limit, reserve and ratios it ran with, and its
// error as stored (redacted).
type Outcome struct {
	ID           int64
	Status       Status
	TokensBefore int
	LastSeq      int64
	Error        string
	CreatedAt    time.Time
	Limits
}

// outcomeOf is the outcome of compaction row r.
func outcomeOf(r db.Compaction) Outcome {
	return Outcome{ID: r.ID, Status: Status(r.Status), TokensBefore: int(r.TokensBefore), LastSeq: r.LastSeq,
		Error: r.Error, CreatedAt: time.UnixMilli(r.CreatedAt).UTC(),
		Limits: Limits{TokenLimit: int(r.TokenLimit), ReserveTokens: int(r.ReserveTokens),
			TargetRatio: r.TargetRatio, TriggerRatio: r.TriggerRatio}}
}

// Recent returns the newest n compactions of a thread, newest first (fewer when it has fewer).
// It reads the rows only: no usage, no attempt.
func (c Compactions) Recent(ctx context.Context, thread string, n int) ([]Outcome, error) {
	if n <= 0 || thread == "" { // "" would list every thread's
		return nil, nil
	}
	var rows []db.Compaction
	err := c.s.h.ReadTx(ctx, func(q db.Querier) error {
		var err error
		rows, err = q.ListCompactions(ctx, db.ListCompactionsParams{ThreadID: thread, MaxRows: int64(n)})
		return err
	})
	if err != nil {
		return nil, err
	}
	out := make([]Outcome, len(rows))
	for i, r := range rows {
		out[i] = outcomeOf(r)
	}
	return out, nil
}
