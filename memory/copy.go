package memory

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/memcascade/memcascade/db"
)

// errCopyConflict: the destination of a copy already holds a thread of the source.
var errCopyConflict = errors.New("the destination already holds threads of the source")

// errCopySame: the source and the destination of a copy are the same database (invalid: the
// caller's mistake).
var errCopySame = NewError(CodeInvalid, "the source and the destination are the same database")

// Whether a copy kept the ids of the source's compactions and attempts (CopyResult).
const (
	IDsKept       = "kept"
	idsRenumbered = "renumbered"
)

// CopyResult says what Copy copied. Its JSON form is what `memctl copy --json` prints.
type CopyResult struct {
	Source      string `json:"source"`      // as db.Display shows it
	Destination string `json:"destination"` // as db.Display shows it
	Threads     int    `json:"threads"`
	Messages    int64  `json:"messages"`
	Compactions int    `json:"compactions"`
	Attempts    int    `json:"attempts"`  // the whole attempt log, attempts made for no compaction included
	Cooldowns   int    `json:"cooldowns"` // the source's provider rows, merged into the destination's
	Pins        int    `json:"pins"`
	// IDs is "kept" when every compaction and attempt has its source id in the destination
	// (then `memctl report ID` shows the same report on both), "renumbered" when either had to
	// take new ids because the destination held one of them. CompactionIDs and AttemptIDs say
	// which.
	IDs           string `json:"ids"`
	CompactionIDs string `json:"compaction_ids"`
	AttemptIDs    string `json:"attempt_ids"`
	// Renumbered maps each source compaction id to its id in the destination when the
	// compactions were renumbered (absent when kept).
	Renumbered map[int64]int64 `json:"renumbered,omitempty"`
}

// copyChunk is how many messages Copy reads from the source at once.
const copyChunk = 256

