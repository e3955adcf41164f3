// Package fakeupstream gives tests a fake model server that speaks Anthropic Messages
// (NewAnthropic) or OpenAI Responses (NewResponses) as Claude Code and Codex CLI use them:
// streaming (SSE, with each API's real event sequence) and plain JSON, usage in each API's
// shape, replies scripted request by request (text or a tool call), and a context window that
// refuses a prompt too long with that API's real error body. Every request is recorded.
//
// Token counting is rough and the same for both: a request's prompt is its raw body's length
// in bytes divided by 4, rounded up (Tokens), tool definitions and JSON syntax included; a
// reply's output is its text's (or tool arguments') bytes divided by 4, rounded up. A request
// whose prompt is over Options.Window tokens is refused.
package fakeupstream

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
)

// Options configure a fake.
type Options struct {
	// Window, when over 0, is the context window in tokens: a model request whose prompt
	// (Tokens of its body) is over it is refused with the API's error.
	Window int
	// Reply scripts the answer to the model request n (0 for the first one the fake answers;
	// refused and count_tokens requests do not count). Nil answers every request with the text
	// "ok". Replies makes one from a list.
	Reply func(n int, r Request) Reply
	// Model is the model named in replies; empty echoes the request's.
	Model string
}

// Reply is the model's answer to one request: Text, a tool call, or both (text first), after
// an optional Thinking block; or a Raw answer (an error, a broken stream) sent instead.
type Reply struct {
	// Thinking, when set, comes first: an Anthropic thinking block (signature
	// "fake-signature-N") or a Responses reasoning item (this text as its summary,
	// encrypted_content "fake-encrypted-N").
	Thinking string
	Text     string
	Tool     *ToolCall
	// Raw, when set, is sent instead of a reply, as it is.
	Raw *Raw
}

// ToolCall is a call of the tool Name with Input, a JSON object of its arguments. ID is made
// up when empty (toolu_N for Anthropic, call_N for Responses).
type ToolCall struct {
	ID, Name, Input string
}

// Raw is an answer sent as it is: Status, Content-Type (application/json when empty), Body.
type Raw struct {
	Status      int
	ContentType string
	Body        string
}

// Request is one request the fake received, whatever its route, and the status it was
// answered with (0 while it is being answered).
type Request struct {
	Method, Path, RawQuery string
	Header                 http.Header
	Body                   []byte
	Status                 int
}

// Replies scripts the replies in order: request n gets rs[n], and every request after the
// last gets the last.
func Replies(rs ...Reply) func(int, Request) Reply {
	return func(n int, _ Request) Reply {
		if len(rs) == 0 {
			return Reply{Text: "ok"}
		}
		return rs[min(n, len(rs)-1)]
	}
}

// Tokens is the fake's count of a prompt: len(body)/4, rounded up.
func Tokens(body []byte) int { return (len(body) + 3) / 4 }

func outTokens(r Reply) int {
	n := len(r.Thinking) + len(r.Text)
	if r.Tool != nil {
		n += len(r.Tool.Name) + len(r.Tool.Input)
	}
	return max(1, (n+3)/4)
}

// Fake is a running fake upstream. Close it (from the embedded server) when done.
type Fake struct {
	*httptest.Server
	opts  Options
	mu    sync.Mutex
	reqs  []Request
	n     int    // model requests answered
	prev  []byte // body of the last model request answered, for the cached-prefix count
	route func(f *Fake, w http.ResponseWriter, r Request)
}

func newFake(opts Options, route func(*Fake, http.ResponseWriter, Request)) *Fake {
	if opts.Reply == nil {
		opts.Reply = Replies()
	}
	f := &Fake{opts: opts, route: route}
	f.Server = httptest.NewServer(http.HandlerFunc(f.serve))
	return f
}

func (f *Fake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	req := Request{Method: r.Method, Path: r.URL.Path, RawQuery: r.URL.RawQuery, Header: r.Header.Clone(), Body: body}
	f.mu.Lock()
	i := len(f.reqs)
	f.reqs = append(f.reqs, req)
	f.mu.Unlock()
	// The status is noted as soon as it is written, not when the handler returns: a client
	// that has read a whole stream may list the requests before the handler has returned.
	sw := &statusWriter{ResponseWriter: w, note: func(code int) {
		f.mu.Lock()
		f.reqs[i].Status = code
		f.mu.Unlock()
	}}
	f.route(f, sw, req)
}

// statusWriter notes the status a request is answered with, as it is written.
type statusWriter struct {
	http.ResponseWriter
	note    func(int)
	written bool
}

func (w *statusWriter) WriteHeader(code int) {
	if !w.written {
		w.written = true
		w.note(code)
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *statusWriter) Write(b []byte) (int, error) {
	if !w.written {
		w.WriteHeader(http.StatusOK)
	}
	return w.ResponseWriter.Write(b)
}

func (w *statusWriter) Flush() {
	if fl, ok := w.ResponseWriter.(http.Flusher); ok {
		fl.Flush()
	}
}

// Requests returns a copy of the list of requests received so far, in order.
func (f *Fake) Requests() []Request {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]Request(nil), f.reqs...)
}

// ModelRequests returns the requests received so far on the model route (POST, path ending
// in /messages or /responses), in order: what the agent sent as prompts.
func (f *Fake) ModelRequests() []Request {
	var out []Request
	for _, r := range f.Requests() {
		if r.Method == http.MethodPost && (strings.HasSuffix(r.Path, "/messages") || strings.HasSuffix(r.Path, "/responses")) {
			out = append(out, r)
		}
	}
	return out
}

// next takes the reply to a model request that is within the window, with the prompt's
// tokens and those of its prefix shared with the previous model request answered.
func (f *Fake) next(r Request) (reply Reply, n, prompt, cached int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	n = f.n
	f.n++
	prompt = Tokens(r.Body)
	i := 0
	for i < len(f.prev) && i < len(r.Body) && f.prev[i] == r.Body[i] {
		i++
	}
	cached = i / 4
	f.prev = r.Body
	return f.opts.Reply(n, r), n, prompt, cached
}

func (f *Fake) model(body map[string]any) string {
	if f.opts.Model != "" {
		return f.opts.Model
	}
	if m, ok := body["model"].(string); ok {
		return m
	}
	return "fake-model"
}

// sse writes Server-Sent Events, flushing after each.
type sse struct {
	w http.ResponseWriter
}

func startSSE(w http.ResponseWriter) sse {
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	return sse{w}
}

func (s sse) event(name string, data any) {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(data); err != nil {
		panic(err)
	}
	fmt.Fprintf(s.w, "event: %s\ndata: %s\n\n", name, strings.TrimSuffix(b.String(), "\n"))
	if fl, ok := s.w.(http.Flusher); ok {
		fl.Flush()
	}
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(v)
}

func writeRaw(w http.ResponseWriter, r *Raw) {
	ct := r.ContentType
	if ct == "" {
		ct = "application/json"
	}
	w.Header().Set("Content-Type", ct)
	w.WriteHeader(r.Status)
	_, _ = io.WriteString(w, r.Body)
}

// chunks splits s in pieces of at most n bytes (not splitting UTF-8 sequences), as deltas.
func chunks(s string, n int) []string {
	var out []string
	for len(s) > n {
		i := n
		for i > 0 && i < len(s) && s[i]&0xC0 == 0x80 {
			i--
		}
		if i == 0 {
			i = n
		}
		out = append(out, s[:i])
		s = s[i:]
	}
	if s != "" {
		out = append(out, s)
	}
	return out
}
