package serve

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"mime"
	"net/http"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/memcascade/memcascade/cascade"
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

// threadIDPattern is what a thread id in a URL may be: a letter or digit, then letters,
// digits, '.', '_', ':' or '-', 128 characters at most.
var threadIDPattern = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._:-]{0,127}$`)

// ValidThreadID checks a thread id taken from a URL.
func ValidThreadID(id string) error {
	if !threadIDPattern.MatchString(id) {
		return fmt.Errorf("thread id %q is not valid: want 1 to 128 letters, digits, '.', '_', ':' or '-', starting with a letter or digit", id)
	}
	return nil
}

// chatRequest is a chat completions request: every field as given (forwarded unchanged but
// messages, in the order given), and the fields the proxy reads.
type chatRequest struct {
	fields   map[string]json.RawMessage
	order    []string // the keys of fields as the request gives them
	messages []memory.Message
	sent     *sentMessages // the messages as sent and as decoded
	// prev is the thread's previous request given to parseChatRequest, of which the first
	// same messages are this one's, byte for byte.
	prev   *sentMessages
	same   int
	tools  []memory.Tool
	model  string
	stream bool
}

// badRequest is a malformed request: its message and the parameter at fault.
type badRequest struct{ param, msg string }

func (e *badRequest) Error() string { return e.msg }

// sentMessages are the messages of a request as sent (the hash of each one's bytes) and as
// decoded (msgs), and its tools likewise; none is changed once made.
type sentMessages struct {
	hashes    []bytesHash
	msgs      []memory.Message
	toolsHash bytesHash
	tools     []memory.Tool // nil: none sent
}

// bytesHash identifies a message by its bytes: 128 bits of two seeded hashes (maphash), the
// seeds random per process, so that no request can be made to collide with another.
type bytesHash [2]uint64

var hashSeeds = [2]maphash.Seed{maphash.MakeSeed(), maphash.MakeSeed()}

func hashBytes(b []byte) bytesHash {
	return bytesHash{maphash.Bytes(hashSeeds[0], b), maphash.Bytes(hashSeeds[1], b)}
}

// parseChatRequest parses a request's body in one pass over it (see scanRequest). prev, when
// not nil, is the thread's previous request: a message sent at the same place with the same
// bytes (an agent resending its history), and tools sent with the same bytes, are taken as
// they were decoded then, not decoded again.
func parseChatRequest(body []byte, prev *sentMessages) (chatRequest, error) {
	var req chatRequest
	if !utf8.Valid(body) {
		return req, &badRequest{"", "the request body is not valid UTF-8"}
	}
	members, raws, err := scanRequest(body)
	if err != nil {
		return req, &badRequest{"", "the request body is not a JSON object: want {\"model\": ..., \"messages\": [...]}: " + err.Error()}
	}
	req.fields = make(map[string]json.RawMessage, len(members))
	req.order = make([]string, len(members))
	for i, m := range members {
		req.fields[m.key] = m.val
		req.order[i] = m.key
	}
	if raw, ok := req.fields["model"]; !ok || json.Unmarshal(raw, &req.model) != nil || req.model == "" {
		return req, &badRequest{"model", "model: want the model's name, a non-empty string"}
	}
	if len(raws) == 0 {
		return req, &badRequest{"messages", "messages: want a non-empty array of chat messages"}
	}
	req.messages = make([]memory.Message, len(raws))
	req.prev = prev
	hashes := make([]bytesHash, len(raws))
	for i, raw := range raws {
		hashes[i] = hashBytes(raw)
		if prev != nil && i < len(prev.hashes) && hashes[i] == prev.hashes[i] {
			req.messages[i] = prev.msgs[i]
			if req.same == i {
				req.same++
			}
			continue
		}
		if raw[0] != '{' {
			return req, &badRequest{fmt.Sprintf("messages[%d]", i), fmt.Sprintf("messages[%d]: want a message object", i)}
		}
		if err := json.Unmarshal(raw, &req.messages[i]); err != nil {
			return req, &badRequest{fmt.Sprintf("messages[%d]", i), fmt.Sprintf("messages[%d]: %v", i, err)}
		}
	}
	req.sent = &sentMessages{hashes: hashes, msgs: req.messages}
	if raw, ok := req.fields["stream"]; ok && !bytes.Equal(raw, []byte("null")) {
		if json.Unmarshal(raw, &req.stream) != nil {
			return req, &badRequest{"stream", "stream: want true or false"}
		}
	}
	if raw, ok := req.fields["tools"]; ok && !bytes.Equal(raw, []byte("null")) {
		h := hashBytes(raw)
		if prev != nil && prev.tools != nil && h == prev.toolsHash {
			req.tools = prev.tools
		} else if json.Unmarshal(raw, &req.tools) != nil {
			return req, &badRequest{"tools", "tools: want an array of tool definitions"}
		}
		if req.tools == nil {
			req.tools = []memory.Tool{}
		}
		req.sent.toolsHash, req.sent.tools = h, req.tools
	}
	return req, nil
}

// chatCompletions is the proxy: POST /t/{thread}/v1/chat/completions.
func (s *Server) chatCompletions(w http.ResponseWriter, r *http.Request) {
	ctx := r.Context()
	thread := r.PathValue("thread")
	if r.URL.Path == "/v1/chat/completions" {
		if thread = r.Header.Get(ThreadHeader); thread == "" {
			writeError(w, http.StatusBadRequest, "invalid_request_error", "missing_thread",
				"name the thread: in the header "+ThreadHeader+", or in the base URL /t/THREAD/v1", "")
			return
		}
	}
	if err := ValidThreadID(thread); err != nil {
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_thread_id", err.Error(), "")
		return
	}
	if !isJSON(r) {
		writeError(w, http.StatusUnsupportedMediaType, "invalid_request_error", "unsupported_media_type",
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
		writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_request", br.msg, br.param)
		return
	}
	if s.Upstream == "" {
		writeError(w, http.StatusServiceUnavailable, "server_error", "no_upstream",
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
			writeError(w, http.StatusConflict, "invalid_request_error", "history_conflict", c.Msg, fmt.Sprintf("messages[%d]", c.Index))
		case errors.As(err, &br):
			writeError(w, http.StatusBadRequest, "invalid_request_error", "invalid_message", br.msg, br.param)
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
				writeError(w, http.StatusBadRequest, "invalid_request_error", "context_length_exceeded", msg, "messages")
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

func isJSON(r *http.Request) bool {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	return err == nil && (mt == "application/json" || strings.HasSuffix(mt, "+json"))
}

// startOver starts the request's thread over with the request's messages (see ResetHeader),
// in one transaction: a request whose messages are not valid changes nothing. It names the
// archive in the ArchivedHeader of w, and returns a *badRequest naming an invalid message.
func (s *Server) startOver(ctx context.Context, w http.ResponseWriter, st *threadState, req chatRequest) error {
	archive := fmt.Sprintf("%s.reset-%d", st.thread, s.Store.Now().UnixMilli())
	s.keepLive(st, nil)
	res, archived, err := s.Store.StartOver(ctx, st.thread, archive, req.messages, memory.AppendOptions{Model: req.model})
	if err != nil {
		return messageError(err, req, len(req.messages), 0)
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
// returns a *Conflict, or a *badRequest naming an invalid message.
func (s *Server) appendNew(ctx context.Context, st *threadState, req chatRequest) error {
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
			fresh, conflict = Reconcile(stored, req.messages)
		}
		if (conflict != nil || len(fresh) == 0) && attempt == 0 && kept {
			continue // check the version first
		}
		known := fast || len(req.messages) == len(stored)+len(fresh) && samePrefix(req.messages, stored)
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
		res, err := s.appendLive(ctx, st, fresh, memory.AppendOptions{Model: req.model}, &expect)
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
func (s *Server) knownSent(st *threadState, lv *liveState, req chatRequest) {
	if lv.recall {
		return // the history holds messages the agent never saw: not one for one
	}
	// The history's own slice, capped at its length: an append to the history writes past it.
	msgs := lv.hist[:len(req.messages):len(req.messages)]
	sent := &sentMessages{hashes: req.sent.hashes, msgs: msgs, toolsHash: req.sent.toolsHash, tools: req.sent.tools}
	s.mu.Lock()
	latest := st.sent == req.sent
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
// *badRequest; other errors are returned as they are.
func messageError(err error, req chatRequest, n, prompt int) error {
	var ie *memory.InputError
	if !errors.As(err, &ie) {
		return err
	}
	i := len(req.messages) - n + ie.Index
	if ie.Index < prompt {
		i = ie.Index
	}
	return &badRequest{fmt.Sprintf("messages[%d]", i), fmt.Sprintf("messages[%d]: %s", i, strings.TrimPrefix(ie.Error(), fmt.Sprintf("message %d: ", ie.Index)))}
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
// cap, when above 0, caps the limit (a compact-and-retry). It also returns the size of the
// prompt it makes, messages and tools, counted here.
func (s *Server) fit(ctx context.Context, st *threadState, req chatRequest, cap int, h http.Header) (*liveState, int, error) {
	thread := st.thread
	lv, set, over, tools, err := s.measure(ctx, st, req, cap, false)
	if err != nil {
		return nil, 0, err
	}
	if fits(lv.active, set, tools) {
		return lv, lv.active.Tokens + tools, nil
	}
	if err := acquire(ctx, st.compact); err != nil { // a background compaction may be running
		return nil, 0, err
	}
	defer release(st.compact)
	if lv, set, over, tools, err = s.measure(ctx, st, req, cap, true); err != nil {
		return nil, 0, err
	} else if fits(lv.active, set, tools) {
		return lv, lv.active.Tokens + tools, nil
	}
	rep, cerr := s.Compactor.Compact(ctx, thread, memory.CompactOptions{Emergency: true, Override: over})
	s.logCompaction(thread, rep, cerr)
	if rep.ID != nil {
		h.Set(CompactionHeader, strconv.FormatInt(*rep.ID, 10))
		h.Set(CompactionStatusHeader, rep.Status)
	}
	if lv, set, _, tools, err = s.measure(ctx, st, req, cap, true); err != nil {
		return nil, 0, err
	} else if fits(lv.active, set, tools) {
		return lv, lv.active.Tokens + tools, nil
	}
	a := lv.active
	why := rep.Status
	if rep.Error != "" {
		why += ": " + rep.Error
	} else if rep.Detail != "" {
		why += ": " + rep.Detail
	}
	if set.OnFailure == memory.OnFailureFit {
		why += " (even with compaction.on_failure: fit)"
	} else {
		why += "; compaction.on_failure: fit would also mask old tool results and leave the oldest messages out of what the model gets (the history keeps them)"
	}
	return nil, 0, &overLimit{tokens: a.Tokens, tools: tools, budget: set.Budget(), limit: set.TokenLimit, why: why}
}

// measure returns the thread's active context (the one kept, checked first with check) and
// the settings of this turn: the thread's, with the override of Server.limits (which the
// thread's background compaction uses too).
func (s *Server) measure(ctx context.Context, st *threadState, req chatRequest, cap int, check bool) (*liveState, memory.Settings, memory.ThreadSettings, int, error) {
	lv, err := s.live(ctx, st, check)
	if err != nil {
		return nil, memory.Settings{}, memory.ThreadSettings{}, 0, err
	}
	if !lv.ver.Found {
		return nil, memory.Settings{}, memory.ThreadSettings{}, 0, fmt.Errorf("thread %q: %w", st.thread, memory.ErrThreadNotFound)
	}
	a := lv.active
	over, served := s.limits(ctx, a.Thread.Settings, req.model, cap)
	if cap == 0 {
		s.recordWindow(ctx, st.thread, a.Thread.Settings, served)
	}
	s.mu.Lock()
	st.over = over
	s.mu.Unlock()
	set := memory.Effective(s.Compactor.Settings, a.Thread.Settings, over)
	counter, err := s.Store.Counter(a.Thread.Encoding)
	if err != nil {
		return nil, set, over, 0, err
	}
	return lv, set, over, counter.CountTools(req.tools), nil
}

func fits(a memory.Active, set memory.Settings, tools int) bool {
	return a.Tokens <= set.Budget() && a.Tokens+tools <= set.TokenLimit
}

// upstreamBody is the request as the agent sent it, its members in its order, with the active
// context as its messages, written from their kept encodings.
func (s *Server) upstreamBody(req chatRequest, lv *liveState) ([]byte, error) {
	n := 64 + len(req.fields)*8
	for k, v := range req.fields {
		if k != "messages" {
			n += len(k) + len(v)
		}
	}
	for _, e := range lv.enc {
		n += len(e) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	first := true
	member := func(k string, v []byte) {
		if !first {
			b = append(b, ',')
		}
		first = false
		key, _ := json.Marshal(k) // a string always marshals
		b = append(append(b, key...), ':')
		b = append(b, v...)
	}
	written := map[string]bool{}
	keys := append(slices.Clone(req.order), "messages")
	for k := range req.fields {
		if !slices.Contains(keys, k) {
			keys = append(keys, k) // added by the proxy (recall)
		}
	}
	for _, k := range keys {
		v, ok := req.fields[k]
		if written[k] || !ok && k != "messages" {
			continue
		}
		written[k] = true
		if k != "messages" {
			member(k, v)
			continue
		}
		member(k, nil)
		b = append(b, '[')
		for i, e := range lv.enc {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, e...)
		}
		b = append(b, ']')
	}
	return append(b, '}'), nil
}

// relay calls the upstream and passes its answer to the client, storing the reply once it is
// complete, before the client sees the end of the answer: a client that reads the whole
// answer finds the reply stored. A stored reply schedules a background compaction check.
//
// sent is the prompt's size counted here: the reply's usage.prompt_tokens calibrates the
// model's ratio against it. With retry set, an answer that the prompt is too long (classified
// as the cascade classifies a provider's) is not passed on: tooLong reports it.
func (s *Server) relay(w http.ResponseWriter, r *http.Request, thread string, req chatRequest, body []byte, sent int, retry bool) (ok, tooLong bool) {
	ctx, stream := r.Context(), req.stream
	up, err := http.NewRequestWithContext(ctx, http.MethodPost, s.Upstream+"/chat/completions", bytes.NewReader(body))
	if err != nil {
		writeError(w, http.StatusBadGateway, "upstream_error", "upstream_unreachable", "upstream: "+err.Error(), "")
		return false, false
	}
	up.Header.Set("Content-Type", "application/json")
	s.markUpstream(up, r)
	if stream {
		up.Header.Set("Accept", "text/event-stream")
	} else {
		up.Header.Set("Accept", "application/json")
	}
	if s.UpstreamKey != "" {
		up.Header.Set("Authorization", "Bearer "+s.UpstreamKey)
	}
	resp, err := s.Client.Do(up)
	if err != nil {
		if ctx.Err() == nil {
			writeError(w, http.StatusBadGateway, "upstream_error", "upstream_unreachable", "cannot reach the upstream model: "+redactURLError(err), "")
		}
		return false, false
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxErrorHead))
		if retry && cascade.ClassifyHTTP(resp.StatusCode, b) == cascade.ClassContextLength {
			return false, true
		}
		// The upstream's error, as it gave it: status and body.
		copyHeaders(w.Header(), resp.Header)
		w.WriteHeader(resp.StatusCode)
		w.Write(b)
		io.Copy(w, io.LimitReader(resp.Body, s.MaxReplyBytes-int64(len(b))))
		return false, false
	}
	copyHeaders(w.Header(), resp.Header)
	calibrate := func(upstream int) {
		if r, ok := s.calib.record(req.model, upstream, sent); ok {
			s.Logger.Debug("token count calibrated", "model", req.model, "upstream", upstream, "local", sent, "ratio", r)
		}
	}
	mt, _, _ := mime.ParseMediaType(resp.Header.Get("Content-Type"))
	if stream && mt == "text/event-stream" {
		return s.relayStream(w, r, thread, resp.Body, calibrate), false
	}
	return s.relayJSON(w, r, thread, resp.Body, calibrate), false
}

// storeReply appends the proxy's messages of a turn (the model's reply, a recall's call and
// results) to the thread the caller holds the turn of, whatever it holds by now.
func (s *Server) storeReply(ctx context.Context, thread string, msgs []memory.Message) (memory.AppendResult, error) {
	return s.appendLive(ctx, s.state(thread), msgs, memory.AppendOptions{}, nil)
}

// maxErrorHead is how much of an upstream's error answer is read to classify it; the rest is
// passed on as it comes.
const maxErrorHead = 64 << 10

// redactURLError drops the URL from a transport error: the upstream URL may carry a key in
// its query.
func redactURLError(err error) string {
	var ue interface{ Unwrap() error }
	if errors.As(err, &ue) && ue.Unwrap() != nil {
		return ue.Unwrap().Error()
	}
	return err.Error()
}

// hopHeaders are response headers never passed to the client.
var hopHeaders = map[string]bool{
	"Connection": true, "Keep-Alive": true, "Transfer-Encoding": true, "Content-Length": true,
	"Set-Cookie": true, "Trailer": true, "Upgrade": true, "Proxy-Authenticate": true,
}

func copyHeaders(dst, src http.Header) {
	for k, vs := range src {
		if hopHeaders[k] || strings.HasPrefix(k, "Access-Control-") {
			continue
		}
		dst[k] = append([]string(nil), vs...)
	}
}

func (s *Server) relayJSON(w http.ResponseWriter, r *http.Request, thread string, body io.Reader, calibrate func(int)) bool {
	b, free, err := s.readAll(io.LimitReader(body, s.MaxReplyBytes+1), -1)
	defer free()
	if errors.Is(err, errBusy) {
		w.Header().Del("Content-Type")
		busy(w)
		return false
	}
	if err != nil || int64(len(b)) > s.MaxReplyBytes {
		w.Header().Del("Content-Type")
		msg := fmt.Sprintf("the upstream's reply is over %d bytes", s.MaxReplyBytes)
		if err != nil {
			msg = "reading the upstream's reply: " + err.Error()
		}
		writeError(w, http.StatusBadGateway, "upstream_error", "bad_upstream_reply", msg, "")
		return false
	}
	reply, err := replyMessage(b)
	if err != nil {
		writeError(w, http.StatusBadGateway, "upstream_error", "bad_upstream_reply", err.Error(), "")
		return false
	}
	calibrate(promptTokens(b))
	if r.Context().Err() != nil {
		return false // the client left: it never sees this reply, so it is not stored
	}
	if _, err := s.storeReply(context.WithoutCancel(r.Context()), thread, []memory.Message{reply}); err != nil {
		writeError(w, http.StatusBadGateway, "upstream_error", "reply_not_stored", "the model's reply could not be stored: "+err.Error(), "")
		return false
	}
	s.compactLater(thread)
	w.Header().Set("Content-Length", strconv.Itoa(len(b)))
	w.WriteHeader(http.StatusOK)
	w.Write(b)
	return true
}

// replyMessage returns choices[0].message of a chat completion.
func replyMessage(b []byte) (memory.Message, error) {
	var resp struct {
		Choices []struct {
			Message json.RawMessage `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal(b, &resp); err != nil {
		return memory.Message{}, fmt.Errorf("the upstream's reply is not a chat completion: %v", err)
	}
	if len(resp.Choices) == 0 || len(resp.Choices[0].Message) == 0 {
		return memory.Message{}, errors.New("the upstream's reply has no choices[0].message")
	}
	var m memory.Message
	if err := json.Unmarshal(resp.Choices[0].Message, &m); err != nil {
		return memory.Message{}, fmt.Errorf("the upstream's reply: choices[0].message: %v", err)
	}
	if m.Role == "" {
		m.Role = memory.RoleAssistant
	}
	return m, nil
}

