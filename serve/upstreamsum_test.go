package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/internal/fakeupstream"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
	"github.com/memcascade/memcascade/tokencount"
)

// summaryMarker is in every summarization request the compactor sends (its request template).
const summaryMarker = "The transcript runs to the closing tag"

// upstreamSummary is the fake upstream's summary.
const upstreamSummary = "UPSTREAM-SUMMARY: the user asked about the weather in many cities."

// The keys of the tests: the one configured in serve, and the one an agent sends.
const (
	configuredKey = "sk-configured-key-0123456789abcdef"
	clientKey     = "sk-ant-client-key-0123456789abcdef"
)

// shape is an API shape of serve and of its upstream: a fake upstream of that shape that
// answers summarization requests with upstreamSummary, the route an agent posts to, and the
// agent's request of a conversation.
type shape struct {
	name    string
	route   string // the proxy's route under /t/THREAD/v1
	upPath  string // the upstream's route the summarization request goes to
	handler func(t *testing.T) http.Handler
	body    func(turns []string) string
	header  []string // the agent's headers
	// check checks the summarization request's headers and body in the shape's terms.
	check func(t *testing.T, h http.Header, body map[string]any)
}

var shapes = []shape{
	{
		name: "chat_completions", route: "/chat/completions", upPath: "/v1/chat/completions",
		handler: func(t *testing.T) http.Handler {
			u := newUpstream(t)
			u.reply = func(n int, msgs []chat.Message) chat.Message {
				if strings.Contains(msgs[len(msgs)-1].Text(), summaryMarker) {
					return chat.TextMessage("assistant", upstreamSummary)
				}
				return chat.TextMessage("assistant", fmt.Sprintf("reply %d", n))
			}
			return u.srv.Config.Handler
		},
		body: func(turns []string) string {
			msgs := []map[string]string{{"role": "system", "content": "You are helpful."}}
			for i, s := range turns {
				msgs = append(msgs, map[string]string{"role": "user", "content": s})
				if i < len(turns)-1 {
					msgs = append(msgs, map[string]string{"role": "assistant", "content": fmt.Sprintf("reply %d", i+1)})
				}
			}
			b, _ := json.Marshal(map[string]any{"model": "agent-model-cc", "messages": msgs})
			return string(b)
		},
		check: func(t *testing.T, h http.Header, body map[string]any) {
			if got := h.Get("Authorization"); got != "Bearer "+configuredKey {
				t.Errorf("Authorization = %q, want the configured key as a bearer token", got)
			}
			msgs, _ := body["messages"].([]any)
			if body["model"] != "agent-model-cc" || len(msgs) != 2 || body["stream"] == true {
				t.Errorf("the summarization request = %v, want the thread's model, a system and a user message, not streamed", body)
			}
		},
	},
	{
		name: "anthropic_messages", route: "/messages", upPath: "/v1/messages",
		handler: func(t *testing.T) http.Handler {
			f := fakeupstream.NewAnthropic(fakeupstream.Options{Reply: summaryReply})
			t.Cleanup(f.Close)
			return f.Config.Handler
		},
		body: func(turns []string) string {
			var msgs []map[string]any
			for i, s := range turns {
				msgs = append(msgs, map[string]any{"role": "user", "content": s})
				if i < len(turns)-1 {
					msgs = append(msgs, map[string]any{"role": "assistant", "content": []map[string]string{{"type": "text", "text": "ok"}}})
				}
			}
			b, _ := json.Marshal(map[string]any{"model": "agent-model-claude", "max_tokens": 1024, "system": "You are helpful.", "messages": msgs})
			return string(b)
		},
		header: []string{"X-Api-Key", clientKey, "Anthropic-Version", "2023-06-01"},
		check: func(t *testing.T, h http.Header, body map[string]any) {
			if h.Get("X-Api-Key") != clientKey || h.Get("Anthropic-Version") != "2023-06-01" || h.Get("Authorization") != "" {
				t.Errorf("headers = %v, want the agent's x-api-key and anthropic-version", h)
			}
			msgs, _ := body["messages"].([]any)
			first, _ := msgs[0].(map[string]any)
			system, _ := body["system"].(string)
			if body["model"] != "agent-model-claude" || len(msgs) != 1 || first["role"] != "user" || system == "" ||
				body["max_tokens"] == nil || body["stream"] != nil {
				t.Errorf("the summarization request = %v, want model, system, one user message, max_tokens, no stream", body)
			}
		},
	},
	{
		name: "openai_responses", route: "/responses", upPath: "/v1/responses",
		handler: func(t *testing.T) http.Handler {
			f := fakeupstream.NewResponses(fakeupstream.Options{Reply: summaryReply})
			t.Cleanup(f.Close)
			return f.Config.Handler
		},
		body: func(turns []string) string {
			var input []map[string]any
			for i, s := range turns {
				input = append(input, map[string]any{"type": "message", "role": "user", "content": []map[string]string{{"type": "input_text", "text": s}}})
				if i < len(turns)-1 {
					input = append(input, map[string]any{"type": "message", "role": "assistant", "content": []map[string]string{{"type": "output_text", "text": "ok"}}})
				}
			}
			b, _ := json.Marshal(map[string]any{"model": "agent-model-codex", "instructions": "You are helpful.", "input": input, "store": false})
			return string(b)
		},
		header: []string{"Authorization", "Bearer " + clientKey},
		check: func(t *testing.T, h http.Header, body map[string]any) {
			if h.Get("Authorization") != "Bearer "+clientKey {
				t.Errorf("Authorization = %q, want the agent's", h.Get("Authorization"))
			}
			input, _ := body["input"].([]any)
			first, _ := input[0].(map[string]any)
			instructions, _ := body["instructions"].(string)
			if body["model"] != "agent-model-codex" || len(input) != 1 || first["type"] != "message" || first["role"] != "user" ||
				instructions == "" || body["store"] != false || body["stream"] != nil {
				t.Errorf("the summarization request = %v, want model, instructions, one user message item, store false", body)
			}
		},
	},
}

