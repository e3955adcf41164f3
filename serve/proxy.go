package serve

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
)

// ResetHeader, set to "1" on a chat completions request, starts its thread over: the thread's
// history is first copied, as appended, to a new thread named THREAD.reset-UNIXMILLI (named in
// the response header ArchivedHeader), then the thread is deleted with its compaction
// reports, and the request's messages become its new history. Nothing stored is lost: the
// copy is written before the deletion.
const (
	ResetHeader    = "X-Memctl-Reset"
	ArchivedHeader = "X-Memctl-Archived-As"
)

// readTurn reads a request of dialect d: its thread (the path's, X-Memctl-Thread, or the
// dialect's own session header) and its body, parsed by d. It writes the error itself and
// returns ok false; free gives the body's bytes back.
func (s *Server) readTurn(w http.ResponseWriter, r *http.Request, d dialect.Dialect) (thread string, t dialect.Turn, free func(), ok bool) {
	thread = r.PathValue("thread")
	if thread == "" {
		if thread = r.Header.Get(ThreadHeader); thread == "" {
			thread = d.Thread(r)
		}
		if thread == "" {
			writeCodeIn(w, d, memory.CodeInvalid, "missing_thread",
				"name the thread: in the header "+ThreadHeader+", or in the base URL /t/THREAD/v1", "")
			return "", t, nil, false
		}
	}
	if err := ValidURLThreadID(thread); err != nil {
		writeCodeIn(w, d, memory.CodeInvalid, "invalid_thread_id", err.Error(), "")
		return "", t, nil, false
	}
	if !isJSON(r) {
		writeCodeIn(w, d, CodeUnsupported, "unsupported_media_type",
			"the request body must be JSON, sent with Content-Type: application/json", "")
		return "", t, nil, false
	}
	body, free, ok := s.readBody(w, r, d, s.MaxBodyBytes)
	if !ok {
		return "", t, nil, false
	}
	// What the parse holds (the messages' contents, copied out of the body) counts against
	// the bytes in flight as the body does: as much again.
	if free, ok = s.holdParse(body, free); !ok {
		busy(w, d)
		return "", t, nil, false
	}
	t, err := d.Parse(body, s.prevSent(thread, d))
	if err != nil {
		free()
		var br *dialect.BadRequest
		if !errors.As(err, &br) {
			br = &dialect.BadRequest{Msg: err.Error()}
		}
		writeCodeIn(w, d, memory.CodeInvalid, "invalid_request", br.Msg, br.Param)
		return "", t, nil, false
	}
	t.Sent.Dialect = d.Name()
	return thread, t, free, true
}

// prevSent is the thread's latest request that a request of dialect d is parsed against (see
// Dialect.Parse): nil when none is kept or when another dialect read it (the same bytes may
// mean another message in another dialect).
func (s *Server) prevSent(thread string, d dialect.Dialect) *dialect.Sent {
	prev := s.lastSent(thread)
	if prev != nil && prev.Dialect != d.Name() {
		return nil
	}
	return prev
}

// refuseConflict answers a request that shares nothing with its thread: 409, never retried.
func refuseConflict(w http.ResponseWriter, d dialect.Dialect, t dialect.Turn, c *Conflict) {
	w.Header().Set("X-Should-Retry", "false") // the SDKs of OpenAI and Anthropic retry a 409 otherwise
	writeCodeIn(w, d, memory.CodeConflict, "history_conflict",
		c.Text(t.Param(c.Index))+"; the request shares neither the thread's start nor its instructions: it is another conversation, not merged into this thread",
		t.Param(c.Index))
}

// proxy is the proxy of dialect d: POST /t/{thread}/v1/ROUTE for each of d's routes.
//
// Its steps, a file each: the request is read (limits.go) and parsed by its dialect (serve/
// dialect and the dialect's folder), refused with nothing stored when its messages cannot
// fit the thread's limit whatever a compaction does (refuse.go), its new messages appended to
// the thread (append.go),
// recall rounds run when Recall is set (recall.go, Chat Completions only), the active context
// fitted to the window, compacted first when it would not fit (fit.go), the upstream called
// with it in the dialect's shape (relay.go), and its reply stored and passed on as JSON
// (relay.go) or as server-sent events (stream.go).
func (s *Server) proxy(d dialect.Dialect) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) { s.turn(w, r, d) }
}

