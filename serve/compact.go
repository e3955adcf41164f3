package serve

import (
	"context"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
)

// compactLater checks, after a turn was stored, whether the thread is due for a compaction,
// and runs it in the background: one at a time per thread, never delaying a reply. A turn
// that ends while one runs makes it check once more when it is done.
func (s *Server) compactLater(thread string) {
	st := s.state(thread)
	if lv := st.lv; lv != nil && lv.ver.Found {
		// What is kept is the thread as the reply left it: under the trigger, no compaction
		// is due (the check Compact and ShouldCompact make first), and none is looked for.
		s.mu.Lock()
		over := st.over
		s.mu.Unlock()
		// Settings that do not resolve are not checked here: the compaction reports them.
		set, err := compact.Resolve(s.Compactor.Settings, lv.ts, over)
		if err == nil && set.UnderTrigger(lv.active.Tokens) && set.CompactEveryTurns == 0 {
			return
		}
	}
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return
	}
	if st.bgRunning {
		st.bgAgain = true
		s.mu.Unlock()
		return
	}
	st.bgRunning = true
	st.users++ // the goroutine's use, dropped when it ends
	s.bg.Add(1)
	s.mu.Unlock()
	go func() {
		defer s.bg.Done()
		defer s.drop(st)
		for {
			s.compactIfDue(s.bgCtx, thread, st)
			s.mu.Lock()
			if !st.bgAgain || s.closing {
				st.bgRunning, st.bgAgain = false, false
				s.mu.Unlock()
				return
			}
			st.bgAgain = false
			s.mu.Unlock()
		}
	}()
}

func (s *Server) compactIfDue(ctx context.Context, thread string, st *threadState) {
	if err := acquire(ctx, st.compact); err != nil {
		return
	}
	defer release(st.compact)
	s.mu.Lock()
	over := st.over
	s.mu.Unlock()
	if !over.IsZero() { // the limit of the turn (token_limit auto): Compact checks it is due
		rep, err := s.Compactor.Compact(ctx, thread, compact.Options{Override: over})
		if rep.Status != compact.StatusNotNeeded {
			s.logCompaction(thread, rep, err)
		}
		return
	}
	due, err := s.Compactor.ShouldCompact(ctx, thread)
	if err != nil {
		if ctx.Err() == nil {
			s.Logger.Warn("background compaction check failed", "thread", thread, "error", err.Error())
		}
		return
	}
	if !due {
		return
	}
	rep, err := s.Compactor.Compact(ctx, thread, compact.Options{})
	s.logCompaction(thread, rep, err)
}

// logCompaction logs a compaction's outcome: its id, status and reason, its tokens (those
// appended while it ran apart), and its error as the report stores it (redacted).
func (s *Server) logCompaction(thread string, rep memory.Report, err error) {
	id := rep.ID
	if rep.Status == "" && err != nil {
		s.Logger.Warn("compaction failed", "thread", thread, "error", "the thread could not be read")
		return
	}
	s.Logger.Info("compaction", "thread", thread, "id", id, "status", rep.Status, "reason", rep.Reason,
		"tokens_before", rep.TokensBefore, "tokens_after", rep.TokensAfter, "tokens_appended", rep.TokensAppended, "error", rep.Error)
}