// Copy copies every thread of src into dst with all it holds: the thread rows (model,
// encoding, metadata, settings, last_seq, open calls, times), every message (same seq, raw
// JSON, tokens and created_at) and its pins, every compaction with every column (reports, summaries,
// views, leases, dropped facts, the settings it ran with), the whole attempt log (attempts of
// no compaction included) and the providers' cooldowns. src is read in one snapshot; dst is
// written in one transaction, so a failure leaves it as it was. Messages are read and written
// a chunk at a time: a thread's history is never held whole in memory.
//
// A dst that already holds a thread of src is refused (errCopyConflict, the error naming the
// first few) and left unchanged; two threads are never merged. Compaction and attempt ids are
// kept when dst holds none of them; otherwise they take new ids after dst's largest, in the
// same order (a thread's compactions stay ordered as they were), and the base_id and
// ledger_base of each compaction and the compaction_id of each attempt follow (a base_id naming
// a compaction src no longer holds becomes NULL then). A provider present in both keeps the cooldown whose
// cooling_until is later (its failure count and last error with it), and the context window
// reported last.
func Copy(ctx context.Context, src, dst *Store) (CopyResult, error) {
	res := CopyResult{Source: db.Display(src.h.Name), Destination: db.Display(dst.h.Name)}
	if same, err := src.h.Same(ctx, dst.h); err != nil || same {
		if err == nil {
			err = errCopySame
		}
		return res, fmt.Errorf("copy %s to %s: %w", res.Source, res.Destination, err)
	}
	fail := func(err error) (CopyResult, error) {
		return CopyResult{Source: res.Source, Destination: res.Destination},
			fmt.Errorf("copy %s to %s: %w", res.Source, res.Destination, err)
	}
	err := src.h.ReadTx(ctx, func(sq db.Querier) error {
		threads, err := sq.ListAllThreads(ctx)
		if err != nil {
			return fmt.Errorf("read the source's threads: %w", err)
		}
		compactions, err := sq.ListAllCompactions(ctx)
		if err != nil {
			return fmt.Errorf("read the source's compactions: %w", err)
		}
		attempts, err := sq.ListAllAttempts(ctx)
		if err != nil {
			return fmt.Errorf("read the source's attempts: %w", err)
		}
		cooldowns, err := sq.ListCooldowns(ctx)
		if err != nil {
			return fmt.Errorf("read the source's cooldowns: %w", err)
		}
		pins, err := sq.ListAllPins(ctx)
		if err != nil {
			return fmt.Errorf("read the source's pins: %w", err)
		}
		return dst.h.WithTx(ctx, func(q db.Querier) error {
			r := res
			if err := refuseTaken(ctx, q, threads, r.Destination); err != nil {
				return err
			}
			compMap, compKept, err := idMap(ctx, q.ListCompactionIDs, compactions, func(c db.Compaction) int64 { return c.ID })
			if err != nil {
				return fmt.Errorf("read the destination's compaction ids: %w", err)
			}
			attMap, attKept, err := idMap(ctx, q.ListAttemptIDs, attempts, func(a db.CascadeAttempt) int64 { return a.ID })
			if err != nil {
				return fmt.Errorf("read the destination's attempt ids: %w", err)
			}
			for _, t := range threads {
				n, err := copyThread(ctx, sq, q, t)
				if err != nil {
					return fmt.Errorf("thread %q: %w", t.ID, err)
				}
				r.Threads++
				r.Messages += n
			}
			for _, p := range pins {
				if err := q.InsertPin(ctx, db.InsertPinParams(p)); err != nil {
					return fmt.Errorf("pin of message %d of thread %q: %w", p.Seq, p.ThreadID, err)
				}
				r.Pins++
			}
			for _, c := range compactions {
				c.ID = compMap[c.ID]
				if !compKept {
					if c.BaseID.Valid {
						base, ok := compMap[c.BaseID.Int64]
						c.BaseID = sql.NullInt64{Int64: base, Valid: ok}
					}
					if c.LedgerBase.Valid {
						base, ok := compMap[c.LedgerBase.Int64]
						c.LedgerBase = sql.NullInt64{Int64: base, Valid: ok}
					}
					if c.View, err = renumberView(c.View, compMap); err != nil {
						return fmt.Errorf("compaction %d of thread %q: %w", c.ID, c.ThreadID, err)
					}
				}
				if err := q.CopyCompaction(ctx, db.CopyCompactionParams(c)); err != nil {
					return fmt.Errorf("compaction %d of thread %q: %w", c.ID, c.ThreadID, err)
				}
				r.Compactions++
			}
			for _, a := range attempts {
				old := a.ID
				a.ID = attMap[a.ID]
				if a.CompactionID.Valid {
					id, ok := compMap[a.CompactionID.Int64]
					if !ok {
						return fmt.Errorf("attempt %d: its compaction %d is not in the source", old, a.CompactionID.Int64)
					}
					a.CompactionID.Int64 = id
				}
				if err := q.CopyAttempt(ctx, db.CopyAttemptParams(a)); err != nil {
					return fmt.Errorf("attempt %d: %w", old, err)
				}
				r.Attempts++
			}
			if r.Cooldowns, err = mergeCooldowns(ctx, q, cooldowns); err != nil {
				return err
			}
			if err := q.ResetIDSequences(ctx); err != nil {
				return fmt.Errorf("move the id sequences past the copied ids: %w", err)
			}
			r.CompactionIDs, r.AttemptIDs, r.IDs = keptOr(compKept), keptOr(attKept), keptOr(compKept && attKept)
			if !compKept {
				r.Renumbered = compMap
			}
			res = r
			return nil
		})
	})
	if err == nil {
		// The messages copied are indexed for search now, not by searches to come.
		err = dst.h.IndexPending(ctx)
	}
	if err != nil {
		return fail(err)
	}
	return res, nil
}

func keptOr(kept bool) string {
	if kept {
		return IDsKept
	}
	return idsRenumbered
}

// refuseTaken returns errCopyConflict, naming the first few, when the destination holds any
// of threads.
func refuseTaken(ctx context.Context, q db.Querier, threads []db.Thread, dest string) error {
	held, err := q.ListAllThreads(ctx)
	if err != nil {
		return fmt.Errorf("read the destination's threads: %w", err)
	}
	have := make(map[string]bool, len(held))
	for _, t := range held {
		have[t.ID] = true
	}
	var taken []string
	for _, t := range threads {
		if have[t.ID] {
			taken = append(taken, fmt.Sprintf("%q", t.ID))
		}
	}
	if len(taken) == 0 {
		return nil
	}
	const shown = 5
	names := strings.Join(taken[:min(len(taken), shown)], ", ")
	if len(taken) > shown {
		names += fmt.Sprintf(" and %d more", len(taken)-shown)
	}
	return fmt.Errorf("%w: %s already holds %d of its %d threads (%s); nothing was copied",
		errCopyConflict, dest, len(taken), len(threads), names)
}

