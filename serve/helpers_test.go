package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
	"github.com/memcascade/memcascade/tokencount"
)

// upstream is a fake OpenAI-compatible model: it counts the prompt tokens of every request
// with the thread's tokencount counter, and answers with reply (text or tool calls), streamed when asked.
type upstream struct {
	t       testing.TB
	counter tokencount.Counter
	srv     *httptest.Server

	mu        sync.Mutex
	requests  int
	maxTokens int
	bodies    []map[string]json.RawMessage
	lastMsgs  []chat.Message

	// reply returns the assistant message for a request (nil: "reply N").
	reply func(n int, msgs []chat.Message) chat.Message
	// fail, when set, answers every request with this status and body.
	failStatus int
	failBody   string
	// hold, when set, is waited on before answering (and got is signalled first).
	hold, got chan struct{}
	// raw, when set, answers every request (its body given) in place of the model: a
	// hostile upstream.
	raw func(w http.ResponseWriter, body []byte)

	// window, when set, is the model's window: reported as way says (llama.cpp, vllm, ollama,
	// litellm; "" not at all), and enforced on the prompt counted times scale (a server whose
	// tokenizer counts more than o200k): a larger one is refused as llama.cpp refuses it.
	window  int
	way     string
	scale   float64
	refused int
	// usageScale, when set, is the share of the prompt its usage reports (a server whose usage
	// leaves part of the prompt out, as cached tokens can be left out).
	usageScale float64
	// models, when set, is the answer to GET /v1/models.
	models string
}

func newUpstream(t testing.TB) *upstream {
	t.Helper()
	c, err := tokencount.NewCounter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	u := &upstream{t: t, counter: c}
	u.srv = httptest.NewServer(http.HandlerFunc(u.serve))
	t.Cleanup(u.srv.Close)
	return u
}

func (u *upstream) URL() string { return u.srv.URL + "/v1" }

