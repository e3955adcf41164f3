package memory

import (
	"context"
	"fmt"
	"time"

	"github.com/memcascade/memcascade/db"
)

// PruneOptions say what Prune deletes.
type PruneOptions struct {
	// OlderThan: only what settled (a report) or started (an attempt) longer ago than this; 0
	// means everything up to now.
	OlderThan time.Duration
	// DryRun lists what would be deleted and deletes nothing.
	DryRun bool
}

// PrunedReport is one compaction report Prune deleted (or would delete).
type PrunedReport struct {
	ID        int64     `json:"id"`
	Thread    string    `json:"thread"`
	Status    string    `json:"status"`
	UpdatedAt time.Time `json:"updated_at"`
	// Attempts is the number of provider attempts deleted with the report.
	Attempts int64 `json:"attempts"`
}

// PruneResult says what Prune deleted, or would delete (DryRun).
type PruneResult struct {
	Before  time.Time      `json:"before"`
	DryRun  bool           `json:"dry_run"`
	Reports []PrunedReport `json:"reports"`
	// Attempts counts every attempt row deleted: those of the reports and those made for no
	// compaction.
	Attempts int64 `json:"attempts"`
}

// Prune deletes what only grows and is no longer needed, older than opt.OlderThan: compaction
// reports that are failed, ineffective or reverted (with their attempts), and attempts made
// for no compaction. It never deletes a message, an applied or running compaction, its
// summary or its attempts, a compaction an applied or running one was planned on, or a
// thread's newest applied or ineffective compaction (automatic compaction's wait rule reads
// it): the history, the active context and every applied compaction's report stay as they
// were. Everything is deleted in one transaction.
func (s *Store) Prune(ctx context.Context, opt PruneOptions) (PruneResult, error) {
	if opt.OlderThan < 0 {
		return PruneResult{}, fmt.Errorf("prune: negative age %s", opt.OlderThan)
	}
	now := s.clock()
	before := now.Add(-opt.OlderThan)
	// 1 ms past the cutoff when it is now: what was written in this millisecond is older.
	cutoff := before.UnixMilli()
	if opt.OlderThan == 0 {
		cutoff++
	}
	var res PruneResult
	work := func(q db.Querier) error {
		res = PruneResult{Before: before.UTC(), DryRun: opt.DryRun, Reports: []PrunedReport{}}
		rows, err := q.PrunableCompactions(ctx, cutoff)
		if err != nil {
			return err
		}
		loose, err := q.CountLooseAttempts(ctx, cutoff)
		if err != nil {
			return err
		}
		res.Attempts = loose
		for _, r := range rows {
			res.Reports = append(res.Reports, PrunedReport{ID: r.ID, Thread: r.ThreadID, Status: r.Status,
				UpdatedAt: time.UnixMilli(r.UpdatedAt).UTC(), Attempts: r.Attempts})
			res.Attempts += r.Attempts
			if opt.DryRun {
				continue
			}
			if _, err := q.DeletePrunableCompaction(ctx, r.ID); err != nil {
				return err
			}
		}
		if opt.DryRun {
			return nil
		}
		_, err = q.DeleteLooseAttempts(ctx, cutoff)
		return err
	}
	var err error
	if opt.DryRun {
		err = s.h.ReadTx(ctx, work)
	} else {
		err = s.h.WithTx(ctx, work)
	}
	if err != nil {
		return PruneResult{}, fmt.Errorf("prune: %w", err)
	}
	return res, nil
}
