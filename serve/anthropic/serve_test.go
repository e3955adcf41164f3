package anthropic_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
	"github.com/memcascade/memcascade/serve/anthropic"
	"github.com/memcascade/memcascade/tokencount"
)

// fake is an Anthropic Messages API for the tests: it checks each request as the API does
// (the first message the user's, roles alternating, each tool_result answering a tool_use of
// the message before, first in its message, every tool_use answered, four cache_control at
// most), counts its prompt as serve counts (the request read back by the dialect, counted with
// o200k) and refuses one over its window with Anthropic's own error, and answers what reply
// says, as JSON or as a stream.
type fake struct {
	t       testing.TB
	srv     *httptest.Server
	counter tokencount.Counter

	mu        sync.Mutex
	window    int // 0: no window
	reply     func(n int, last lastUser) []map[string]any
	requests  []received // answered
	refused   int        // refused as too long
	invalid   []string   // refused as malformed
	maxTokens int
	other     []string // requests to other routes
}

// received is a request the fake answered.
type received struct {
	query  string
	header http.Header
	body   []byte
	tokens int
}

// lastUser is what the fake reads of a request's last message.
type lastUser struct {
	text    string   // its text blocks
	results []string // the tool_use_id of its tool results
}

func newFake(t testing.TB) *fake {
	c, err := tokencount.NewCounter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	f := &fake{t: t, counter: c}
	f.srv = httptest.NewServer(http.HandlerFunc(f.serve))
	t.Cleanup(f.srv.Close)
	return f
}

func (f *fake) set(fn func(*fake)) {
	f.mu.Lock()
	defer f.mu.Unlock()
	fn(f)
}

func anthropicError(w http.ResponseWriter, status int, typ, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	b, _ := json.Marshal(map[string]any{"type": "error", "error": map[string]string{"type": typ, "message": msg}, "request_id": "req_fake"})
	w.Write(b)
}

func (f *fake) serve(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
		f.set(func(f *fake) { f.other = append(f.other, r.Method+" "+r.URL.Path) })
		anthropicError(w, http.StatusNotFound, "not_found_error", "Not Found")
		return
	}
	last, problem := check(body)
	if problem != "" {
		f.set(func(f *fake) { f.invalid = append(f.invalid, problem) })
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", problem)
		return
	}
	turn, err := anthropic.Dialect{}.Parse(body, nil)
	if err != nil {
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", err.Error())
		return
	}
	tokens := f.counter.CountMessages(turn.Messages) + f.counter.CountTools(turn.Tools)
	f.mu.Lock()
	if f.window > 0 && tokens > f.window {
		f.refused++
		window := f.window
		f.mu.Unlock()
		anthropicError(w, http.StatusBadRequest, "invalid_request_error", fmt.Sprintf("prompt is too long: %d tokens > %d maximum", tokens, window))
		return
	}
	f.requests = append(f.requests, received{query: r.URL.RawQuery, header: r.Header.Clone(), body: body, tokens: tokens})
	f.maxTokens = max(f.maxTokens, tokens)
	n, reply := len(f.requests), f.reply
	f.mu.Unlock()
	blocks := []map[string]any{{"type": "text", "text": fmt.Sprintf("reply %d", n)}}
	if reply != nil {
		blocks = reply(n, last)
	}
	stop := "end_turn"
	for _, b := range blocks {
		if b["type"] == "tool_use" {
			stop = "tool_use"
		}
	}
	usage := map[string]int{"input_tokens": tokens - tokens/2, "cache_read_input_tokens": tokens / 2, "cache_creation_input_tokens": 0, "output_tokens": 9}
	msg := map[string]any{"id": fmt.Sprintf("msg_%d", n), "type": "message", "role": "assistant", "model": turn.Model,
		"content": blocks, "stop_reason": stop, "stop_sequence": nil, "usage": usage}
	if !turn.Stream {
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(msg)
		return
	}
	w.Header().Set("Content-Type", "text/event-stream")
	event := func(name string, v any) {
		b, _ := json.Marshal(v)
		fmt.Fprintf(w, "event: %s\ndata: %s\n\n", name, b)
		w.(http.Flusher).Flush()
	}
	start := map[string]any{"id": msg["id"], "type": "message", "role": "assistant", "model": turn.Model, "content": []any{},
		"stop_reason": nil, "stop_sequence": nil, "usage": map[string]int{"input_tokens": usage["input_tokens"], "cache_read_input_tokens": usage["cache_read_input_tokens"], "cache_creation_input_tokens": 0, "output_tokens": 1}}
	event("message_start", map[string]any{"type": "message_start", "message": start})
	event("ping", map[string]any{"type": "ping"})
	for i, b := range blocks {
		var empty map[string]any
		var deltas []map[string]any
		switch b["type"] {
		case "thinking":
			empty = map[string]any{"type": "thinking", "thinking": "", "signature": ""}
			deltas = append(halves(b["thinking"].(string), "thinking_delta", "thinking"), map[string]any{"type": "signature_delta", "signature": b["signature"]})
		case "text":
			empty = map[string]any{"type": "text", "text": ""}
			deltas = halves(b["text"].(string), "text_delta", "text")
		case "tool_use":
			empty = map[string]any{"type": "tool_use", "id": b["id"], "name": b["name"], "input": map[string]any{}}
			in, _ := json.Marshal(b["input"])
			deltas = halves(string(in), "input_json_delta", "partial_json")
		}
		event("content_block_start", map[string]any{"type": "content_block_start", "index": i, "content_block": empty})
		for _, d := range deltas {
			event("content_block_delta", map[string]any{"type": "content_block_delta", "index": i, "delta": d})
		}
		event("content_block_stop", map[string]any{"type": "content_block_stop", "index": i})
	}
	event("message_delta", map[string]any{"type": "message_delta", "delta": map[string]any{"stop_reason": stop, "stop_sequence": nil}, "usage": map[string]int{"output_tokens": 9}})
	event("message_stop", map[string]any{"type": "message_stop"})
}