func (u *upstream) serve(w http.ResponseWriter, r *http.Request) {
	u.mu.Lock()
	window, way, models := u.window, u.way, u.models
	u.mu.Unlock()
	if models != "" && r.Method == http.MethodGet && r.URL.Path == "/v1/models" {
		io.WriteString(w, models)
		return
	}
	if window > 0 {
		switch {
		case way == "llama.cpp" && r.URL.Path == "/props":
			fmt.Fprintf(w, `{"default_generation_settings":{"n_ctx":%d},"total_slots":1}`, window)
			return
		case way == "vllm" && r.Method == http.MethodGet && r.URL.Path == "/v1/models":
			fmt.Fprintf(w, `{"object":"list","data":[{"id":"m","object":"model","max_model_len":%d}]}`, window)
			return
		case way == "ollama" && r.URL.Path == "/api/show":
			fmt.Fprintf(w, `{"parameters":"num_ctx                        %d\nstop \"<|im_end|>\"","model_info":{"general.architecture":"qwen3","qwen3.context_length":40960}}`, window)
			return
		case way == "litellm" && r.URL.Path == "/model/info":
			fmt.Fprintf(w, `{"data":[{"model_name":"m","model_info":{"max_input_tokens":%d,"max_tokens":4096}}]}`, window)
			return
		}
	}
	if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" {
		http.Error(w, "not found", http.StatusNotFound)
		return
	}
	body, _ := io.ReadAll(r.Body)
	var req struct {
		Model    string         `json:"model"`
		Messages []chat.Message `json:"messages"`
		Tools    []chat.Tool    `json:"tools"`
		Stream   bool           `json:"stream"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		http.Error(w, "bad json: "+err.Error(), http.StatusBadRequest)
		return
	}
	var fields map[string]json.RawMessage
	json.Unmarshal(body, &fields)
	tokens := u.counter.CountMessages(req.Messages) + u.counter.CountTools(req.Tools)
	u.mu.Lock()
	if u.scale > 0 {
		tokens = int(float64(tokens) * u.scale)
	}
	if u.window > 0 && tokens > u.window {
		u.refused++
		u.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusBadRequest)
		fmt.Fprintf(w, `{"error":{"code":400,"message":"the request exceeds the available context size (%d tokens, %d available), try increasing it","type":"exceed_context_size_error"}}`, tokens, u.window)
		return
	}
	u.requests++
	n := u.requests
	u.maxTokens = max(u.maxTokens, tokens)
	u.bodies = append(u.bodies, fields)
	u.lastMsgs = req.Messages
	reply, failStatus, failBody, hold, got, raw := u.reply, u.failStatus, u.failBody, u.hold, u.got, u.raw
	u.mu.Unlock()
	if got != nil {
		got <- struct{}{}
	}
	if hold != nil {
		<-hold
	}
	if raw != nil {
		raw(w, body)
		return
	}
	if failStatus != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(failStatus)
		io.WriteString(w, failBody)
		return
	}
	msg := chat.TextMessage("assistant", fmt.Sprintf("reply %d", n))
	if reply != nil {
		msg = reply(n, req.Messages)
	}
	reported := tokens
	if u.usageScale > 0 {
		reported = int(float64(tokens) * u.usageScale)
	}
	usage := map[string]int{"prompt_tokens": reported, "completion_tokens": 7, "total_tokens": reported + 7}
	finish := "stop"
	if len(msg.ToolCalls) > 0 {
		finish = "tool_calls"
	}
	if !req.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion", "created": 1700000000, "model": req.Model + "-upstream",
			"choices": []any{map[string]any{"index": 0, "message": msg, "finish_reason": finish}},
			"usage":   usage,
		})
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	chunk := func(delta map[string]any, finish any, usage any) {
		c := map[string]any{"id": fmt.Sprintf("chatcmpl-%d", n), "object": "chat.completion.chunk", "created": 1700000000,
			"model": req.Model + "-upstream", "choices": []any{map[string]any{"index": 0, "delta": delta, "finish_reason": finish}}}
		if usage != nil {
			c["choices"] = []any{}
			c["usage"] = usage
		}
		b, _ := json.Marshal(c)
		fmt.Fprintf(w, "data: %s\n\n", b)
		w.(http.Flusher).Flush()
	}
	chunk(map[string]any{"role": "assistant", "content": ""}, nil, nil)
	// The text in three pieces, the tool calls' arguments in two.
	text := msg.Text()
	for i := 0; i < 3; i++ {
		part := text[i*len(text)/3 : (i+1)*len(text)/3]
		chunk(map[string]any{"content": part}, nil, nil)
	}
	for i, tc := range msg.ToolCalls {
		a := tc.Function.Arguments
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i, "id": tc.ID, "type": "function",
			"function": map[string]any{"name": tc.Function.Name, "arguments": a[:len(a)/2]}}}}, nil, nil)
		chunk(map[string]any{"tool_calls": []any{map[string]any{"index": i,
			"function": map[string]any{"arguments": a[len(a)/2:]}}}}, nil, nil)
	}
	chunk(map[string]any{}, finish, nil)
	chunk(nil, nil, usage)
	io.WriteString(w, "data: [DONE]\n\n")
}

// set changes the upstream's behaviour under its lock.
func (u *upstream) set(f func(u *upstream)) {
	u.mu.Lock()
	defer u.mu.Unlock()
	f(u)
}

func (u *upstream) stats() (requests, maxTokens int) {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.requests, u.maxTokens
}

// env is a proxy in front of a fake upstream, on a fresh database.
type env struct {
	t     testing.TB
	store *memory.Store
	srv   *serve.Server
	up    *upstream
	url   string // the proxy's base, http://127.0.0.1:PORT
	logs  *lockedBuffer
	// dbName names the database, for another Store on it (another process).
	dbName string
}

// lockedBuffer is the server's log.
type lockedBuffer struct {
	mu  sync.Mutex
	buf strings.Builder
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

type envOptions struct {
	limit   int    // the config's token_limit (default 100000)
	token   string // the bearer token ("" none)
	maxBody int64  // the body limit (0: the default)
	// server, when set, changes the server's fields before it serves.
	server func(*serve.Server)
	auto   bool // token_limit auto: the window is read from the upstream
	// selfUpstream points the server's upstream at itself (thread "inner").
	selfUpstream bool
	// db, when set, is given the database's name and returns the one the store opens.
	db func(name string) string
}

// freshDB makes newEnv's databases: copies of one a store made, on SQLite.
var freshDB = testdb.NewTemplate(func(path string) error {
	s, err := memory.Open(context.Background(), path)
	if err != nil {
		return err
	}
	return s.Close()
})

func newEnv(t testing.TB, opt envOptions) *env {
	t.Helper()
	ctx := context.Background()
	dbName := freshDB.Name(t, "memctl.db")
	open := dbName
	if opt.db != nil {
		open = opt.db(dbName)
	}
	store, err := memory.Open(ctx, open)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg := config.Default()
	if opt.limit > 0 {
		cfg.Compaction.TokenLimit = config.Window(opt.limit)
	}
	counter, err := store.Counter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	c, casc, err := cfg.NewCompactor(store.DB(), store, cascade.Options{Count: counter.CountText}, compact.Config{})
	if err != nil {
		t.Fatal(err)
	}
	up := newUpstream(t)
	srv := &serve.Server{
		Store: store, Compactor: c, Cascade: casc,
		Upstream: up.URL(), Token: opt.token, LoopbackOnly: opt.token == "", MaxBodyBytes: opt.maxBody,
	}
	e := &env{t: t, store: store, srv: srv, up: up, logs: &lockedBuffer{}, dbName: dbName}
	srv.Logger = slog.New(slog.NewTextHandler(e.logs, nil))
	if opt.server != nil {
		opt.server(srv)
	}
	if opt.auto {
		srv.Windows = &cascade.Windows{BaseURL: up.URL()}
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.url = "http://" + ln.Addr().String()
	if opt.selfUpstream {
		srv.Upstream = e.url + "/t/inner/v1"
	}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := srv.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return e
}

// post sends a JSON body to the proxy and returns the status and body.
func (e *env) post(path string, body string, header ...string) (int, string, http.Header) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodPost, e.url+path, strings.NewReader(body))
	if err != nil {
		e.t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return e.do(req)
}

func (e *env) get(path string, header ...string) (int, string, http.Header) {
	e.t.Helper()
	req, err := http.NewRequest(http.MethodGet, e.url+path, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	return e.do(req)
}

func (e *env) do(req *http.Request) (int, string, http.Header) {
	e.t.Helper()
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		e.t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// history returns the thread's stored messages as "role: text" lines.
func (e *env) history(thread string) []string {
	e.t.Helper()
	h, err := e.store.History(context.Background(), thread)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]string, len(h))
	for i, m := range h {
		out[i] = m.Message.Role + ": " + m.Message.Text()
		for _, tc := range m.Message.ToolCalls {
			out[i] += fmt.Sprintf(" [call %s %s %s]", tc.ID, tc.Function.Name, tc.Function.Arguments)
		}
	}
	return out
}

// errorCode returns error.code of an OpenAI-shaped error body ("" when it is not one).
func errorCode(t *testing.T, body string) string {
	t.Helper()
	var e struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(body), &e); err != nil || e.Error.Message == "" || e.Error.Type == "" {
		t.Fatalf("not an OpenAI error: %s", body)
	}
	if e.Error.Code == nil {
		return ""
	}
	return *e.Error.Code
}

func newRequest(method, url, body string) (*http.Request, error) {
	return http.NewRequest(method, url, strings.NewReader(body))
}