// turn is one request of the proxy in dialect d.
func (s *Server) turn(w http.ResponseWriter, r *http.Request, d dialect.Dialect) {
	ctx := r.Context()
	thread, req, free, ok := s.readTurn(w, r, d)
	if !ok {
		return
	}
	defer free()
	if s.Upstream == "" {
		writeCodeIn(w, d, memory.CodeUnavailable, "no_upstream",
			"no upstream model is configured: start memctl serve with --upstream URL", "")
		return
	}

	st := s.hold(thread)
	defer s.drop(st)
	s.keepSent(st, req.Sent, req.Prev, req.Taken)
	s.keepTarget(st, d, req, r)
	if err := acquire(ctx, st.turn); err != nil {
		return // the client left while waiting for the thread's previous turn
	}
	defer release(st.turn)

	reset := r.Header.Get(ResetHeader) == "1"
	if nofit, err := s.refuseUnfit(ctx, st, req, reset); err != nil {
		errorIn(w, d, err)
		return
	} else if nofit != nil {
		s.dropRefused(st, req)
		writeCodeIn(w, d, memory.CodeInvalid, "context_length_exceeded", nofit.Error(), "messages")
		return
	}
	appendNew := s.appendNew
	if reset {
		appendNew = func(ctx context.Context, st *threadState, req dialect.Turn) error {
			return s.startOver(ctx, w, st, req, "reset")
		}
	}
	err := appendNew(ctx, st, req)
	var c *Conflict
	if errors.As(err, &c) && c.Rewrite {
		// The agent rewrote its conversation: a new segment of the thread, the old one kept.
		s.Logger.Info("the agent rewrote the thread's history: a new segment starts", "thread", thread, "at", req.Param(c.Index))
		err = s.startOver(ctx, w, st, req, "segment")
	}
	if err != nil {
		var br *dialect.BadRequest
		switch {
		case errors.As(err, &c):
			refuseConflict(w, d, req, c)
		case errors.As(err, &br):
			writeCodeIn(w, d, memory.CodeInvalid, "invalid_message", br.Msg, br.Param)
		default:
			errorIn(w, d, err)
		}
		return
	}
	if s.Recall && d == openAI && s.recall(w, r, thread, req) {
		return
	}
	cap, refused := 0, ""
	for {
		active, set, sent, err := s.fit(ctx, st, req, cap, w.Header())
		if err != nil {
			var over *overLimit
			if errors.As(err, &over) {
				msg := over.Error()
				if refused != "" {
					msg = refused + "; compacting to fit " + msg
				}
				writeCodeIn(w, d, memory.CodeInvalid, "context_length_exceeded", msg, "messages")
				return
			}
			errorIn(w, d, err)
			return
		}
		entries, enc, left := active.active.Entries, active.enc, 0
		if !active.whole { // a whole history supersedes nothing
			entries, enc, left = modelView(entries, enc)
		}
		sent -= left
		up := req
		if up.Notice = s.notice(ctx, st, active, set); up.Notice != nil {
			sent += s.countNotice(active, up.Notice)
		}
		// The model gets the request's messages, as the agent sent them: the request is
		// forwarded as sent.
		up.AsSent = left == 0 && up.Notice == nil && active.asSent(req)
		body, err := d.Render(up, entries, enc)
		if err != nil {
			errorIn(w, d, err)
			return
		}
		_, refusal := s.relay(w, r, d, thread, req, body, sent, cap == 0)
		if refusal == nil {
			return
		}
		// The upstream refused the prompt as too long: once, compact to a smaller budget
		// (emergency) and retry; the agent sees the answer of the retry. A refusal that names
		// the window (Anthropic's "N tokens > W maximum") teaches it, and the upstream's count
		// of the prompt calibrates the local one; otherwise the retry fits 2/3 of what was sent.
		cap = max(int(float64(sent)*compact.RetryShrink), 1)
		refused = fmt.Sprintf("the upstream refused a prompt of %d tokens (counted here) as too long for model %q", sent, req.Model)
		if n, window, ok := cascade.RefusalWindow(refusal); ok {
			ratio, _ := s.calib.record(req.Model, n, sent)
			if s.Windows != nil {
				s.Windows.Learn(req.Model, window, fmt.Sprintf("the upstream's refusal: %d tokens > %d maximum", n, window))
			}
			if ratio > 0 {
				cap = min(max(WindowLimit(window, ratio), 1), sent-1)
			}
			refused += fmt.Sprintf(" (its window, %d tokens by its count)", window)
		} else if s.Windows != nil {
			s.Windows.Forget(req.Model)
		}
		s.Logger.Warn("upstream refused the prompt as too long: compacting and retrying", "thread", thread, "model", req.Model,
			"tokens", sent, "retry_limit", cap)
	}
}

// modelView returns the entries of an active context that its model gets, with their
// encodings, and the tokens of those it does not: instructions the agent superseded
// (memory.Entry.Superseded) are the thread's history, summarized like the middle, never what
// the model is told to do now.
func modelView(entries []memory.Entry, enc []json.RawMessage) ([]memory.Entry, []json.RawMessage, int) {
	if !slices.ContainsFunc(entries, func(e memory.Entry) bool { return e.Superseded }) {
		return entries, enc, 0
	}
	es, ec, left := make([]memory.Entry, 0, len(entries)), make([]json.RawMessage, 0, len(enc)), 0
	for i, e := range entries {
		if e.Superseded {
			left += e.Tokens
			continue
		}
		es = append(es, e)
		if i < len(enc) {
			ec = append(ec, enc[i])
		}
	}
	return es, ec, left
}