// relayStream passes server-sent events to the client as they arrive and assembles the reply
// from the deltas of choice 0. The stream ends for the client as the upstream ended it only
// when the reply was stored: the upstream's data: [DONE] is held back until then. A stream
// that breaks off (no [DONE] nor finish_reason before its end, a read error, a line or a
// total over the limits, a chunk that cannot be assembled) or whose reply cannot be stored
// ends with an error event in OpenAI's shape (data: {"error": {...}}) and no [DONE], so
// that every client raises. An error event of the upstream's own is passed through, and
// nothing is stored. What the upstream sends after [DONE] is not read.
func (s *Server) relayStream(w http.ResponseWriter, r *http.Request, thread string, body io.Reader, calibrate func(int)) bool {
	flusher, _ := w.(http.Flusher)
	flush := func() {
		if flusher != nil {
			flusher.Flush()
		}
	}
	w.WriteHeader(http.StatusOK)
	fail := func(code, msg string) bool {
		s.Logger.Warn("stream ended with an error event", "thread", thread, "code", code)
		writeErrorEvent(w, code, msg)
		flush()
		return false
	}
	var acc streamReply
	sse := newLineReader(body, s.MaxReplyBytes)
	done := false
	for !done {
		line, err := sse.next()
		if len(line) > 0 {
			data, isData := bytes.CutPrefix(bytes.TrimRight(line, "\r\n"), []byte("data:"))
			data = bytes.TrimSpace(data)
			if isData && bytes.Equal(data, []byte("[DONE]")) {
				done = true
				break
			}
			if isData {
				if aerr := acc.add(data); aerr != nil {
					return fail("bad_upstream_stream", "the upstream's stream cannot be relayed: "+aerr.Error()+"; nothing was stored")
				}
				if n := promptTokens(data); n > 0 {
					calibrate(n)
				}
			}
			if _, werr := w.Write(line); werr != nil {
				return false // the client left
			}
			if len(bytes.TrimSpace(line)) == 0 {
				flush() // the end of an event
			}
		}
		if err != nil {
			if r.Context().Err() != nil {
				return false // the client left
			}
			if acc.failed {
				flush()
				return false // the upstream's own error event was passed on
			}
			if err != io.EOF {
				return fail("upstream_stream_broken", "the upstream's stream broke off: "+redactURLError(err)+"; nothing was stored")
			}
			if !acc.finished {
				return fail("upstream_stream_broken", "the upstream's stream ended before its last chunk (it gave no finish_reason); nothing was stored")
			}
			break
		}
	}
	if acc.failed {
		flush()
		return false
	}
	if r.Context().Err() != nil {
		return false // the client left: it never sees the end, so nothing is stored
	}
	reply := acc.message()
	if _, err := s.storeReply(context.WithoutCancel(r.Context()), thread, []memory.Message{reply}); err != nil {
		return fail("reply_not_stored", "the model's reply could not be stored: "+err.Error())
	}
	s.compactLater(thread)
	if done {
		io.WriteString(w, "data: [DONE]\n\n")
	}
	flush()
	return true
}

