package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
)

// startOver starts the request's thread over with the request's messages (see ResetHeader),
// in one transaction: a request whose messages are not valid changes nothing. It names the
// archive in the ArchivedHeader of w, and returns a *dialect.BadRequest naming an invalid message.
//
// kind names the archive: "reset" (asked for with ResetHeader) or "segment" (the agent
// rewrote its history: see Conflict.Rewrite).
func (s *Server) startOver(ctx context.Context, w http.ResponseWriter, st *threadState, req dialect.Turn, kind string) error {
	if id := pendingCall(nil, req.Messages); id != "" {
		return unanswered(req, id)
	}
	archive := fmt.Sprintf("%s.%s-%d", st.thread, kind, s.Store.Now().UnixMilli())
	s.keepLive(st, nil)
	res, archived, err := s.Store.StartOver(ctx, st.thread, archive, req.Messages, memory.AppendOptions{Model: req.Model})
	if err != nil {
		return messageError(err, req, len(req.Messages), 0, 0)
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
		if pr := leadingSystem(req.Messages); conflict == nil && pr > 0 && len(stored) > 0 && leadingSystem(fresh) == 0 &&
			!sameInstructions(req.Messages[:pr], currentInstructions(lv.active)) {
			// Instructions the thread had before, sent again in place of the current ones (an
			// agent back on an earlier prompt): new instructions, stored again.
			fresh = append(slices.Clip(req.Messages[:pr]), fresh...)
			known = false
		}
		if id := pendingCall(lv.hist, fresh); id != "" {
			return unanswered(req, id)
		}
		if len(fresh) == 0 {
			if known {
				s.knownSent(st, lv, req)
			}
			return nil
		}
		// New system/developer messages first, in a thread that has a history: the agent
		// changed its instructions (see Reconcile).
		prompt, results := 0, 0
		if len(stored) > 0 {
			prompt = leadingSystem(fresh)
		}
		if prompt > 0 {
			// The results of the calls the thread leaves open come first: a call is answered
			// before the conversation moves on, the new instructions after it.
			for prompt+results < len(fresh) && fresh[prompt+results].Role == chat.RoleTool {
				results++
			}
			fresh = slices.Concat(fresh[prompt:prompt+results], fresh[:prompt], fresh[prompt+results:])
		}
		expect, opt := lv.ver, memory.AppendOptions{Model: req.Model}
		if !lv.ver.Found {
			opt.Settings = s.newSettings(ctx, lv, req.Model)
		}
		res, err := s.appendLive(ctx, st, fresh, opt, &expect)
		if errors.Is(err, memory.ErrStale) && attempt < 5 {
			continue // another process changed the thread: reconcile with what it is now
		}
		if err == nil && known && st.lv != nil {
			s.knownSent(st, st.lv, req)
		}
		if err == nil {
			s.warnNew(st.thread, res)
			if prompt > 0 {
				s.pinPrompt(ctx, st.thread, res.LastSeq-int64(len(fresh)-results), prompt)
				s.keepLive(st, nil) // the pins changed the active context
				s.unpinSummarized(ctx, st.thread)
			}
		}
		return messageError(err, req, len(fresh), prompt, results)
	}
}

// newSettings returns the settings a thread not made yet (lv) is created with by the append of
// a request for model: the window it is fitted in, recorded as the turn's fit would record it
// right after (recordWindow), in the append's transaction instead of one of its own; nil when
// the turn records none.
func (s *Server) newSettings(ctx context.Context, lv *liveState, model string) json.RawMessage {
	_, w := s.limits(ctx, lv.ts, model, 0)
	if w == nil {
		return nil
	}
	ts := lv.ts
	ts.Window = w
	if ts.Validate() != nil {
		return nil // recordWindow's save refuses it, and says why
	}
	b, err := json.Marshal(ts)
	if err != nil {
		return nil
	}
	return b
}

// knownSent records that the request's messages are, one for one, the first of the kept
// history (the whole of it then what the request appended), and keeps them as the thread's
// latest request, with the history's own messages in their place unless the dialect keeps its
// own (dialect.Sent.Own; else one copy of each message is kept, not two): the next request
// that resends them with the same bytes is compared with the history from where they end (see
// liveState.resent).
func (s *Server) knownSent(st *threadState, lv *liveState, req dialect.Turn) {
	if lv.recall {
		return // the history holds messages the agent never saw: not one for one
	}
	n := len(req.Messages)
	sent, same := *req.Sent, n
	sent.Scan = sent.Scan.Kept() // what the next request's scan needs, not this one's body
	if !sent.Own {
		// The history's own slice, capped at its length: an append to the history writes past
		// it. The request's first Taken messages are those of the request it was parsed
		// against, which the history's were: only the others are measured again.
		sent.Msgs, same = lv.hist[:n:n], req.Taken
	}
	s.mu.Lock()
	latest := st.sent == req.Sent
	s.mu.Unlock()
	if !latest {
		return // a later request of the thread came meanwhile: it is the latest
	}
	s.keepSent(st, &sent, req.Sent, same)
	lv.known, lv.knownSent = n, &sent
}

// warnNew logs the warning of an append that created its thread: the tokenizer does not
// know the request's model and counts it with another encoding (once per thread).
func (s *Server) warnNew(thread string, res memory.AppendResult) {
	if res.Warning != "" {
		s.Logger.Warn(res.Warning, "thread", thread)
	}
}