// halves is s as two deltas of type typ, s's halves in member key.
func halves(s, typ, key string) []map[string]any {
	return []map[string]any{{"type": typ, key: s[:len(s)/2]}, {"type": typ, key: s[len(s)/2:]}}
}

// check checks a request as the Messages API does, and reads its last message.
func check(body []byte) (lastUser, string) {
	var req struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &req); err != nil {
		return lastUser{}, "There was an error parsing the body of your request: " + err.Error()
	}
	if n := bytes.Count(body, []byte(`"cache_control"`)); n > 4 {
		return lastUser{}, fmt.Sprintf("A maximum of 4 blocks with cache_control may be provided. Found %d.", n)
	}
	if len(req.Messages) == 0 || req.Messages[0].Role != "user" {
		return lastUser{}, "messages: the first message must use the \"user\" role"
	}
	var last lastUser
	calls := map[string]bool{}
	for i, m := range req.Messages {
		if i > 0 && m.Role == req.Messages[i-1].Role {
			return lastUser{}, fmt.Sprintf("messages.%d: roles must alternate between \"user\" and \"assistant\"", i)
		}
		var blocks []struct {
			Type      string `json:"type"`
			Text      string `json:"text"`
			ID        string `json:"id"`
			ToolUseID string `json:"tool_use_id"`
		}
		if m.Content[0] == '[' {
			if err := json.Unmarshal(m.Content, &blocks); err != nil {
				return lastUser{}, fmt.Sprintf("messages.%d.content: %v", i, err)
			}
		} else {
			var s string
			json.Unmarshal(m.Content, &s)
			blocks = append(blocks, struct {
				Type      string `json:"type"`
				Text      string `json:"text"`
				ID        string `json:"id"`
				ToolUseID string `json:"tool_use_id"`
			}{Type: "text", Text: s})
		}
		if m.Role == "assistant" {
			calls = map[string]bool{}
			for _, b := range blocks {
				if b.Type == "tool_use" {
					calls[b.ID] = true
				}
			}
			continue
		}
		last = lastUser{}
		other := false
		for k, b := range blocks {
			switch {
			case b.Type != "tool_result":
				other = true
				last.text += b.Text
			case other:
				return lastUser{}, fmt.Sprintf("messages.%d.content.%d: tool_result blocks must come first", i, k)
			case !calls[b.ToolUseID]:
				return lastUser{}, fmt.Sprintf("messages.%d.content.%d: unexpected `tool_use_id` found in `tool_result` blocks: %s", i, k, b.ToolUseID)
			default:
				delete(calls, b.ToolUseID)
				last.results = append(last.results, b.ToolUseID)
			}
		}
		if len(calls) > 0 {
			return lastUser{}, fmt.Sprintf("messages.%d: `tool_use` ids were found without `tool_result` blocks immediately after", i)
		}
	}
	return last, ""
}