// lineReader reads the lines of a stream, each at most maxLine bytes and all together at most
// max bytes; over either, next returns an error saying which.
type lineReader struct {
	br        *bufio.Reader
	max, read int64
	line      []byte
}

// MaxSSELineBytes bounds one line of an upstream's stream (one data: line holds one chunk).
const MaxSSELineBytes = 4 << 20

func newLineReader(r io.Reader, max int64) *lineReader {
	return &lineReader{br: bufio.NewReaderSize(r, 64<<10), max: max}
}

// next returns the next line with its newline (without at the end of the stream), and the
// error that ended the stream (io.EOF at its end).
func (l *lineReader) next() ([]byte, error) {
	l.line = l.line[:0]
	for {
		frag, err := l.br.ReadSlice('\n')
		l.read += int64(len(frag))
		if l.read > l.max {
			return nil, fmt.Errorf("the stream is over %d bytes", l.max)
		}
		if len(l.line)+len(frag) > MaxSSELineBytes {
			return nil, fmt.Errorf("a line of the stream is over %d bytes", MaxSSELineBytes)
		}
		l.line = append(l.line, frag...)
		if err != bufio.ErrBufferFull {
			return l.line, err
		}
	}
}

// MaxToolCalls bounds the tool calls of one streamed reply: a tool call's index in a chunk is
// from 0 to MaxToolCalls-1.
const MaxToolCalls = 128