// summaryReply answers a summarization request with upstreamSummary, an agent's with "ok".
func summaryReply(_ int, r fakeupstream.Request) fakeupstream.Reply {
	if bytes.Contains(r.Body, []byte(summaryMarker)) {
		return fakeupstream.Reply{Text: upstreamSummary}
	}
	return fakeupstream.Reply{Text: "ok"}
}

// recorded is a request the upstream received.
type recorded struct {
	path   string
	header http.Header
	body   []byte
}

// sumUpstream is a fake upstream of a shape, recording every request; a summarization
// request is answered with fail's status and body when fail is set.
type sumUpstream struct {
	srv  *httptest.Server
	mu   sync.Mutex
	reqs []recorded
	fail *fakeupstream.Raw
}

func (u *sumUpstream) summaries() []recorded {
	u.mu.Lock()
	defer u.mu.Unlock()
	var out []recorded
	for _, r := range u.reqs {
		if bytes.Contains(r.body, []byte(summaryMarker)) {
			out = append(out, r)
		}
	}
	return out
}

// sumEnv is a memctl serve in front of a fake upstream of a shape, its summarizer cascade
// built as memctl serve builds it: the upstream rung, then offline, when the config names no
// cascade.
type sumEnv struct {
	t      *testing.T
	sh     shape
	store  *memory.Store
	srv    *serve.Server
	up     *sumUpstream
	url    string
	logs   *lockedBuffer
	dbName string
}