// env is a memctl serve in front of a fake, on a fresh SQLite store.
type env struct {
	t     testing.TB
	store *memory.Store
	srv   *serve.Server
	fake  *fake
	url   string
	logs  *bytes.Buffer
}

func newEnv(t testing.TB, limit int, opts ...func(*serve.Server)) *env {
	t.Helper()
	ctx := context.Background()
	store, err := memory.Open(ctx, filepath.Join(t.TempDir(), "memctl.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	cfg := config.Default()
	cfg.Compaction.TokenLimit = config.Window(limit)
	counter, err := store.Counter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	c, casc, err := cfg.NewCompactor(store.DB(), store, cascade.Options{Count: counter.CountText}, compact.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f := newFake(t)
	e := &env{t: t, store: store, fake: f, logs: &bytes.Buffer{}}
	e.srv = &serve.Server{Store: store, Compactor: c, Cascade: casc,
		Upstream: serve.UpstreamBase(f.srv.URL), LoopbackOnly: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, o := range opts {
		o(e.srv)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e.url = "http://" + ln.Addr().String()
	done := make(chan error, 1)
	go func() { done <- e.srv.Serve(ln) }()
	t.Cleanup(func() {
		if err := e.srv.Shutdown(context.Background()); err != nil {
			t.Errorf("Shutdown: %v", err)
		}
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return e
}

// agent is a client as Claude Code is: it resends its whole conversation each turn, with the
// system prompt and tools, cache_control on its newest message's last block (moved from the
// one before, which it then sends without).
type agent struct {
	e       *env
	session string
	stream  bool
	msgs    []json.RawMessage
	plain   json.RawMessage // the marked message without its cache_control
	marked  int             // its index
}

var (
	agentSystem = json.RawMessage(`[{"type":"text","text":"You are a coding agent."},{"type":"text","text":"Use the tools to help the user <carefully>.","cache_control":{"type":"ephemeral"}}]`)
	agentTools  = json.RawMessage(`[{"name":"Bash","description":"Run a shell command.","input_schema":{"type":"object","properties":{"command":{"type":"string"}},"required":["command"]},"cache_control":{"type":"ephemeral"}}]`)
)

// body is the request of the agent's conversation; its system prompt starts with a billing
// header block that changes each turn.
func (a *agent) body(model string) []byte {
	system := append(json.RawMessage(fmt.Sprintf(`[{"type":"text","text":"x-anthropic-billing-header: cc_version=2.0.%d; cc_entrypoint=cli"},`, len(a.msgs))), agentSystem[1:]...)
	b, _ := json.Marshal(map[string]any{"model": model, "max_tokens": 4096, "system": system, "tools": agentTools,
		"messages": a.msgs, "thinking": map[string]any{"type": "enabled", "budget_tokens": 1024}, "stream": a.stream,
		"metadata": map[string]string{"user_id": "u1"}})
	return b
}

// user adds a user message of blocks (the last one marked for the cache).
func (a *agent) user(blocks ...map[string]any) {
	if a.plain != nil {
		a.msgs[a.marked] = a.plain
	}
	plain, _ := json.Marshal(map[string]any{"role": "user", "content": blocks})
	marked := make([]map[string]any, len(blocks))
	copy(marked, blocks)
	last := map[string]any{"cache_control": map[string]string{"type": "ephemeral"}}
	for k, v := range blocks[len(blocks)-1] {
		last[k] = v
	}
	marked[len(marked)-1] = last
	m, _ := json.Marshal(map[string]any{"role": "user", "content": marked})
	a.msgs, a.plain, a.marked = append(a.msgs, m), plain, len(a.msgs)
}

// post sends the agent's conversation to path and returns the answer.
func (a *agent) post(path string, body []byte, header ...string) (*http.Response, []byte) {
	a.e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, a.e.url+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("X-Api-Key", "client-key")
	for i := 0; i+1 < len(header); i += 2 {
		req.Header.Set(header[i], header[i+1])
	}
	req.Header.Set("Anthropic-Version", "2023-06-01")
	req.Header.Set("Anthropic-Beta", "interleaved-thinking-2025-05-14")
	if a.session != "" {
		req.Header.Set(anthropic.SessionHeader, a.session)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		a.e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		a.e.t.Fatal(err)
	}
	return resp, b
}

// send sends the conversation and adds the reply to it: its content blocks.
func (a *agent) send() []map[string]any {
	a.e.t.Helper()
	resp, b := a.post("/v1/messages?beta=true", a.body("claude-sonnet-4-5"))
	if resp.StatusCode != http.StatusOK {
		a.e.t.Fatalf("turn %d: %d %s", len(a.msgs), resp.StatusCode, b)
	}
	var content []map[string]any
	if a.stream {
		content = assemble(a.e.t, b)
	} else {
		var msg struct {
			Content []map[string]any `json:"content"`
		}
		if err := json.Unmarshal(b, &msg); err != nil {
			a.e.t.Fatalf("%v: %s", err, b)
		}
		content = msg.Content
	}
	m, _ := json.Marshal(map[string]any{"role": "assistant", "content": content})
	a.msgs = append(a.msgs, m)
	return content
}

// assemble reads a stream's content blocks as a client does; the stream must end with
// message_stop and hold no error.
func assemble(t testing.TB, stream []byte) []map[string]any {
	t.Helper()
	var blocks []map[string]any
	var inputs []string
	stopped := false
	sc := bufio.NewScanner(bytes.NewReader(stream))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok {
			continue
		}
		var ev struct {
			Type         string         `json:"type"`
			Index        int            `json:"index"`
			ContentBlock map[string]any `json:"content_block"`
			Delta        map[string]any `json:"delta"`
		}
		if err := json.Unmarshal([]byte(data), &ev); err != nil {
			t.Fatalf("%v: %s", err, data)
		}
		switch ev.Type {
		case "error":
			t.Fatalf("an error event: %s", data)
		case "content_block_start":
			blocks, inputs = append(blocks, ev.ContentBlock), append(inputs, "")
		case "content_block_delta":
			b := blocks[ev.Index]
			switch ev.Delta["type"] {
			case "text_delta":
				b["text"] = b["text"].(string) + ev.Delta["text"].(string)
			case "thinking_delta":
				b["thinking"] = b["thinking"].(string) + ev.Delta["thinking"].(string)
			case "signature_delta":
				b["signature"] = ev.Delta["signature"]
			case "input_json_delta":
				inputs[ev.Index] += ev.Delta["partial_json"].(string)
			}
		case "content_block_stop":
			if in := inputs[ev.Index]; in != "" {
				var v any
				if err := json.Unmarshal([]byte(in), &v); err != nil {
					t.Fatalf("tool input %q: %v", in, err)
				}
				blocks[ev.Index]["input"] = v
			}
		case "message_stop":
			stopped = true
		}
	}
	if !stopped {
		t.Fatalf("the stream ended without message_stop: %s", stream)
	}
	return blocks
}

// history is the thread's stored messages, "role: text [calls]".
func (e *env) history(thread string) []string {
	e.t.Helper()
	h, err := e.store.History(context.Background(), thread)
	if err != nil {
		e.t.Fatal(err)
	}
	out := make([]string, len(h))
	for i, m := range h {
		out[i] = m.Message.Role + ": " + m.Message.Text()
		for _, c := range m.Message.ToolCalls {
			out[i] += fmt.Sprintf(" [%s %s %s]", c.ID, c.Function.Name, c.Function.Arguments)
		}
		if m.Message.ToolCallID != "" {
			out[i] += " (" + m.Message.ToolCallID + ")"
		}
	}
	return out
}

func text(s string) map[string]any { return map[string]any{"type": "text", "text": s} }

// toolReply answers "please run X" with a call of Bash (and a thinking block), a tool result
// with a text, anything else with "reply N".
func toolReply(n int, last lastUser) []map[string]any {
	if len(last.results) > 0 {
		return []map[string]any{text(fmt.Sprintf("reply %d: the command ran.", n))}
	}
	if cmd, ok := strings.CutPrefix(last.text, "please run "); ok {
		return []map[string]any{
			{"type": "thinking", "thinking": "I should run " + cmd + ".", "signature": fmt.Sprintf("sig-%d/+=", n)},
			text("Running it."),
			{"type": "tool_use", "id": fmt.Sprintf("toolu_%d", n), "name": "Bash", "input": map[string]any{"command": cmd}},
		}
	}
	return []map[string]any{text(fmt.Sprintf("reply %d", n))}
}

// TestServeMessages: Claude Code's kind of session through memctl serve, as JSON and as a
// stream: a tool-use round (thinking, a call, its result beside a text), then a plain turn,
// the billing header of the system prompt changing each turn (not stored: the system prompt
// stays the thread's one).
// The upstream gets each request as the agent sent it, byte for byte (system, messages and
// the rest, cache_control where the agent put it), at /v1/messages?beta=true under an
// upstream base of a host alone, with the agent's key and anthropic-* headers; the thread is
// the session header's; each message is stored once, tool results as tool messages, the
// reply's thinking and signature kept; count_tokens is answered locally.
func TestServeMessages(t *testing.T) {
	for _, stream := range []bool{false, true} {
		t.Run(map[bool]string{false: "json", true: "stream"}[stream], func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, 100000)
			e.fake.set(func(f *fake) { f.reply = toolReply })
			a := &agent{e: e, session: "0b6f1c9e-4a7e-4f7e-9a49-claude", stream: stream}
			var sent [][]byte
			a.user(text("please run ls"))
			sent = append(sent, a.body("claude-sonnet-4-5"))
			reply := a.send()
			call, _ := reply[2]["id"].(string)
			if call != "toolu_1" || reply[0]["signature"] != "sig-1/+=" {
				t.Fatalf("reply %v", reply)
			}
			a.user(map[string]any{"type": "tool_result", "tool_use_id": call, "content": "go.mod\nmain.go"},
				text("<system-reminder>Files may change.</system-reminder>"))
			sent = append(sent, a.body("claude-sonnet-4-5"))
			a.send()
			a.user(text("Thanks & bye"))
			sent = append(sent, a.body("claude-sonnet-4-5"))
			a.send()

			e.fake.mu.Lock()
			reqs := e.fake.requests
			e.fake.mu.Unlock()
			if len(reqs) != 3 {
				t.Fatalf("%d upstream requests, want 3", len(reqs))
			}
			for i, r := range reqs {
				if !bytes.Equal(r.body, sent[i]) {
					t.Errorf("upstream request %d differs from the agent's:\n got %s\nwant %s", i, r.body, sent[i])
				}
				h := r.header
				if r.query != "beta=true" || h.Get("X-Api-Key") != "client-key" || h.Get("Anthropic-Version") != "2023-06-01" ||
					h.Get("Anthropic-Beta") != "interleaved-thinking-2025-05-14" || h.Get("Accept") != map[bool]string{false: "application/json", true: "text/event-stream"}[stream] {
					t.Errorf("upstream request %d: query %q, headers %v", i, r.query, h)
				}
			}
			want := []string{
				"system: You are a coding agent.",
				"system: Use the tools to help the user <carefully>.",
				"user: please run ls",
				`assistant: Running it. [toolu_1 Bash {"command":"ls"}]`,
				"tool: go.mod\nmain.go (toolu_1)",
				"user: <system-reminder>Files may change.</system-reminder>",
				"assistant: reply 2: the command ran.",
				"user: Thanks & bye",
				"assistant: reply 3",
			}
			if got := e.history(a.session); strings.Join(got, "\n") != strings.Join(want, "\n") {
				t.Errorf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
			}
			h, _ := e.store.History(context.Background(), a.session)
			if o := string(h[3].Message.Extra[anthropic.Key]); !strings.Contains(o, `"signature":"sig-1/+="`) || !strings.Contains(o, `"thinking":"I should run ls."`) {
				t.Errorf("the stored reply's original: %s", o)
			}

			// count_tokens: the size of what serve would send, answered here.
			a.user(text("one more"))
			resp, b := a.post("/v1/messages/count_tokens?beta=true", a.body("claude-sonnet-4-5"))
			var count struct {
				InputTokens int `json:"input_tokens"`
			}
			if json.Unmarshal(b, &count); resp.StatusCode != 200 || count.InputTokens < 100 {
				t.Errorf("count_tokens: %d %s", resp.StatusCode, b)
			}
			e.fake.mu.Lock()
			n, other := len(e.fake.requests), e.fake.other
			e.fake.mu.Unlock()
			if n != 3 || other != nil {
				t.Errorf("count_tokens reached the upstream: %d requests, others %v", n, other)
			}
			if got := len(e.history(a.session)); got != len(want) {
				t.Errorf("count_tokens stored messages: %d, want %d", got, len(want))
			}
		})
	}
}

// TestServeErrorsInAnthropicShape: serve's own refusals are Anthropic errors, which the SDKs
// raise without retrying: a request naming no thread, a malformed one, a tool result that
// answers no call, an edited history; param names the request's own place of the message.
func TestServeErrorsInAnthropicShape(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000)
	a := &agent{e: e}
	a.user(text("hi"))
	for _, c := range []struct {
		session, body, typ, code, param string
		status                          int
	}{
		{"", string(a.body("m")), "invalid_request_error", "missing_thread", "", 400},
		{"s1", `{"model":"m","messages":[{"role":"tool","content":"x"}]}`, "invalid_request_error", "invalid_request", "messages[0].role", 400},
		{"s2", `{"model":"m","messages":[{"role":"user","content":"x"},{"role":"assistant","content":"y"},{"role":"user","content":[{"type":"text","text":"z"},{"type":"tool_result","tool_use_id":"nope","content":"r"}]}]}`, "invalid_request_error", "invalid_message", "messages[2].content[1]", 400},
		{"s1", string(a.body("m")), "", "", "", 200},
		{"s1", `{"model":"m","max_tokens":10,"messages":[{"role":"user","content":"hello"},{"role":"assistant","content":"edited"},{"role":"user","content":"x"}]}`, "invalid_request_error", "history_conflict", "messages[0]", 409},
	} {
		a.session = c.session
		resp, b := a.post("/v1/messages", []byte(c.body))
		if resp.StatusCode != c.status {
			t.Fatalf("%s: %d %s", c.body, resp.StatusCode, b)
		}
		if c.status == 200 {
			continue
		}
		var eb struct {
			Type  string `json:"type"`
			Error struct {
				Type, Message, Code, Param string
			} `json:"error"`
		}
		if json.Unmarshal(b, &eb) != nil || eb.Type != "error" || eb.Error.Type != c.typ || eb.Error.Code != c.code || eb.Error.Param != c.param || eb.Error.Message == "" ||
			resp.Header.Get("X-Should-Retry") != "false" {
			t.Errorf("%s: %d %s %v", c.body, resp.StatusCode, b, resp.Header)
		}
	}
}

// TestServeCompactAndRetry: the upstream refuses a prompt over its window with Anthropic's
// own error ("prompt is too long: N tokens > W maximum") though serve's limit is larger: serve
// compacts the thread and retries, and the agent sees the answer, not the refusal.
func TestServeCompactAndRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 6000)
	a := &agent{e: e, session: "retry"}
	for i := range 8 {
		a.user(text(fmt.Sprintf("note %d: %s", i, strings.Repeat("the build fails on port 8080 again; ", 12))))
		a.send()
	}
	e.fake.mu.Lock()
	sent := e.fake.requests[len(e.fake.requests)-1].tokens
	e.fake.window = sent * 3 / 4
	e.fake.mu.Unlock()
	a.user(text("and now?"))
	resp, b := a.post("/v1/messages?beta=true", a.body("claude-sonnet-4-5"))
	e.fake.mu.Lock()
	refused, n, last := e.fake.refused, len(e.fake.requests), e.fake.requests[len(e.fake.requests)-1].tokens
	window := e.fake.window
	e.fake.mu.Unlock()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "reply 9") {
		t.Fatalf("the agent got %d %s", resp.StatusCode, b)
	}
	if refused != 1 || n != 9 || last > window || resp.Header.Get(serve.CompactionHeader) == "" {
		t.Fatalf("%d refused, %d answered, the retry %d tokens (window %d), compaction %q", refused, n, last, window, resp.Header.Get(serve.CompactionHeader))
	}
	if got := len(e.history("retry")); got != 2+9*2 {
		t.Fatalf("%d messages stored, want %d", got, 2+9*2)
	}
	t.Logf("the window %d tokens, the turn before %d; the retry sent %d", window, sent, last)
}

