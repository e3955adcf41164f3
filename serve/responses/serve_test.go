package responses_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/internal/fakeupstream"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
	"github.com/memcascade/memcascade/tokencount"
)

// env is a memctl serve in front of a fake Responses API, on a fresh SQLite store.
type env struct {
	t     testing.TB
	store *memory.Store
	srv   *serve.Server
	fake  *fakeupstream.Fake
	url   string
}

func newEnv(t testing.TB, limit int, opts fakeupstream.Options, srvOpts ...func(*serve.Server)) *env {
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
	f := fakeupstream.NewResponses(opts)
	t.Cleanup(f.Close)
	e := &env{t: t, store: store, fake: f}
	e.srv = &serve.Server{Store: store, Compactor: c, Cascade: casc,
		Upstream: serve.UpstreamBase(f.URL), LoopbackOnly: true,
		Logger: slog.New(slog.NewTextHandler(io.Discard, nil))}
	for _, o := range srvOpts {
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

// agent is a client as Codex CLI is: store false, its whole input sent each turn (developer
// instructions first), the output items of each reply added to it as they came.
type agent struct {
	e       *env
	session string
	stream  bool
	input   []json.RawMessage
}

var agentTools = json.RawMessage(`[{"type":"function","name":"exec_command","description":"Run a shell command.","strict":false,"parameters":{"type":"object","properties":{"cmd":{"type":"string"}},"required":["cmd"]}}]`)

func item(v any) json.RawMessage { b, _ := json.Marshal(v); return b }

func userItem(s string) json.RawMessage {
	return item(map[string]any{"type": "message", "role": "user", "content": []any{map[string]any{"type": "input_text", "text": s}}})
}

func newAgent(e *env, session string) *agent {
	dev := item(map[string]any{"type": "message", "role": "developer", "content": []any{map[string]any{"type": "input_text", "text": "You are a coding agent. Use the tools <carefully>."}}})
	return &agent{e: e, session: session, input: []json.RawMessage{dev}}
}

func (a *agent) body() []byte {
	b, _ := json.Marshal(map[string]any{"model": "gpt-5.5", "stream": a.stream, "input": a.input, "tools": agentTools,
		"tool_choice": "auto", "parallel_tool_calls": true, "reasoning": map[string]string{"effort": "medium"}, "store": false,
		"include": []string{"reasoning.encrypted_content"}, "prompt_cache_key": a.session})
	return b
}

func (a *agent) post(path string, body []byte) (*http.Response, []byte) {
	a.e.t.Helper()
	req, _ := http.NewRequest(http.MethodPost, a.e.url+path, bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Authorization", "Bearer client-key")
	req.Header.Set("Session-Id", a.session)
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

// send sends the input and adds the reply's output items to it; it returns them.
func (a *agent) send() []map[string]any {
	a.e.t.Helper()
	resp, b := a.post("/v1/responses", a.body())
	if resp.StatusCode != http.StatusOK {
		a.e.t.Fatalf("turn %d: %d %s", len(a.input), resp.StatusCode, b)
	}
	var r struct {
		Output []json.RawMessage `json:"output"`
	}
	if a.stream {
		var completed bool
		for _, ev := range events(a.e.t.(*testing.T), b) {
			switch ev[0] {
			case "error", "response.failed":
				a.e.t.Fatalf("turn %d: %s %s", len(a.input), ev[0], ev[1])
			case "response.completed":
				var c struct {
					Response json.RawMessage `json:"response"`
				}
				json.Unmarshal([]byte(ev[1]), &c)
				json.Unmarshal(c.Response, &r)
				completed = true
			}
		}
		if !completed {
			a.e.t.Fatalf("turn %d: the stream ended without response.completed: %s", len(a.input), b)
		}
	} else if err := json.Unmarshal(b, &r); err != nil {
		a.e.t.Fatalf("%v: %s", err, b)
	}
	out := make([]map[string]any, len(r.Output))
	for i, it := range r.Output {
		a.input = append(a.input, it)
		json.Unmarshal(it, &out[i])
	}
	return out
}

// answerCalls adds an output for each function call of items.
func (a *agent) answerCalls(items []map[string]any) int {
	n := 0
	for _, it := range items {
		if it["type"] == "function_call" {
			a.input = append(a.input, item(map[string]any{"type": "function_call_output", "call_id": it["call_id"],
				"output": strings.Repeat("ok  pkg/cache 0.2s\n", 12)}))
			n++
		}
	}
	return n
}

// lastInput is the last input item of a request the fake got.
func lastInput(r fakeupstream.Request) map[string]any {
	var body struct {
		Input []map[string]any `json:"input"`
	}
	json.Unmarshal(r.Body, &body)
	if len(body.Input) == 0 {
		return nil
	}
	return body.Input[len(body.Input)-1]
}

// parallel is a JSON response calling exec_command twice (the fake calls one tool at most).
func parallel(n int, stream bool) *fakeupstream.Raw {
	resp := map[string]any{"id": fmt.Sprintf("resp_p%d", n), "object": "response", "status": "completed", "model": "gpt-5.5",
		"output": []any{
			map[string]any{"id": fmt.Sprintf("rs_p%d", n), "type": "reasoning", "summary": []any{}, "encrypted_content": fmt.Sprintf("enc-p%d", n)},
			map[string]any{"id": fmt.Sprintf("fc_p%da", n), "type": "function_call", "status": "completed", "call_id": fmt.Sprintf("call_p%da", n), "name": "exec_command", "arguments": `{"cmd":"make a"}`},
			map[string]any{"id": fmt.Sprintf("fc_p%db", n), "type": "function_call", "status": "completed", "call_id": fmt.Sprintf("call_p%db", n), "name": "exec_command", "arguments": `{"cmd":"make b"}`},
		},
		"usage": map[string]any{"input_tokens": 100, "input_tokens_details": map[string]any{"cached_tokens": 0}, "output_tokens": 9, "total_tokens": 109}}
	if !stream {
		b, _ := json.Marshal(resp)
		return &fakeupstream.Raw{Status: 200, Body: string(b)}
	}
	var sb strings.Builder
	ev := func(typ string, v map[string]any) {
		v["type"] = typ
		b, _ := json.Marshal(v)
		fmt.Fprintf(&sb, "event: %s\ndata: %s\n\n", typ, b)
	}
	ev("response.created", map[string]any{"response": map[string]any{"id": resp["id"], "object": "response", "status": "in_progress", "output": []any{}}})
	for i, it := range resp["output"].([]any) {
		ev("response.output_item.added", map[string]any{"output_index": i, "item": it})
		if m := it.(map[string]any); m["type"] == "function_call" {
			args := m["arguments"].(string)
			ev("response.function_call_arguments.delta", map[string]any{"output_index": i, "item_id": m["id"], "delta": args[:5]})
			ev("response.function_call_arguments.delta", map[string]any{"output_index": i, "item_id": m["id"], "delta": args[5:]})
		}
		ev("response.output_item.done", map[string]any{"output_index": i, "item": it})
	}
	ev("response.completed", map[string]any{"response": resp})
	return &fakeupstream.Raw{Status: 200, ContentType: "text/event-stream", Body: sb.String()}
}

// codexReply answers "please run X" with reasoning and a call, "run both" with two calls,
// a call's output with a text, anything else with a long text.
func codexReply(n int, r fakeupstream.Request) fakeupstream.Reply {
	last := lastInput(r)
	if last["type"] == "function_call_output" {
		return fakeupstream.Reply{Text: fmt.Sprintf("reply %d: the command ran.", n)}
	}
	var text string
	if c, ok := last["content"].([]any); ok && len(c) > 0 {
		text, _ = c[0].(map[string]any)["text"].(string)
	}
	if strings.HasPrefix(text, "run both") {
		return fakeupstream.Reply{Raw: parallel(n, bytes.Contains(r.Body, []byte(`"stream":true`)))}
	}
	if cmd, ok := strings.CutPrefix(text, "please run "); ok {
		return fakeupstream.Reply{Thinking: "I should run " + cmd + ".", Text: "Running it.",
			Tool: &fakeupstream.ToolCall{Name: "exec_command", Input: fmt.Sprintf(`{"cmd":%q}`, cmd)}}
	}
	return fakeupstream.Reply{Thinking: "A question.", Text: fmt.Sprintf("reply %d: %s", n, strings.Repeat("the cache keeps warm entries; ", 10))}
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

// TestServeFortyTurns: 40 turns of a Codex-like agent through serve, half streamed, a tool
// call every third turn and two calls at once every seventh, at a window the conversation
// outgrows several times: no error reaches the agent, no request the upstream gets is over
// its window (none refused), several compactions applied, every message stored once.
func TestServeFortyTurns(t *testing.T) {
	t.Parallel()
	const window = 4000
	e := newEnv(t, 2400, fakeupstream.Options{Window: window, Reply: codexReply})
	a := newAgent(e, "forty")
	stored := 1 // the developer message
	for turn := 1; turn <= 40; turn++ {
		a.stream = turn%2 == 0
		switch {
		case turn%7 == 0:
			a.input = append(a.input, userItem(fmt.Sprintf("run both builds, turn %d", turn)))
			out := a.send()
			if n := a.answerCalls(out); n != 2 {
				t.Fatalf("turn %d: %d calls", turn, n)
			}
			a.send()
			stored += 1 + 1 + 2 + 1
		case turn%3 == 0:
			a.input = append(a.input, userItem(fmt.Sprintf("please run make test-%d", turn)))
			out := a.send()
			if n := a.answerCalls(out); n != 1 {
				t.Fatalf("turn %d: %d calls", turn, n)
			}
			a.send()
			stored += 4
		default:
			a.input = append(a.input, userItem(fmt.Sprintf("Question %d: %s", turn, strings.Repeat("why does the build fail on port 8080? ", 8))))
			a.send()
			stored += 2
		}
	}
	var refused, answered, largest int
	for _, r := range e.fake.ModelRequests() {
		if r.Status != http.StatusOK {
			refused++
		} else {
			answered++
		}
		largest = max(largest, fakeupstream.Tokens(r.Body))
		if bytes.Contains(r.Body, []byte("previous_response_id")) {
			t.Errorf("a request with previous_response_id")
		}
	}
	if refused != 0 || largest > window {
		t.Fatalf("%d requests refused, %d answered; the largest %d tokens (window %d)", refused, answered, largest, window)
	}
	reps, err := e.store.Reports(context.Background(), "forty", 0)
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
	h := e.history("forty")
	if len(h) != stored {
		t.Fatalf("%d messages stored, want %d:\n%s", len(h), stored, strings.Join(h, "\n"))
	}
	seen := map[string]bool{}
	for _, m := range h {
		if seen[m] && !strings.HasPrefix(m, "tool: ") {
			t.Errorf("stored twice: %.80s", m)
		}
		seen[m] = true
	}
	// The last request: the summary as a developer message after the agent's, the reasoning
	// items of the agent's latest turns as it sent them.
	reqs := e.fake.ModelRequests()
	var last struct {
		Input []map[string]any `json:"input"`
	}
	json.Unmarshal(reqs[len(reqs)-1].Body, &last)
	if len(last.Input) < 3 || last.Input[1]["role"] != "developer" || !strings.Contains(fmt.Sprint(last.Input[1]["content"]), "Summary of the earlier conversation") {
		t.Errorf("the last request's input starts %v", last.Input[:min(2, len(last.Input))])
	}
	t.Logf("%d requests, %d compactions applied; the largest %d tokens (window %d)", answered, applied, largest, window)
}

// TestServeCompactAndRetry: the upstream refuses a prompt over its window with
// context_length_exceeded though serve's limit is far larger: serve compacts the thread and
// retries, and the agent gets the answer, streamed or not, never the refusal.
func TestServeCompactAndRetry(t *testing.T) {
	t.Parallel()
	const window = 1800
	e := newEnv(t, 100000, fakeupstream.Options{Reply: codexReply, Window: window})
	a := newAgent(e, "retry")
	compacted := 0
	for i := range 12 {
		a.stream = i%2 == 1
		a.input = append(a.input, userItem(fmt.Sprintf("note %d: %s", i, strings.Repeat("the build fails on port 8080 again; ", 12))))
		resp, b := a.post("/v1/responses", a.body())
		if resp.StatusCode != 200 || bytes.Contains(b, []byte("event: error")) || bytes.Contains(b, []byte("context_length_exceeded")) {
			t.Fatalf("turn %d: %d %s", i, resp.StatusCode, b)
		}
		if resp.Header.Get(serve.CompactionHeader) != "" {
			compacted++
		}
		// The reply as the agent keeps it: its output items.
		var out struct {
			Output []json.RawMessage `json:"output"`
		}
		if a.stream {
			evs := events(t, b)
			var c struct {
				Response json.RawMessage `json:"response"`
			}
			json.Unmarshal([]byte(evs[len(evs)-1][1]), &c)
			json.Unmarshal(c.Response, &out)
		} else {
			json.Unmarshal(b, &out)
		}
		if len(out.Output) == 0 {
			t.Fatalf("turn %d: no output: %s", i, b)
		}
		a.input = append(a.input, out.Output...)
	}
	refused, largest := 0, 0
	for _, r := range e.fake.ModelRequests() {
		if r.Status != 200 {
			refused++
		} else {
			largest = max(largest, fakeupstream.Tokens(r.Body))
		}
	}
	if refused == 0 || compacted == 0 || largest > window {
		t.Fatalf("%d refused, %d turns compacted, the largest answered %d tokens (window %d)", refused, compacted, largest, window)
	}
	if got := len(e.history("retry")); got != 1+12*2 {
		t.Fatalf("%d messages stored, want %d", got, 1+12*2)
	}
	t.Logf("window %d tokens: %d refused, %d turns compacted and retried", window, refused, compacted)
}

// TestServeCompactEndpoint: /v1/responses/compact stores the agent's input in its thread,
// compacts it, and answers a response.compaction whose compaction item holds the cascade's
// summary, the one the thread's active context now starts its conversation with.
func TestServeCompactEndpoint(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 3000, fakeupstream.Options{Reply: codexReply})
	a := newAgent(e, "compact")
	for i := range 10 {
		a.input = append(a.input, userItem(fmt.Sprintf("Question %d: %s", i, strings.Repeat("why does the build fail on port 8080? ", 8))))
		a.send()
	}
	resp, b := a.post("/v1/responses/compact", a.body())
	if resp.StatusCode != 200 || resp.Header.Get(serve.CompactionHeader) == "" {
		t.Fatalf("%d %v %s", resp.StatusCode, resp.Header, b)
	}
	var c struct {
		Object string           `json:"object"`
		Output []map[string]any `json:"output"`
	}
	if err := json.Unmarshal(b, &c); err != nil || c.Object != "response.compaction" || len(c.Output) != 2 || c.Output[1]["type"] != "compaction" {
		t.Fatalf("%v: %s", err, b)
	}
	active, err := e.store.Active(context.Background(), "compact", memory.ReadOptions{Light: true})
	if err != nil {
		t.Fatal(err)
	}
	var summary string
	for _, en := range active.Entries {
		if en.CompactionID != 0 {
			summary = en.Text()
			break
		}
	}
	if summary == "" || !strings.HasPrefix(summary, "Summary of the earlier conversation") || c.Output[1]["summary"] != summary || c.Output[1]["encrypted_content"] != summary {
		t.Fatalf("the compaction item %v, the thread's summary %q", c.Output[1], summary)
	}
	if got := len(e.history("compact")); got != 1+10*2 {
		t.Errorf("%d messages stored, want %d", got, 1+10*2)
	}
}

// TestServeConflict: a request of the thread's session that shares nothing with its history
// (another conversation) is refused with 409 history_conflict in OpenAI's shape, naming the
// request's own input item, and nothing is sent upstream.
func TestServeConflict(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, fakeupstream.Options{Reply: codexReply})
	a := newAgent(e, "conflict")
	for i := range 3 {
		a.input = append(a.input, userItem(fmt.Sprintf("Question %d", i)))
		a.send()
	}
	before := len(e.fake.ModelRequests())
	b2 := newAgent(e, "conflict")
	b2.input[0] = item(map[string]any{"type": "message", "role": "developer", "content": "Other instructions."})
	b2.input = append(b2.input, userItem("something else entirely"), item(map[string]any{"type": "message", "role": "assistant", "content": []any{map[string]any{"type": "output_text", "text": "other"}}}), userItem("and?"))
	resp, body := b2.post("/v1/responses", b2.body())
	var er struct {
		Error struct {
			Message string  `json:"message"`
			Type    string  `json:"type"`
			Param   *string `json:"param"`
			Code    *string `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &er); err != nil || resp.StatusCode != http.StatusConflict || er.Error.Code == nil || *er.Error.Code != "history_conflict" ||
		er.Error.Param == nil || !strings.HasPrefix(*er.Error.Param, "input[") || er.Error.Type != "invalid_request_error" {
		t.Fatalf("%d %s", resp.StatusCode, body)
	}
	if n := len(e.fake.ModelRequests()); n != before {
		t.Errorf("%d requests went upstream", n-before)
	}
}

// TestServePreviousResponseID: an agent that chains turns by previous_response_id sends only
// its new input: serve stores it after the thread's history and sends the upstream the whole
// active context, without previous_response_id (the upstream need not have stored anything).
func TestServePreviousResponseID(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 100000, fakeupstream.Options{Reply: codexReply})
	a := newAgent(e, "chain")
	a.input = append(a.input, userItem("Question one"))
	a.send()
	body := []byte(`{"model":"gpt-5.5","previous_response_id":"resp_fake0","input":"Question two","store":true}`)
	resp, b := a.post("/v1/responses", body)
	if resp.StatusCode != 200 {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	reqs := e.fake.ModelRequests()
	var up struct {
		Input []map[string]any `json:"input"`
		Store bool             `json:"store"`
	}
	last := reqs[len(reqs)-1].Body
	json.Unmarshal(last, &up)
	if bytes.Contains(last, []byte("previous_response_id")) || !up.Store || len(up.Input) != 5 ||
		up.Input[0]["role"] != "developer" || up.Input[2]["type"] != "reasoning" || up.Input[4]["content"] != "Question two" {
		t.Fatalf("the upstream got %s", last)
	}
	if h := e.history("chain"); len(h) != 5 || h[3] != "user: Question two" {
		t.Fatalf("stored:\n%s", strings.Join(h, "\n"))
	}
}

// TestServeStreamBreaksOff: a stream the upstream ends before response.completed reaches the
// agent ending with an error event in the Responses API's shape; no reply is stored.
func TestServeStreamBreaksOff(t *testing.T) {
	t.Parallel()
	broken := "event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"id\":\"resp_1\",\"object\":\"response\",\"status\":\"in_progress\",\"output\":[]}}\n\n" +
		"event: response.output_item.added\ndata: {\"type\":\"response.output_item.added\",\"output_index\":0,\"item\":{\"id\":\"msg_1\",\"type\":\"message\",\"role\":\"assistant\",\"content\":[]}}\n\n" +
		"event: response.output_text.delta\ndata: {\"type\":\"response.output_text.delta\",\"output_index\":0,\"item_id\":\"msg_1\",\"content_index\":0,\"delta\":\"Hal\"}\n\n"
	e := newEnv(t, 100000, fakeupstream.Options{Reply: fakeupstream.Replies(fakeupstream.Reply{Raw: &fakeupstream.Raw{Status: 200, ContentType: "text/event-stream", Body: broken}})})
	a := newAgent(e, "broken")
	a.stream = true
	a.input = append(a.input, userItem("hello"))
	resp, b := a.post("/v1/responses", a.body())
	evs := events(t, b)
	if resp.StatusCode != 200 || len(evs) == 0 || evs[len(evs)-1][0] != "error" {
		t.Fatalf("%d %s", resp.StatusCode, b)
	}
	var ev struct {
		Type    string `json:"type"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(evs[len(evs)-1][1]), &ev); err != nil || ev.Type != "error" || ev.Message == "" {
		t.Fatalf("the error event %s", evs[len(evs)-1][1])
	}
	for _, m := range e.history("broken") {
		if strings.HasPrefix(m, "assistant") {
			t.Errorf("a reply stored: %s", m)
		}
	}
}

// TestServeRefusedStoresNothing: a request whose newest user message alone is over the
// thread's limit is answered 400 in the Responses API's shape before anything is stored: the
// session's thread is not made, and a thread that exists keeps its history.
func TestServeRefusedStoresNothing(t *testing.T) {
	t.Parallel()
	e := newEnv(t, 2048, fakeupstream.Options{Reply: codexReply})
	huge := "quokkaplan " + strings.Repeat("the whole log of the failing build, line after line; ", 400)
	check := func(resp *http.Response, b []byte) {
		t.Helper()
		var eb struct {
			Error struct{ Type, Message, Code string } `json:"error"`
		}
		if resp.StatusCode != 400 || json.Unmarshal(b, &eb) != nil || eb.Error.Code != "context_length_exceeded" || !strings.Contains(eb.Error.Message, "nothing was stored") {
			t.Fatalf("%d %s; want 400 context_length_exceeded", resp.StatusCode, b)
		}
	}
	a := newAgent(e, "fresh")
	a.input = append(a.input, userItem(huge))
	check(a.post("/v1/responses", a.body()))
	if _, err := e.store.Thread(context.Background(), "fresh"); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Fatalf("the refused request left its thread behind: %v", err)
	}

	b := newAgent(e, "kept")
	b.input = append(b.input, userItem("hello"))
	b.send()
	before := e.history("kept")
	b.input = append(b.input, userItem(huge))
	check(b.post("/v1/responses", b.body()))
	if after := e.history("kept"); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("history after the refused request:\n%s\nwant:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	if hits, err := e.store.Search(context.Background(), "quokkaplan", memory.SearchOptions{}); err != nil || len(hits) != 0 {
		t.Fatalf("search finds the refused message: %v %v", hits, err)
	}
}