// newSumEnv is serve over a fake upstream of shape sh, with cfg and the upstream key key;
// each of opts changes the server before its upstream rung is made.
func newSumEnv(t *testing.T, sh shape, cfg config.Config, key string, opts ...func(*serve.Server)) *sumEnv {
	t.Helper()
	ctx := context.Background()
	dbName := freshDB.Name(t, "memctl.db")
	store, err := memory.Open(ctx, dbName)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	up := &sumUpstream{}
	inner := sh.handler(t)
	up.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		up.mu.Lock()
		up.reqs = append(up.reqs, recorded{path: r.URL.Path, header: r.Header.Clone(), body: body})
		fail := up.fail
		up.mu.Unlock()
		if fail != nil && bytes.Contains(body, []byte(summaryMarker)) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(fail.Status)
			io.WriteString(w, fail.Body)
			return
		}
		r.Body = io.NopCloser(bytes.NewReader(body))
		inner.ServeHTTP(w, r)
	}))
	t.Cleanup(up.srv.Close)
	e := &sumEnv{t: t, sh: sh, store: store, up: up, logs: &lockedBuffer{}, dbName: dbName}
	e.srv = &serve.Server{Store: store, Upstream: serve.UpstreamBase(up.srv.URL), UpstreamKey: key, LoopbackOnly: true,
		Logger: slog.New(slog.NewTextHandler(e.logs, &slog.HandlerOptions{Level: slog.LevelDebug}))}
	for _, o := range opts {
		o(e.srv)
	}
	// The turns' 635 tokens are under the limit's trigger, over its target.
	cfg.Compaction.TokenLimit = 1000
	var first []cascade.Entry
	if !cfg.NamesCascade() { // as memctl serve decides
		first = []cascade.Entry{e.srv.UpstreamEntry()}
	}
	counter, err := store.Counter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	e.srv.Compactor, e.srv.Cascade, err = cfg.NewCompactorWith(store.DB(), store,
		cascade.Options{Count: counter.CountText, Logger: e.srv.Logger}, compact.Config{Logger: e.srv.Logger}, first)
	if err != nil {
		t.Fatal(err)
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

// turns sends n turns of a conversation to thread, the whole conversation each time.
func (e *sumEnv) turns(thread string, n int) {
	e.t.Helper()
	var said []string
	for i := range n {
		said = append(said, fmt.Sprintf("Turn %d: what is the weather in city number %d? %s", i+1, i+1, strings.Repeat("Tell me more. ", 20)))
		req, _ := http.NewRequest(http.MethodPost, e.url+"/t/"+thread+"/v1"+e.sh.route, strings.NewReader(e.sh.body(said)))
		req.Header.Set("Content-Type", "application/json")
		for j := 0; j+1 < len(e.sh.header); j += 2 {
			req.Header.Set(e.sh.header[j], e.sh.header[j+1])
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			e.t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			e.t.Fatalf("turn %d: %d %s", i+1, resp.StatusCode, b)
		}
	}
}

// compact forces a compaction of thread through serve's API and returns its report.
func (e *sumEnv) compact(thread string) memory.Report {
	e.t.Helper()
	resp, err := http.Post(e.url+"/api/threads/"+thread+"/compact", "application/json", strings.NewReader(`{"force":true}`))
	if err != nil {
		e.t.Fatal(err)
	}
	defer resp.Body.Close()
	b, _ := io.ReadAll(resp.Body)
	var rep memory.Report
	if err := json.Unmarshal(b, &rep); err != nil || rep.Status != memory.StatusApplied {
		e.t.Fatalf("compaction: %d %s", resp.StatusCode, b)
	}
	return rep
}

// summary is the text of the summary in thread's active context.
func (e *sumEnv) summary(thread string) string {
	e.t.Helper()
	a, err := e.store.Active(context.Background(), thread)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, en := range a.Entries {
		if en.CompactionID != 0 {
			return en.Message.Text()
		}
	}
	e.t.Fatalf("no summary in the active context of %s", thread)
	return ""
}

// noKey checks that no key is in the database (the file's bytes on SQLite; the history and
// the attempts' errors as stored on either backend) nor in the log.
func (e *sumEnv) noKey() {
	e.t.Helper()
	for _, key := range []string{configuredKey, clientKey} {
		if strings.Contains(e.logs.String(), key) {
			e.t.Fatalf("a key is in the log:\n%s", e.logs.String())
		}
		if testdb.Backend() == testdb.SQLite {
			for _, suffix := range []string{"", "-wal"} {
				b, err := os.ReadFile(e.dbName + suffix)
				if err != nil && !os.IsNotExist(err) {
					e.t.Fatal(err)
				}
				if bytes.Contains(b, []byte(key)) {
					e.t.Fatalf("a key is in the database file %s", e.dbName+suffix)
				}
			}
		}
		atts, err := e.store.Attempts(context.Background(), "", 0)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, a := range atts {
			if strings.Contains(a.Error, key) {
				e.t.Fatalf("a key is in an attempt's error: %+v", a)
			}
		}
	}
}

// TestUpstreamSummarizes: with no cascade in the config, a compaction through serve sends its
// summarization request to the upstream, in the thread's API shape, with the thread's model
// and the key its turns reach the upstream with (the configured one; else the agent's), and
// stores the upstream's summary; no key is stored or logged; the page names the summarizer.
func TestUpstreamSummarizes(t *testing.T) {
	t.Parallel()
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			key := ""
			if sh.name == "chat_completions" {
				key = configuredKey // Chat Completions forwards no agent's key
			}
			e := newSumEnv(t, sh, config.Default(), key)
			e.turns("t1", 6)
			rep := e.compact("t1")
			sums := e.up.summaries()
			if len(sums) != 1 || sums[0].path != sh.upPath {
				t.Fatalf("summarization requests %v, want one to %s", sums, sh.upPath)
			}
			var body map[string]any
			if err := json.Unmarshal(sums[0].body, &body); err != nil {
				t.Fatal(err)
			}
			sh.check(t, sums[0].header, body)
			if rep.Provider != serve.UpstreamRungName || !strings.HasPrefix(rep.Model, "agent-model-") {
				t.Fatalf("report: provider %q, model %q; want the upstream rung with the thread's model", rep.Provider, rep.Model)
			}
			if s := e.summary("t1"); !strings.Contains(s, upstreamSummary) {
				t.Fatalf("the stored summary is not the upstream's:\n%s", s)
			}
			e.noKey()
			_, page, _ := (&env{t: t, url: e.url}).get("/threads/t1")
			if want := "summarizer: upstream (" + sh.name + ", model " + rep.Model + "), then offline"; !strings.Contains(page, want) {
				t.Fatalf("the thread's page does not say %q", want)
			}
			_, index, _ := (&env{t: t, url: e.url}).get("/")
			if !strings.Contains(index, "upstream (the model serve fronts, in each thread&#39;s API shape, with its model), then offline") ||
				!strings.Contains(index, "serve&#39;s default, as the config names no cascade") {
				t.Fatalf("the index does not name the default summarizer:\n%s", index)
			}
		})
	}
}

