package memory

import (
	"context"
	"time"

	"github.com/memcascade/memcascade/db"
)

// Recent is a compaction as a breaker weighs it (compact's): its status, the context it
// started from, the limit, reserve and ratios it ran with, and its error as stored (redacted).
type Recent struct {
	ID           int64
	Status       Status
	TokensBefore int
	Error        string
	CreatedAt    time.Time
	Limits
}

// Recent returns the newest n compactions of a thread, newest first (fewer when it has fewer).
// It reads the rows only: no usage, no attempt.
func (c Compactions) Recent(ctx context.Context, thread string, n int) ([]Recent, error) {
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
	out := make([]Recent, len(rows))
	for i, r := range rows {
		out[i] = Recent{ID: r.ID, Status: Status(r.Status), TokensBefore: int(r.TokensBefore), Error: r.Error,
			CreatedAt: time.UnixMilli(r.CreatedAt).UTC(),
			Limits: Limits{TokenLimit: int(r.TokenLimit), ReserveTokens: int(r.ReserveTokens),
				TargetRatio: r.TargetRatio, TriggerRatio: r.TriggerRatio}}
	}
	return out, nil
}