// TestServeThirtyTurns: 30 turns of an agent that runs a tool every third turn, half of them
// streamed, at a token limit the conversation outgrows several times: every request is one
// the API takes (roles alternating, each tool result after its call, four cache_control at
// most) and within the limit, none refused; several compactions applied; every message
// stored once.
func TestServeThirtyTurns(t *testing.T) {
	t.Parallel()
	const limit = 3000
	e := newEnv(t, limit)
	e.fake.set(func(f *fake) {
		f.window = limit
		f.reply = func(n int, last lastUser) []map[string]any {
			r := toolReply(n, last)
			if len(r) == 1 {
				r[0]["text"] = r[0]["text"].(string) + ": " + strings.Repeat("the cache keeps warm entries; ", 10)
			}
			return r
		}
	})
	a := &agent{e: e, session: "thirty"}
	stored := 2 // the system prompt's blocks
	for turn := 1; turn <= 30; turn++ {
		a.stream = turn%2 == 0
		if turn%3 == 0 {
			a.user(text(fmt.Sprintf("please run make test-%d", turn)))
			reply := a.send()
			a.user(map[string]any{"type": "tool_result", "tool_use_id": reply[2]["id"], "content": strings.Repeat("ok  pkg/cache 0.2s\n", 20)})
			a.send()
			stored += 4
		} else {
			a.user(text(fmt.Sprintf("Question %d: %s", turn, strings.Repeat("why does the build fail on port 8080? ", 8))))
			a.send()
			stored += 2
		}
	}
	e.fake.mu.Lock()
	n, maxTokens, refused, invalid := len(e.fake.requests), e.fake.maxTokens, e.fake.refused, e.fake.invalid
	e.fake.mu.Unlock()
	if n != 40 || refused != 0 || invalid != nil || maxTokens > limit {
		t.Fatalf("%d requests answered (want 40), %d refused as too long, invalid %v, the largest %d tokens (limit %d)", n, refused, invalid, maxTokens, limit)
	}
	reps, err := e.store.Reports(context.Background(), "thirty", 0)
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, r := range reps {
		if r.Status == memory.StatusApplied {
			applied++
		}
	}
	if applied < 2 {
		t.Fatalf("%d compactions applied, want several", applied)
	}
	if got := len(e.history("thirty")); got != stored {
		t.Fatalf("%d messages stored, want %d", got, stored)
	}
	// The last request: the summary follows the agent's system prompt, its billing header first.
	e.fake.mu.Lock()
	last := e.fake.requests[len(e.fake.requests)-1].body
	e.fake.mu.Unlock()
	var req struct {
		System []struct{ Text string } `json:"system"`
	}
	if json.Unmarshal(last, &req); len(req.System) != 4 || req.System[0].Text != "x-anthropic-billing-header: cc_version=2.0.79; cc_entrypoint=cli" ||
		!strings.HasPrefix(req.System[3].Text, "Summary of the earlier conversation") {
		t.Errorf("the last request's system: %+v", req.System)
	}
	t.Logf("%d compactions applied; the largest request %d tokens (limit %d)", applied, maxTokens, limit)

}

