package main

import (
	"context"
	"fmt"
	"slices"

	"github.com/memcascade/memcascade/memory"
)

// coverage is a thread's whole history with the compactions that cover it: what each message
// is now, in the light of the compactions applied to the thread.
type coverage struct {
	Messages []memory.Entry
	// Covering are the applied and reverted compactions, oldest first.
	Covering []memory.Report
	// Current is the applied compaction whose summary or view is in the active context (nil:
	// none).
	Current *memory.Report
}

// readCoverage reads a thread's history and the compactions that cover it.
func readCoverage(ctx context.Context, s *memory.Store, thread string) (coverage, error) {
	hist, err := s.History(ctx, thread)
	if err != nil {
		return coverage{}, err
	}
	reps, err := s.Reports(ctx, thread, 1<<20)
	if err != nil {
		return coverage{}, err
	}
	cv := coverage{Messages: hist}
	for i := len(reps) - 1; i >= 0; i-- {
		if r := reps[i]; r.Status == memory.StatusApplied || r.Status == memory.StatusReverted {
			cv.Covering = append(cv.Covering, r)
		}
	}
	for i := range cv.Covering {
		if cv.Covering[i].Status == memory.StatusApplied && !cv.Covering[i].Superseded {
			cv.Current = &cv.Covering[i]
		}
	}
	return cv, nil
}

// startingAt returns the covering compactions whose summary starts at message seq.
func (cv coverage) startingAt(seq int64) []memory.Report {
	var out []memory.Report
	for _, r := range cv.Covering {
		if r.FromSeq == seq {
			out = append(out, r)
		}
	}
	return out
}

// label says what the current compaction does to message seq: masked, cut or left out by its
// view (mask, window, fit), or archived (covered by its summary); "" when the message is in
// the active context as it was appended.
func (cv coverage) label(seq int64) string {
	cur := cv.Current
	if cur == nil {
		return ""
	}
	if v := cur.View; v != nil {
		switch {
		case slices.Contains(v.Masked, seq):
			return fmt.Sprintf("masked by compaction %d (%s): a placeholder in the active context", cur.ID, cur.Strategy)
		case slices.Contains(v.Cut, seq):
			return fmt.Sprintf("cut by compaction %d (%s): shortened in the active context", cur.ID, cur.Strategy)
		case slices.ContainsFunc(v.Omitted, func(r memory.SeqRange) bool { return seq >= r[0] && seq <= r[1] }):
			return fmt.Sprintf("left out of the active context by compaction %d (%s)", cur.ID, cur.Strategy)
		}
		for _, r := range v.Summaries {
			if seq >= r.From && seq <= r.To {
				return fmt.Sprintf("archived: covered by compaction %d", r.ID)
			}
		}
	}
	if seq >= cur.FromSeq && seq <= cur.ToSeq {
		return fmt.Sprintf("archived: covered by compaction %d", cur.ID)
	}
	return ""
}

// coverState says what a covering compaction is now: current, superseded or reverted.
func coverState(r memory.Report) string {
	switch {
	case r.Status == memory.StatusReverted:
		return "reverted"
	case r.Superseded:
		return "superseded"
	}
	return "current"
}