// messageError names the request's message at fault of an *InputError of an append of the
// request's last n messages, its prompt leading messages among them after the first results
// of those (see appendNew): a *dialect.BadRequest; other errors are returned as they are.
func messageError(err error, req dialect.Turn, n, prompt, results int) error {
	var ie *memory.InputError
	if !errors.As(err, &ie) {
		return err
	}
	i := len(req.Messages) - (n - prompt) + ie.Index // one of the request's new messages
	switch {
	case ie.Index >= results && ie.Index < results+prompt:
		i = ie.Index - results // its leading messages
	case ie.Index >= results+prompt:
		i -= prompt
	}
	return &dialect.BadRequest{Param: req.Param(i), Msg: fmt.Sprintf("%s: %s", req.Param(i), strings.TrimPrefix(ie.Error(), fmt.Sprintf("message %d: ", ie.Index)))}
}

// pinPrompt pins the n messages after seq after, a changed system prompt, so that the active
// context starts with the newest instructions whatever a compaction does: the pin of a
// system/developer message makes it the thread's current instructions, and the earlier ones
// (the thread's leading messages, the prompts pinned before) are superseded, the history that
// a compaction summarizes (see memory.Store.Pin). A pin refused (no room within the limit) is
// logged: the messages are stored all the same.
func (s *Server) pinPrompt(ctx context.Context, thread string, after int64, n int) {
	for i := 1; i <= n; i++ {
		if _, err := s.Compactor.Pin(ctx, thread, after+int64(i)); err != nil {
			s.Logger.Warn("the changed system prompt is stored but not pinned", "thread", thread, "seq", after+int64(i), "error", err.Error())
		} else {
			s.Logger.Info("the system prompt changed: the new one is stored and pinned", "thread", thread, "seq", after+int64(i))
		}
	}
}

// currentInstructions returns the system/developer messages an active context starts with
// that no later instructions superseded (the thread's current system prompt), as its entries.
func currentInstructions(a memory.Active) []memory.Entry {
	es := a.Entries
	n := 0
	for n < len(es) && es[n].CompactionID == 0 && !es[n].Superseded && isSystem(es[n].Message) {
		n++
	}
	return es[:n]
}

// sameInstructions reports whether msgs are, one for one, the messages of the entries es.
func sameInstructions(msgs []chat.Message, es []memory.Entry) bool {
	return slices.EqualFunc(msgs, es, func(m chat.Message, e memory.Entry) bool { return sameMessage(m, e.Message) })
}

// unpinSummarized unpins the superseded system prompts of a thread that its active context no
// longer shows: a summary holds them (see memory.Store.Pin), and the history. Their pins
// only marked them as instructions the agent replaced.
func (s *Server) unpinSummarized(ctx context.Context, thread string) {
	pins, err := s.Store.Pins(ctx, thread)
	if err != nil || len(pins) < 2 {
		return
	}
	a, err := s.Store.Active(ctx, thread, memory.ReadOptions{Light: true})
	if err != nil {
		return
	}
	for _, p := range pins {
		if !slices.ContainsFunc(a.Entries, func(e memory.Entry) bool { return e.CompactionID == 0 && e.Seq == p.Seq }) {
			if err := s.Store.Unpin(ctx, thread, p.Seq); err != nil {
				s.Logger.Warn("a summarized system prompt stays pinned", "thread", thread, "seq", p.Seq, "error", err.Error())
			}
		}
	}
}

// pendingCall returns the id of a tool call that the history then the request's new messages
// (fresh) leave unanswered at their end ("" when none): a call of the last assistant message
// with calls that only tool results follow, without a result of its own. The model cannot be
// asked to go on from there: its reply would move on past the call, which the store refuses
// (memory's callTracker), as OpenAI's and Anthropic's APIs refuse such a request.
func pendingCall(hist, fresh []chat.Message) string {
	var answered []string
	for i := len(hist) + len(fresh) - 1; i >= 0; i-- {
		var m *chat.Message
		if i < len(hist) {
			m = &hist[i]
		} else {
			m = &fresh[i-len(hist)]
		}
		switch {
		case m.Role == chat.RoleTool:
			answered = append(answered, m.ToolCallID)
			continue
		case m.Role == chat.RoleAssistant:
			for _, c := range m.ToolCalls {
				if !slices.Contains(answered, c.ID) {
					return c.ID
				}
			}
		}
		return ""
	}
	return ""
}

// unanswered is the *dialect.BadRequest of a request that leaves call id unanswered
// (pendingCall), naming the request's message that makes the call (its last message when the
// call is the thread's).
func unanswered(req dialect.Turn, id string) *dialect.BadRequest {
	i := len(req.Messages) - 1
	for j := i; j >= 0; j-- {
		if slices.ContainsFunc(req.Messages[j].ToolCalls, func(c chat.ToolCall) bool { return c.ID == id }) {
			i = j
			break
		}
	}
	return &dialect.BadRequest{Param: req.Param(i), Msg: fmt.Sprintf("%s: tool call %q has no result: every call of an assistant message must be answered "+
		"(a tool message with its tool_call_id, any content) before the model is asked to go on, as OpenAI's and Anthropic's APIs require", req.Param(i), id)}
}
