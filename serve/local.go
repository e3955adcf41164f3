package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
	"github.com/memcascade/memcascade/tokencount"
)

// local answers a route of dialect d that serve answers itself (see dialect.Local).
func (s *Server) local(d dialect.Dialect, kind dialect.LocalKind) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		ctx := r.Context()
		thread, t, free, ok := s.readTurn(w, r, d)
		if !ok {
			return
		}
		defer free()
		st := s.hold(thread)
		defer s.drop(st)
		if kind == dialect.Compact {
			s.keepTarget(st, d, t, r)
		}
		if err := acquire(ctx, st.turn); err != nil {
			return
		}
		defer release(st.turn)
		var tokens int
		var summary string
		var err error
		switch kind {
		case dialect.CountTokens:
			tokens, err = s.countTurn(ctx, st, t)
		case dialect.Compact:
			summary, err = s.compactTurn(ctx, w, st, t)
		default:
			err = fmt.Errorf("local route of kind %d: unknown", kind)
		}
		if err != nil {
			var c *Conflict
			if errors.As(err, &c) {
				refuseConflict(w, d, t, c)
				return
			}
			errorIn(w, d, err)
			return
		}
		b, err := d.LocalAnswer(kind, t, tokens, summary)
		if err != nil {
			errorIn(w, d, err)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusOK)
		w.Write(b)
	}
}

// countTurn is the size of the prompt turn t would send: the thread's active context with the
// turn's new messages, and its tools; the turn's own messages when the thread does not exist
// or they do not follow its history. Nothing is stored.
func (s *Server) countTurn(ctx context.Context, st *threadState, t dialect.Turn) (int, error) {
	lv, err := s.live(ctx, st, true)
	if err != nil {
		return 0, err
	}
	if lv.ver.Found {
		counter, err := s.Store.Counter(lv.active.Thread.Encoding)
		if err != nil {
			return 0, err
		}
		if fresh, c := Reconcile(lv.hist, t.Messages); c == nil {
			n := lv.active.Tokens + s.countTools(counter, t)
			for _, m := range fresh {
				n += counter.CountMessage(m)
			}
			return n, nil
		}
		return counter.CountMessages(t.Messages) + s.countTools(counter, t), nil
	}
	enc, _, err := tokencount.ResolveEncoding(t.Model, "")
	if err != nil {
		return 0, err
	}
	counter, err := s.Store.Counter(enc)
	if err != nil {
		return 0, err
	}
	return counter.CountMessages(t.Messages) + s.countTools(counter, t), nil
}

// compactTurn stores turn t's new messages as a turn's are, compacts the thread (forced) and
// returns the summary that covers its history (the newest one; "" when the compaction left no
// summary, as a mask or window strategy does).
func (s *Server) compactTurn(ctx context.Context, w http.ResponseWriter, st *threadState, t dialect.Turn) (string, error) {
	s.keepSent(st, t.Sent, t.Prev, t.Taken)
	if err := s.appendNew(ctx, st, t); err != nil {
		return "", err
	}
	rep, err := s.Compactor.Compact(ctx, st.thread, compact.Options{Force: true})
	s.logCompaction(st.thread, rep, err)
	if rep.ID != 0 {
		w.Header().Set(CompactionHeader, fmt.Sprint(rep.ID))
		w.Header().Set(CompactionStatusHeader, string(rep.Status))
	}
	if err != nil {
		return "", err
	}
	a, err := s.Store.Active(ctx, st.thread, memory.ReadOptions{Light: true})
	if err != nil {
		return "", err
	}
	for _, e := range a.Entries {
		if e.CompactionID != 0 {
			return e.Text(), nil
		}
	}
	return "", nil
}
