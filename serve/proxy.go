package serve

import (
	"context"
	"errors"
	"fmt"
	"net/http"

	"github.com/memcascade/memcascade/memory"
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

// chatCompletions is the proxy: POST /t/{thread}/v1/chat/completions.
//
// Its steps, a file each: the request is read and checked (request.go), its new messages
// appended to the thread (append.go), recall rounds run when Recall is set (recall.go), the
// active context fitted to the window, compacted first when it would not fit (fit.go), the
// upstream called with it (relay.go), and its reply stored and passed on as JSON (relay.go) or
// as server-sent events (stream.go).
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	thread := r.PathValue("thread")
	if r.URL.Path == "/v1/chat/completions" {
		if thread = r.Header.Get(ThreadHeader); thread == "" {
			writeCode(w, memory.CodeInvalid, "missing_thread",
				"name the thread: in the header "+ThreadHeader+", or in the base URL /t/THREAD/v1", "")
			return
		}
	}
	if err := ValidURLThreadID(thread); err != nil {
		writeCode(w, memory.CodeInvalid, "invalid_thread_id", err.Error(), "")
		return
	}
	if !isJSON(r) {
		writeCode(w, CodeUnsupported, "unsupported_media_type",
			"the request body must be JSON, sent with Content-Type: application/json", "")
		return
	}
	body, free, ok := s.readBody(w, r, s.MaxBodyBytes)
	if !ok {
		return
	}
	defer free()
	req, err := parseChatRequest(body, s.lastSent(thread))
	if err != nil {
		var br *badRequest
		errors.As(err, &br)
		writeCode(w, memory.CodeInvalid, "invalid_request", br.msg, br.param)
		return
	}
	if s.Upstream == "" {
		writeCode(w, memory.CodeUnavailable, "no_upstream",
			"no upstream model is configured: start memctl serve with --upstream URL (ending in /v1)", "")
		return
	}

	st := s.hold(thread)
	defer s.drop(st)
	s.keepSent(st, req.sent)
	if err := acquire(ctx, st.turn); err != nil {
		return // the client left while waiting for the thread's previous turn
	}
	defer release(st.turn)

	appendNew := s.appendNew
	if r.Header.Get(ResetHeader) == "1" {
		appendNew = func(ctx context.Context, st *threadState, req chatRequest) error {
			return s.startOver(ctx, w, st, req)
		}
	}
	if err := appendNew(ctx, st, req); err != nil {
		var c *Conflict
		var br *badRequest
		switch {
		case errors.As(err, &c):
			writeCode(w, memory.CodeConflict, "history_conflict", c.Msg, fmt.Sprintf("messages[%d]", c.Index))
		case errors.As(err, &br):
			writeCode(w, memory.CodeInvalid, "invalid_message", br.msg, br.param)
		default:
			Error(w, err)
		}
		return
	}
	if s.Recall && s.recall(w, r, thread, req) {
		return
	}
	cap, refused := 0, ""
	for {
		active, sent, err := s.fit(ctx, st, req, cap, w.Header())
		if err != nil {
			var over *overLimit
			if errors.As(err, &over) {
				msg := over.Error()
				if refused != "" {
					msg = refused + "; compacting to fit " + msg
				}
				writeCode(w, memory.CodeInvalid, "context_length_exceeded", msg, "messages")
				return
			}
			Error(w, err)
			return
		}
		up, err := s.upstreamBody(req, active)
		if err != nil {
			Error(w, err)
			return
		}
		_, tooLong := s.relay(w, r, thread, req, up, sent, cap == 0)
		if !tooLong {
			return
		}
		// The upstream refused the prompt as too long: once, compact to a smaller budget
		// (emergency) and retry; the agent sees the answer of the retry.
		cap = max(int(float64(sent)*retryShrink), 1)
		refused = fmt.Sprintf("the upstream refused a prompt of %d tokens (counted here) as too long for model %q", sent, req.model)
		if s.Windows != nil {
			s.Windows.Forget(req.model)
		}
		s.Logger.Warn("upstream refused the prompt as too long: compacting and retrying", "thread", thread, "model", req.model,
			"tokens", sent, "retry_limit", cap)
	}
}