// TestServeAuth: the upstream's auth is the configured key, else the agent's x-api-key, else
// its Authorization; never serve's own bearer token.
func TestServeAuth(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		name, key, token  string
		header            []string
		wantKey, wantAuth string
	}{
		{"the agent's key", "", "", nil, "client-key", ""},
		{"the configured key", "conf-key", "", nil, "conf-key", ""},
		{"the agent's bearer token", "", "", []string{"X-Api-Key", "", "Authorization", "Bearer sk-ant-oat-1"}, "", "Bearer sk-ant-oat-1"},
		{"not serve's token", "", "serve-token", []string{"X-Api-Key", "", "Authorization", "Bearer serve-token"}, "", ""},
		{"the agent's key beside serve's token", "", "serve-token", []string{"Authorization", "Bearer serve-token"}, "client-key", ""},
	} {
		e := newEnv(t, 100000, func(s *serve.Server) { s.UpstreamKey, s.Token = c.key, c.token })
		a := &agent{e: e, session: "auth"}
		a.user(text("hi"))
		if resp, b := a.post("/v1/messages", a.body("m"), c.header...); resp.StatusCode != 200 {
			t.Fatalf("%s: %d %s", c.name, resp.StatusCode, b)
		}
		e.fake.mu.Lock()
		h := e.fake.requests[0].header
		e.fake.mu.Unlock()
		if h.Get("X-Api-Key") != c.wantKey || h.Get("Authorization") != c.wantAuth {
			t.Errorf("%s: the upstream got x-api-key %q, authorization %q", c.name, h.Get("X-Api-Key"), h.Get("Authorization"))
		}
	}
}