// idMap maps the source's ids (rows, oldest first) to the destination's: each to itself when
// the destination holds none of them (kept), else to the destination's largest id + 1, + 2...
// in the same order.
func idMap[R any](ctx context.Context, list func(context.Context) ([]int64, error), rows []R, id func(R) int64) (map[int64]int64, bool, error) {
	taken, err := list(ctx)
	if err != nil {
		return nil, false, err
	}
	held := make(map[int64]bool, len(taken))
	var top int64
	for _, t := range taken {
		held[t] = true
		top = max(top, t)
	}
	kept := true
	for _, r := range rows {
		if held[id(r)] {
			kept = false
			break
		}
	}
	m := make(map[int64]int64, len(rows))
	for i, r := range rows {
		if kept {
			m[id(r)] = id(r)
		} else {
			m[id(r)] = top + int64(i) + 1
		}
	}
	return m, kept, nil
}

// renumberView rewrites the summary a compaction's view names (its compaction id) to its new
// id; the rest of the view is kept as it was written.
func renumberView(text string, ids map[int64]int64) (string, error) {
	if text == "" {
		return text, nil
	}
	var v view
	if err := json.Unmarshal([]byte(text), &v); err != nil {
		return "", fmt.Errorf("stored view: %w", err)
	}
	if v.Summary == 0 && len(v.Others) == 0 {
		return text, nil
	}
	renumber := func(old int64) (int64, error) {
		id, ok := ids[old]
		if !ok {
			return 0, fmt.Errorf("its view names compaction %d, which the source does not hold", old)
		}
		return id, nil
	}
	var err error
	if v.Summary != 0 {
		if v.Summary, err = renumber(v.Summary); err != nil {
			return "", err
		}
	}
	for i := range v.Others {
		if v.Others[i].ID, err = renumber(v.Others[i].ID); err != nil {
			return "", err
		}
	}
	b, err := json.Marshal(v)
	return string(b), err
}

// copyThread copies one thread row and its messages, a chunk at a time (they are indexed for
// search after the commit, as appended ones are). It returns the number of messages.
func copyThread(ctx context.Context, sq, q db.Querier, t db.Thread) (int64, error) {
	if err := q.CopyThread(ctx, db.CopyThreadParams(t)); err != nil {
		return 0, err
	}
	var n int64
	for from := int64(1); from <= t.LastSeq; from += copyChunk {
		to := min(from+copyChunk-1, t.LastSeq)
		rows, err := sq.ListMessagesBetween(ctx, db.ListMessagesBetweenParams{ThreadID: t.ID, FromSeq: from, ToSeq: to})
		if err != nil {
			return n, fmt.Errorf("read messages %d..%d: %w", from, to, err)
		}
		for _, m := range rows {
			if err := q.InsertMessage(ctx, db.InsertMessageParams{
				ThreadID: m.ThreadID, Seq: m.Seq, Role: m.Role, Content: m.Content, Name: m.Name,
				ToolCalls: m.ToolCalls, ToolCallID: m.ToolCallID, Raw: m.Raw, Tokens: m.Tokens, CreatedAt: m.CreatedAt,
			}); err != nil {
				return n, fmt.Errorf("message %d: %w", m.Seq, err)
			}
			n++
		}
		if int64(len(rows)) != to-from+1 {
			return n, fmt.Errorf("the source holds %d messages in seq %d..%d, want %d (memctl check names what is wrong)", len(rows), from, to, to-from+1)
		}
	}
	return n, nil
}

// mergeCooldowns writes the source's cooldown rows into the destination. A provider the
// destination already has keeps the cooldown whose cooling_until is later (with its failure
// count, last error and time) and the context window reported last.
func mergeCooldowns(ctx context.Context, q db.Querier, rows []db.ProviderCooldown) (int, error) {
	held, err := q.ListCooldowns(ctx)
	if err != nil {
		return 0, fmt.Errorf("read the destination's cooldowns: %w", err)
	}
	have := make(map[string]db.ProviderCooldown, len(held))
	for _, c := range held {
		have[c.Provider] = c
	}
	for _, c := range rows {
		if d, ok := have[c.Provider]; ok {
			if d.CoolingUntil >= c.CoolingUntil {
				c.CoolingUntil, c.ConsecutiveFailures, c.LastError, c.UpdatedAt = d.CoolingUntil, d.ConsecutiveFailures, d.LastError, d.UpdatedAt
			}
			if d.ContextWindowAt >= c.ContextWindowAt {
				c.ContextWindow, c.ContextWindowAt = d.ContextWindow, d.ContextWindowAt
			}
		}
		if err := q.CopyCooldown(ctx, db.CopyCooldownParams(c)); err != nil {
			return 0, fmt.Errorf("cooldown of provider %q: %w", c.Provider, err)
		}
	}
	return len(rows), nil
}
