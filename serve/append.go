package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
)

// startOver starts the request's thread over with the request's messages (see ResetHeader),
// in one transaction: a request whose messages are not valid changes nothing. It names the
// archive in the ArchivedHeader of w, and returns a *dialect.BadRequest naming an invalid message.
func (s *Server) startOver(ctx context.Context, w http.ResponseWriter, st *threadState, req dialect.Turn) error {
	archive := fmt.Sprintf("%s.reset-%d", st.thread, s.Store.Now().UnixMilli())
	s.keepLive(st, nil)
	res, archived, err := s.Store.StartOver(ctx, st.thread, archive, req.Messages, memory.AppendOptions{Model: req.Model})
	if err != nil {
		return messageError(err, req, len(req.Messages), 0)
	}
	s.warnNew(st.thread, res)
	if archived {
		w.Header().Set(ArchivedHeader, archive)
		s.Logger.Info("thread started over", "thread", st.thread, "archived_as", archive)
	}
	return nil
}

// appendNew appends the request's messages that the thread does not hold yet (see
// Reconcile), reconciled with the history the server keeps: the append is made only if the
// thread is still what was kept, else it is read again and the request reconciled anew. It
// returns a *Conflict, or a *dialect.BadRequest naming an invalid message.
func (s *Server) appendNew(ctx context.Context, st *threadState, req dialect.Turn) error {
	for attempt := 0; ; attempt++ {
		// The kept state is trusted first: the append checks it. A request that appends
		// nothing, or that conflicts, is checked against the thread as it is.
		kept := st.lv != nil
		lv, err := s.live(ctx, st, attempt > 0)
		if err != nil {
			return err
		}
		stored := lv.hist
		if lv.recall {
			stored = withoutRecall(lv.hist) // the agent never saw the proxy's recall turns
		}
		fresh, fast := lv.resent(req)
		var conflict *Conflict
		if !fast {
			fresh, conflict = Reconcile(stored, req.Messages)
		}
		if (conflict != nil || len(fresh) == 0) && attempt == 0 && kept {
			continue // check the version first
		}
		known := fast || len(req.Messages) == len(stored)+len(fresh) && samePrefix(req.Messages, stored)
		if conflict != nil {
			return conflict
		}
		if len(fresh) == 0 {
			if known {
				s.knownSent(st, lv, req)
			}
			return nil
		}
		// New system/developer messages first, in a thread that has a history: the agent
		// changed its instructions (see Reconcile).
		prompt := 0
		if len(stored) > 0 {
			prompt = leadingSystem(fresh)
		}
		expect := lv.ver
		res, err := s.appendLive(ctx, st, fresh, memory.AppendOptions{Model: req.Model}, &expect)
		if errors.Is(err, memory.ErrStale) && attempt < 5 {
			continue // another process changed the thread: reconcile with what it is now
		}
		if err == nil && known && st.lv != nil {
			s.knownSent(st, st.lv, req)
		}
		if err == nil {
			s.warnNew(st.thread, res)
			if prompt > 0 {
				s.pinPrompt(ctx, st.thread, res.LastSeq-int64(len(fresh)), prompt)
				s.keepLive(st, nil) // the pins changed the active context
			}
		}
		return messageError(err, req, len(fresh), prompt)
	}
}

// knownSent records that the request's messages are, one for one, the first of the kept
// history (the whole of it then what the request appended), and keeps them as the thread's
// latest request with the history's own messages in their place (one copy of each message is
// kept, not two): the next request that resends them with the same bytes is compared with the
// history from where they end (see liveState.resent).
func (s *Server) knownSent(st *threadState, lv *liveState, req dialect.Turn) {
	if lv.recall {
		return // the history holds messages the agent never saw: not one for one
	}
	// The history's own slice, capped at its length: an append to the history writes past it.
	msgs := lv.hist[:len(req.Messages):len(req.Messages)]
	sent := &dialect.Sent{Hashes: req.Sent.Hashes, Msgs: msgs, ToolsHash: req.Sent.ToolsHash, Tools: req.Sent.Tools}
	s.mu.Lock()
	latest := st.sent == req.Sent
	s.mu.Unlock()
	if !latest {
		return // a later request of the thread came meanwhile: it is the latest
	}
	s.keepSent(st, sent)
	lv.known, lv.knownSent = len(msgs), sent
}

// warnNew logs the warning of an append that created its thread: the tokenizer does not
// know the request's model and counts it with another encoding (once per thread).
func (s *Server) warnNew(thread string, res memory.AppendResult) {
	if res.Warning != "" {
		s.Logger.Warn(res.Warning, "thread", thread)
	}
}

// messageError names the request's message at fault of an *InputError of an append of the
// request's last n messages, the first prompt of which are its leading messages: a
// *dialect.BadRequest; other errors are returned as they are.
func messageError(err error, req dialect.Turn, n, prompt int) error {
	var ie *memory.InputError
	if !errors.As(err, &ie) {
		return err
	}
	i := len(req.Messages) - n + ie.Index
	if ie.Index < prompt {
		i = ie.Index
	}
	p := req.Param(i)
	return &dialect.BadRequest{Param: p, Msg: p + ": " + strings.TrimPrefix(ie.Error(), fmt.Sprintf("message %d: ", ie.Index))}
}

// pinPrompt pins the n messages after seq after, a changed system prompt, so that the active
// context keeps the newest instructions whatever a compaction does (the earlier ones stay in
// the history, and as the thread's leading messages). A pin refused (no room within the limit)
// is logged: the messages are stored all the same.
func (s *Server) pinPrompt(ctx context.Context, thread string, after int64, n int) {
	for i := 1; i <= n; i++ {
		if _, err := s.Compactor.Pin(ctx, thread, after+int64(i)); err != nil {
			s.Logger.Warn("the changed system prompt is stored but not pinned", "thread", thread, "seq", after+int64(i), "error", err.Error())
		} else {
			s.Logger.Info("the system prompt changed: the new one is stored and pinned", "thread", thread, "seq", after+int64(i))
		}
	}
}