// TestServeCacheAccounting: what the upstream reports of each reply's prompt (its input tokens,
// of them those read from its cache) is added to the thread's counts, streamed or not, and the
// thread shows the cached share.
func TestServeCacheAccounting(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000)
	a := &agent{e: e, session: "cache"}
	for i := range 4 {
		a.stream = i%2 == 1
		a.user(text(fmt.Sprintf("turn %d: run the tests", i)))
		a.send()
	}
	e.fake.mu.Lock()
	prompt, cached := 0, 0
	for _, r := range e.fake.requests {
		prompt += r.tokens
		cached += r.tokens / 2
	}
	n := len(e.fake.requests)
	e.fake.mu.Unlock()
	th, err := e.store.Thread(context.Background(), "cache")
	if err != nil {
		t.Fatal(err)
	}
	want := memory.ReplyUsage{Replies: n, PromptTokens: prompt, CachedTokens: cached,
		CachedShare: math.Round(float64(cached)/float64(prompt)*1000) / 1000}
	if n != 4 || th.Upstream != want {
		t.Fatalf("%d requests; the thread counts %+v, want %+v", n, th.Upstream, want)
	}
}

// TestServeUpstreamCost: with an upstream price, each reply adds its prompt (cache reads
// included) at the input price and its output tokens at the output price; a stream's output
// is the last message_delta's count (9), not message_start's (1) nor their sum.
func TestServeUpstreamCost(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, func(s *serve.Server) { s.UpstreamPrice = &llm.Price{Input: 3, Output: 15} })
	a := &agent{e: e, session: "cost"}
	for i := range 4 {
		a.stream = i%2 == 1
		a.user(text(fmt.Sprintf("turn %d: run the tests", i)))
		a.send()
	}
	e.fake.mu.Lock()
	prompt := 0
	for _, r := range e.fake.requests {
		prompt += r.tokens
	}
	n := len(e.fake.requests)
	e.fake.mu.Unlock()
	th, err := e.store.Thread(context.Background(), "cost")
	if err != nil {
		t.Fatal(err)
	}
	want := float64(prompt*3+n*9*15) / 1e6
	if n != 4 || th.Upstream.Cost == nil || math.Abs(*th.Upstream.Cost-want) > 1e-12 {
		t.Fatalf("%d requests of %d prompt tokens; the thread's upstream cost is %v, want $%g", n, prompt, th.Upstream.Cost, want)
	}
}