// streamReply assembles choice 0's message from stream chunks.
type streamReply struct {
	role     string
	content  strings.Builder
	refusal  strings.Builder
	text     bool // a content delta was seen
	refused  bool // a refusal delta was seen
	calls    []memory.ToolCall
	finished bool // a finish_reason was seen
	failed   bool // an error event came instead of a chunk
}

// add adds a chunk's deltas. It returns an error for a chunk that cannot be assembled (a tool
// call's index out of range); a chunk that is not JSON is passed on and ignored.
func (a *streamReply) add(data []byte) error {
	var chunk struct {
		Choices []struct {
			Index int `json:"index"`
			Delta struct {
				Role      string  `json:"role"`
				Content   *string `json:"content"`
				Refusal   *string `json:"refusal"`
				ToolCalls []struct {
					Index    int    `json:"index"`
					ID       string `json:"id"`
					Type     string `json:"type"`
					Function struct {
						Name      string `json:"name"`
						Arguments string `json:"arguments"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &chunk) != nil {
		return nil
	}
	if len(chunk.Error) > 0 && !bytes.Equal(chunk.Error, []byte("null")) {
		a.failed = true
	}
	for _, c := range chunk.Choices {
		if c.Index != 0 {
			continue
		}
		if c.Delta.Role != "" {
			a.role = c.Delta.Role
		}
		if c.Delta.Content != nil {
			a.text = true
			a.content.WriteString(*c.Delta.Content)
		}
		if c.Delta.Refusal != nil {
			a.refused = true
			a.refusal.WriteString(*c.Delta.Refusal)
		}
		for _, tc := range c.Delta.ToolCalls {
			if tc.Index < 0 || tc.Index >= MaxToolCalls {
				return fmt.Errorf("a tool call's index is %d: want 0 to %d", tc.Index, MaxToolCalls-1)
			}
			for len(a.calls) <= tc.Index {
				a.calls = append(a.calls, memory.ToolCall{})
			}
			call := &a.calls[tc.Index]
			if tc.ID != "" {
				call.ID = tc.ID
			}
			if tc.Type != "" {
				call.Type = tc.Type
			}
			call.Function.Name += tc.Function.Name
			call.Function.Arguments += tc.Function.Arguments
		}
		if c.FinishReason != nil && *c.FinishReason != "" {
			a.finished = true
		}
	}
	return nil
}

// message is the assembled reply: its text, its refusal (content null when the model gave
// only a refusal) and its tool calls (content null when it gave no text beside them).
func (a *streamReply) message() memory.Message {
	role := a.role
	if role == "" {
		role = memory.RoleAssistant
	}
	m := memory.TextMessage(role, a.content.String())
	if a.refused {
		r, _ := json.Marshal(a.refusal.String())
		m.Extra = map[string]json.RawMessage{"refusal": r}
		if a.content.Len() == 0 {
			m.Content = json.RawMessage("null")
		}
	}
	if len(a.calls) > 0 {
		for i := range a.calls {
			if a.calls[i].Type == "" {
				a.calls[i].Type = "function"
			}
		}
		m.ToolCalls = a.calls
		if a.content.Len() == 0 {
			m.Content = json.RawMessage("null")
		}
	}
	return m
}
