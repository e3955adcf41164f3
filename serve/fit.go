package serve

import (
	"context"
	"fmt"
	"net/http"
	"strconv"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
)

// overLimit is an active context that stays over the limit after an emergency compaction.
type overLimit struct {
	tokens, tools, budget, limit int
	why                          string
}

func (e *overLimit) Error() string {
	return fmt.Sprintf("the thread's active context is %d tokens (tools %d more): over its limit of %d (%d with the reserve) even after compaction: %s",
		e.tokens, e.tools, e.budget, e.limit, e.why)
}

// fit returns the thread's active context, compacted first (reason emergency) when it would
// not fit the thread's limit: its messages within token_limit - reserve_tokens, and with the
// request's tool definitions within token_limit.
//
// cap, when above 0, caps the limit (a compact-and-retry). It also returns the turn's
// settings and the size of the prompt it makes, messages and tools, counted here.
func (s *Server) fit(ctx context.Context, st *threadState, req dialect.Turn, cap int, h http.Header) (*liveState, compact.Settings, int, error) {
	thread := st.thread
	lv, set, over, tools, err := s.measure(ctx, st, req, cap, false)
	if err != nil {
		return nil, set, 0, err
	}
	if set.Fits(lv.active.Tokens, tools) {
		return lv, set, lv.active.Tokens + tools, nil
	}
	if err := acquire(ctx, st.compact); err != nil { // a background compaction may be running
		return nil, set, 0, err
	}
	defer release(st.compact)
	if lv, set, over, tools, err = s.measure(ctx, st, req, cap, true); err != nil {
		return nil, set, 0, err
	} else if set.Fits(lv.active.Tokens, tools) {
		return lv, set, lv.active.Tokens + tools, nil
	}
	rep, cerr := s.Compactor.Compact(ctx, thread, compact.Options{Emergency: true, Override: over})
	s.logCompaction(thread, rep, cerr)
	if rep.ID != 0 {
		h.Set(CompactionHeader, strconv.FormatInt(rep.ID, 10))
		h.Set(CompactionStatusHeader, string(rep.Status))
	}
	if lv, set, _, tools, err = s.measure(ctx, st, req, cap, true); err != nil {
		return nil, set, 0, err
	} else if set.Fits(lv.active.Tokens, tools) {
		return lv, set, lv.active.Tokens + tools, nil
	}
	a := lv.active
	why := string(rep.Status)
	if rep.Error != "" {
		why += ": " + rep.Error
	} else if rep.Detail != "" {
		why += ": " + rep.Detail
	}
	if set.OnFailure == compact.OnFailureFit {
		why += " (even with compaction.on_failure: fit)"
	} else {
		why += "; compaction.on_failure: fit would also mask old tool results and leave the oldest messages out of what the model gets (the history keeps them)"
	}
	return nil, set, 0, &overLimit{tokens: a.Tokens, tools: tools, budget: set.Budget(), limit: set.TokenLimit, why: why}
}

// measure returns the thread's active context (the one kept, checked first with check) and
// the settings of this turn: the thread's, with the override of Server.limits (which the
// thread's background compaction uses too), merged and checked by the compactor's one rule
// (compact.Resolve); settings that do not resolve are the turn's error, naming the key.
func (s *Server) measure(ctx context.Context, st *threadState, req dialect.Turn, cap int, check bool) (*liveState, compact.Settings, compact.ThreadSettings, int, error) {
	lv, err := s.live(ctx, st, check)
	if err != nil {
		return nil, compact.Settings{}, compact.ThreadSettings{}, 0, err
	}
	if !lv.ver.Found {
		return nil, compact.Settings{}, compact.ThreadSettings{}, 0, fmt.Errorf("thread %q: %w", st.thread, memory.ErrThreadNotFound)
	}
	a := lv.active
	over, served := s.limits(ctx, lv.ts, req.Model, cap)
	if cap == 0 {
		s.recordWindow(ctx, st.thread, lv.ts, served)
	}
	s.mu.Lock()
	st.over = over
	s.mu.Unlock()
	set, err := compact.Resolve(s.Compactor.Settings, lv.ts, over)
	if err != nil {
		return nil, compact.Settings{}, over, 0, fmt.Errorf("thread %q: %w", st.thread, err)
	}
	counter, err := s.Store.Counter(a.Thread.Encoding)
	if err != nil {
		return nil, set, over, 0, err
	}
	return lv, set, over, s.countTools(counter, req), nil
}