// TestUpstreamSummaryFails: when the upstream fails to summarize (500, 529 overloaded, or
// down), the offline rung writes the summary and the thread loses nothing.
func TestUpstreamSummaryFails(t *testing.T) {
	t.Parallel()
	fails := []struct {
		name string
		raw  *fakeupstream.Raw // nil: the upstream is down
	}{
		{"500", &fakeupstream.Raw{Status: 500, Body: `{"error":{"message":"internal error","type":"server_error"}}`}},
		{"529", &fakeupstream.Raw{Status: 529, Body: `{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}`}},
		{"down", nil},
	}
	for _, sh := range shapes {
		for _, f := range fails {
			t.Run(sh.name+"/"+f.name, func(t *testing.T) {
				t.Parallel()
				key := ""
				if sh.name == "chat_completions" {
					key = configuredKey
				}
				e := newSumEnv(t, sh, config.Default(), key)
				e.turns("t1", 6)
				before := len((&env{t: t, store: e.store}).history("t1"))
				if f.raw != nil {
					e.up.mu.Lock()
					e.up.fail = f.raw
					e.up.mu.Unlock()
				} else {
					e.up.srv.Close()
				}
				rep := e.compact("t1")
				if rep.Provider != config.OfflineName {
					t.Fatalf("report: provider %q, want offline", rep.Provider)
				}
				if n := len((&env{t: t, store: e.store}).history("t1")); n != before {
					t.Fatalf("the history holds %d messages after the compaction, %d before", n, before)
				}
				if s := e.summary("t1"); s == "" || strings.Contains(s, upstreamSummary) {
					t.Fatalf("the stored summary is not offline's:\n%s", s)
				}
				full, err := e.store.Report(context.Background(), rep.ID)
				if err != nil {
					t.Fatal(err)
				}
				if len(full.Attempts) < 2 || full.Attempts[0].Provider != serve.UpstreamRungName || full.Attempts[0].Outcome != "error" {
					t.Fatalf("attempts %+v, want the upstream's failure first", full.Attempts)
				}
				e.noKey()
			})
		}
	}
}

// TestConfiguredCascadeOverrides: a cascade in the config summarizes alone: the upstream gets
// no summarization request.
func TestConfiguredCascadeOverrides(t *testing.T) {
	t.Parallel()
	cfg := config.Default()
	cfg.Cascade = []config.Provider{config.Provider{Name: "mine", Type: config.TypeExtractive}.WithDefaults()}
	if !cfg.NamesCascade() {
		t.Fatal("a config with a cascade of its own names none")
	}
	for _, sh := range shapes {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			e := newSumEnv(t, sh, cfg, "")
			e.turns("t1", 6)
			rep := e.compact("t1")
			if rep.Provider != "mine" || len(e.up.summaries()) != 0 {
				t.Fatalf("provider %q, %d summarization requests upstream; want the config's cascade alone", rep.Provider, len(e.up.summaries()))
			}
			_, index, _ := (&env{t: t, url: e.url}).get("/")
			if !strings.Contains(index, "<code>mine</code> (the config&#39;s cascade, in order)") {
				t.Fatalf("the index does not name the config's cascade:\n%s", index)
			}
		})
	}
}