// TestServeRefusedStoresNothing: a request whose newest user message alone is over the
// thread's limit is answered 400 in Anthropic's shape before anything is stored: the session's
// thread is not made, and a thread that exists keeps its history.
func TestServeRefusedStoresNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2048)
	huge := "quokkaplan " + strings.Repeat("the whole log of the failing build, line after line; ", 400)
	a := &agent{e: e, session: "s1"}
	a.user(text(huge))
	check := func(resp *http.Response, b []byte) {
		t.Helper()
		var eb struct {
			Type  string                               `json:"type"`
			Error struct{ Type, Message, Code string } `json:"error"`
		}
		if resp.StatusCode != 400 || json.Unmarshal(b, &eb) != nil || eb.Type != "error" || eb.Error.Type != "invalid_request_error" ||
			eb.Error.Code != "context_length_exceeded" || !strings.Contains(eb.Error.Message, "nothing was stored") {
			t.Fatalf("%d %s; want 400 context_length_exceeded", resp.StatusCode, b)
		}
	}
	check(a.post("/v1/messages", a.body("claude-sonnet-4-5")))
	if _, err := e.store.Thread(context.Background(), "s1"); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Fatalf("the refused request left its thread behind: %v", err)
	}

	b := &agent{e: e, session: "s2"}
	b.user(text("hello"))
	b.send()
	before := e.history("s2")
	b.user(text(huge))
	check(b.post("/v1/messages", b.body("claude-sonnet-4-5")))
	if after := e.history("s2"); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("history after the refused request:\n%s\nwant:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	if hits, err := e.store.Search(context.Background(), "quokkaplan", memory.SearchOptions{}); err != nil || len(hits) != 0 {
		t.Fatalf("search finds the refused message: %v %v", hits, err)
	}
}
