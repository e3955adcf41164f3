package cascade_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
)

type wantRow struct {
	outcome string
	status  int
	class   string
}

// TestOpenAIFaults runs one request against a real HTTP server per fault and checks the
// outcome, the attempt rows and the cooldown.
func TestOpenAIFaults(t *testing.T) {
	t.Parallel()
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	}
	refused := refusedURL

	tests := []struct {
		name         string
		handler      func() http.HandlerFunc // a fresh handler per run
		baseURL      string                  // instead of a server
		timeout      time.Duration
		seedFailures int64 // a cooldown row (already expired) before the run
		wantText     string
		wantClass    cascade.Class
		wantRows     []wantRow
		wantCooldown bool
		wantMinWait  time.Duration
		wantUntil    time.Duration // when set, cooling_until - now
		// wantUntilOver, when set, is less than cooling_until - now.
		wantUntilOver time.Duration
		wantInError   string
	}{
		{
			name: "429 with Retry-After seconds",
			handler: func() http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Retry-After", "7")
					apiError(429, "rate_limit_exceeded", "requests", "Rate limit reached")(w, r)
				}
			},
			wantClass:    cascade.ClassRateLimited,
			wantRows:     []wantRow{{"error", 429, "rate_limited"}, {"error", 429, "rate_limited"}},
			wantCooldown: true,
			wantMinWait:  7 * time.Second,
			wantUntil:    30 * time.Second,
			wantInError:  "HTTP 429",
		},
		{
			// Longer than max_wait: no wait, no second request; the cooldown honours it.
			name: "429 with Retry-After HTTP-date beyond max_wait",
			handler: func() http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Retry-After", time.Now().Add(100*time.Second).UTC().Format(http.TimeFormat))
					apiError(429, "", "", "slow down")(w, r)
				}
			},
			wantClass:     cascade.ClassRateLimited,
			wantRows:      []wantRow{{"error", 429, "rate_limited"}},
			wantCooldown:  true,
			wantUntilOver: 95 * time.Second,
		},
		{
			name: "503 with retry-after-ms",
			handler: func() http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Retry-After-Ms", "1500")
					apiError(503, "", "server_error", "overloaded")(w, r)
				}
			},
			wantClass:    cascade.ClassServer,
			wantRows:     []wantRow{{"error", 503, "server"}, {"error", 503, "server"}},
			wantCooldown: true,
			wantMinWait:  1500 * time.Millisecond,
		},
		{
			name:         "500",
			handler:      func() http.HandlerFunc { return apiError(500, "", "server_error", "internal error") },
			wantClass:    cascade.ClassServer,
			wantRows:     []wantRow{{"error", 500, "server"}, {"error", 500, "server"}},
			wantCooldown: true,
			wantInError:  "HTTP 500",
		},
		{
			name: "503 then success",
			handler: func() http.HandlerFunc {
				var mu sync.Mutex
				n := 0
				return func(w http.ResponseWriter, r *http.Request) {
					mu.Lock()
					n++
					first := n == 1
					mu.Unlock()
					if first {
						apiError(503, "", "", "try again")(w, r)
						return
					}
					reply("the summary")(w, r)
				}
			},
			seedFailures: 2,
			wantText:     "the summary",
			wantRows:     []wantRow{{"error", 503, "server"}, {"ok", 200, ""}},
		},
		{
			name: "502 with an HTML body",
			handler: func() http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "text/html")
					w.WriteHeader(502)
					fmt.Fprint(w, "<html>\n<head><title>502 Bad Gateway</title></head>\n<body><center><h1>502 Bad Gateway</h1></center><hr><center>nginx</center></body>\n</html>\n")
				}
			},
			wantClass:    cascade.ClassServer,
			wantRows:     []wantRow{{"error", 502, "server"}, {"error", 502, "server"}},
			wantCooldown: true,
			wantInError:  "502 Bad Gateway",
		},
		{
			name:         "hang past the request timeout",
			handler:      func() http.HandlerFunc { return hang },
			timeout:      200 * time.Millisecond,
			wantClass:    cascade.ClassTimeout,
			wantRows:     []wantRow{{"error", 0, "timeout"}, {"error", 0, "timeout"}},
			wantCooldown: true,
		},
		{
			name:         "connection refused",
			baseURL:      refused,
			wantClass:    cascade.ClassNetwork,
			wantRows:     []wantRow{{"error", 0, "network"}, {"error", 0, "network"}},
			wantCooldown: true,
		},
		{
			name: "malformed JSON",
			handler: func() http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, `{"id": "x", "choices": [{"message": {"content": "trunc`)
				}
			},
			wantClass:    cascade.ClassBadResponse,
			wantRows:     []wantRow{{"error", 200, "bad_response"}, {"error", 200, "bad_response"}},
			wantCooldown: true,
		},
		{
			name:         "empty content",
			handler:      func() http.HandlerFunc { return reply("  \n ") },
			wantClass:    cascade.ClassBadResponse,
			wantRows:     []wantRow{{"error", 200, "bad_response"}, {"error", 200, "bad_response"}},
			wantCooldown: true,
			wantInError:  "empty completion",
		},
		{
			name: "finish_reason length",
			handler: func() http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					fmt.Fprint(w, chatJSON("a summary cut in the mid", "length"))
				}
			},
			wantClass:    cascade.ClassBadResponse,
			wantRows:     []wantRow{{"error", 200, "bad_response"}, {"error", 200, "bad_response"}},
			wantCooldown: true,
			wantInError:  "truncated",
		},
		{
			name: "401",
			handler: func() http.HandlerFunc {
				return apiError(401, "invalid_api_key", "invalid_request_error", "Incorrect API key provided")
			},
			wantClass:    cascade.ClassAuth,
			wantRows:     []wantRow{{"error", 401, "auth"}},
			wantCooldown: true,
		},
		{
			name:         "403",
			handler:      func() http.HandlerFunc { return apiError(403, "", "", "forbidden") },
			wantClass:    cascade.ClassAuth,
			wantRows:     []wantRow{{"error", 403, "auth"}},
			wantCooldown: true,
		},
		{
			name: "404 model_not_found",
			handler: func() http.HandlerFunc {
				return apiError(404, "model_not_found", "invalid_request_error", "The model `test-model` does not exist")
			},
			wantClass:    cascade.ClassBadRequest,
			wantRows:     []wantRow{{"error", 404, "bad_request"}},
			wantCooldown: true,
		},
		{
			name: "400 other",
			handler: func() http.HandlerFunc {
				return apiError(400, "", "invalid_request_error", "messages[0].role is invalid")
			},
			wantClass:   cascade.ClassBadRequest,
			wantRows:    []wantRow{{"error", 400, "bad_request"}},
			wantInError: "role is invalid", wantCooldown: true,
		},
		{
			name: "400 context_length_exceeded",
			handler: func() http.HandlerFunc {
				return apiError(400, "context_length_exceeded", "invalid_request_error", "Please reduce the length of the messages.")
			},
			wantClass: cascade.ClassContextLength,
			wantRows:  []wantRow{{"error", 400, "context_length"}},
		},
		{
			name: "400 vLLM bare message",
			handler: func() http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(400)
					fmt.Fprint(w, `{"object":"error","message":"This model's maximum context length is 8192 tokens. However, you requested 9210 tokens (8954 in the messages, 256 in the completion). Please reduce the length of the messages or completion.","type":"BadRequestError","param":null,"code":400}`)
				}
			},
			wantClass: cascade.ClassContextLength,
			wantRows:  []wantRow{{"error", 400, "context_length"}},
		},
		{
			name: "400 llama.cpp exceed_context_size_error",
			handler: func() http.HandlerFunc {
				return func(w http.ResponseWriter, r *http.Request) {
					w.Header().Set("Content-Type", "application/json")
					w.WriteHeader(400)
					fmt.Fprint(w, `{"error":{"code":400,"message":"the request exceeds the available context size, try increasing it","type":"exceed_context_size_error","n_prompt_tokens":9000,"n_ctx":8192}}`)
				}
			},
			wantClass: cascade.ClassContextLength,
			wantRows:  []wantRow{{"error", 400, "context_length"}},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			sqldb, _ := openDB(t)
			base := tc.baseURL
			var srv *server
			if tc.handler != nil {
				srv = newServer(t, tc.handler())
				base = srv.URL
			}
			entry := openAIEntry("local", base, func(cfg *cascade.OpenAIConfig, e *cascade.Entry) {
				if tc.timeout > 0 {
					cfg.Timeout = tc.timeout
				}
			})
			h := newHarness(t, sqldb, entry)
			if tc.seedFailures > 0 {
				setCooldown(t, sqldb, "local", t0.Add(-time.Minute), tc.seedFailures)
			}

			res, err := h.c.Complete(context.Background(), 0, llm.Request{Messages: []llm.Message{{Role: "user", Content: "summarize"}}})

			if tc.wantClass == "" {
				if err != nil {
					t.Fatalf("Complete: %v", err)
				}
				if res.Text != tc.wantText || res.Provider != "local" || res.Model != "test-model" {
					t.Fatalf("result = %+v, want text %q from local/test-model", res, tc.wantText)
				}
			} else {
				causes := providerErrors(t, err)
				if len(causes) != 1 {
					t.Fatalf("causes = %d, want 1: %v", len(causes), err)
				}
				if got := causes[0].Class; got != tc.wantClass {
					t.Fatalf("class = %q, want %q (%v)", got, tc.wantClass, err)
				}
				if got, want := errors.Is(err, llm.ErrContextLength), tc.wantClass == cascade.ClassContextLength; got != want {
					t.Errorf("errors.Is(err, llm.ErrContextLength) = %v, want %v", got, want)
				}
				if got, want := errors.Is(err, llm.ErrBadResponse), tc.wantClass == cascade.ClassBadResponse; got != want {
					t.Errorf("errors.Is(err, llm.ErrBadResponse) = %v, want %v", got, want)
				}
				if !strings.Contains(err.Error(), "local") {
					t.Errorf("error %q does not name the provider", err)
				}
				if tc.wantInError != "" && !strings.Contains(err.Error(), tc.wantInError) {
					t.Errorf("error %q does not contain %q", err, tc.wantInError)
				}
			}

			rows := attempts(t, sqldb)
			if len(rows) != len(tc.wantRows) {
				t.Fatalf("%d attempt rows, want %d: %+v", len(rows), len(tc.wantRows), rows)
			}
			for i, w := range tc.wantRows {
				r := rows[i]
				if r.Outcome != w.outcome || r.HTTPStatus != w.status || r.ErrorClass != w.class {
					t.Errorf("row %d = %s/%d/%q, want %s/%d/%q (error %q)", i, r.Outcome, r.HTTPStatus, r.ErrorClass, w.outcome, w.status, w.class, r.Error)
				}
				if r.Provider != "local" || r.Model != "test-model" || !r.StartedAt.Equal(t0) || r.CompactionID != nil {
					t.Errorf("row %d = %+v: wrong provider, model, start or compaction", i, r)
				}
				if (r.Outcome == "error") != (r.Error != "") {
					t.Errorf("row %d: outcome %s with error text %q", i, r.Outcome, r.Error)
				}
				if r.Outcome == "ok" && (r.PromptTokens != 11 || r.CompletionTokens != 7) {
					t.Errorf("row %d tokens = %d/%d, want 11/7", i, r.PromptTokens, r.CompletionTokens)
				}
			}

			row, ok := cooldown(t, sqldb, "local")
			cooling := ok && row.CoolingUntil > t0.UnixMilli()
			if cooling != tc.wantCooldown {
				t.Fatalf("cooling = %v (row %+v), want %v", cooling, row, tc.wantCooldown)
			}
			if tc.wantCooldown && (row.ConsecutiveFailures != 1 || row.LastError == "") {
				t.Errorf("cooldown row = %+v, want 1 failure and a last error", row)
			}
			if tc.wantUntil > 0 {
				if got := time.UnixMilli(row.CoolingUntil).Sub(t0); got != tc.wantUntil {
					t.Errorf("cooldown = %v, want %v", got, tc.wantUntil)
				}
			}
			if got := time.UnixMilli(row.CoolingUntil).Sub(t0); tc.wantUntilOver > 0 && got <= tc.wantUntilOver {
				t.Errorf("cooldown = %v, want over %v", got, tc.wantUntilOver)
			}
			if tc.seedFailures > 0 && tc.wantClass == "" && (row.ConsecutiveFailures != 0 || row.CoolingUntil != 0) {
				t.Errorf("after a success the cooldown row = %+v, want it reset", row)
			}

			waits := h.recordedWaits()
			if want := len(tc.wantRows) - 1; len(waits) != want {
				t.Errorf("waits = %v, want %d", waits, want)
			}
			for _, w := range waits {
				if w < tc.wantMinWait {
					t.Errorf("waited %v, want at least %v (Retry-After)", w, tc.wantMinWait)
				}
			}
			if srv != nil && int(srv.hits.Load()) != len(tc.wantRows) {
				t.Errorf("server saw %d requests, want %d", srv.hits.Load(), len(tc.wantRows))
			}
		})
	}
}

// TestOpenAIRequestBody checks what reaches the server: reasoning models get
// max_completion_tokens and no temperature, others max_tokens and temperature (0 included).
func TestOpenAIRequestBody(t *testing.T) {
	t.Parallel()
	tests := []struct {
		model       string
		temperature float64
		maxTokens   int // in the request; 0: the provider's MaxOutputTokens (256)
		reasoning   bool
		wantMax     float64
	}{
		{model: "llama3.2", temperature: 0, wantMax: 256},
		{model: "gpt-4o-mini", temperature: 0.3, maxTokens: 100, wantMax: 100},
		{model: "o3-mini", temperature: 0.3, reasoning: true, wantMax: 256},
		{model: "o1", reasoning: true, wantMax: 256},
		{model: "o4-mini", reasoning: true, wantMax: 256},
		{model: "gpt-5-mini", temperature: 0.7, maxTokens: 64, reasoning: true, wantMax: 64},
		{model: "openai/gpt-5", reasoning: true, wantMax: 256},
		{model: "openrouter/openai/o3", reasoning: true, wantMax: 256},
		{model: "qwen/qwen3-8b", temperature: 0.2, wantMax: 256},
	}
	for _, tc := range tests {
		t.Run(tc.model, func(t *testing.T) {
			var mu sync.Mutex
			var body map[string]any
			var auth string
			srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
				b, _ := io.ReadAll(r.Body)
				mu.Lock()
				json.Unmarshal(b, &body)
				auth = r.Header.Get("Authorization")
				mu.Unlock()
				reply("ok")(w, r)
			})
			p := cascade.NewOpenAI(cascade.OpenAIConfig{Name: "p", BaseURL: srv.URL + "/v1", Model: tc.model,
				Temperature: tc.temperature, MaxOutputTokens: 256, Timeout: 5 * time.Second})
			resp, err := p.Complete(context.Background(), llm.Request{MaxTokens: tc.maxTokens,
				Messages: []llm.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "hello"}}})
			if err != nil {
				t.Fatal(err)
			}
			if resp.Text != "ok" || resp.FinishReason != "stop" || resp.PromptTokens != 11 || resp.CompletionTokens != 7 {
				t.Errorf("response = %+v", resp)
			}
			mu.Lock()
			defer mu.Unlock()
			if body["model"] != tc.model {
				t.Errorf("model = %v, want %s", body["model"], tc.model)
			}
			msgs, _ := body["messages"].([]any)
			if len(msgs) != 2 {
				t.Errorf("messages = %v", body["messages"])
			}
			temp, hasTemp := body["temperature"]
			mct, hasMCT := body["max_completion_tokens"]
			mt, hasMT := body["max_tokens"]
			if tc.reasoning {
				if hasTemp || hasMT || !hasMCT || mct != tc.wantMax {
					t.Errorf("reasoning body: temperature %v, max_tokens %v, max_completion_tokens %v; want only max_completion_tokens %v", temp, mt, mct, tc.wantMax)
				}
			} else {
				if !hasTemp || temp != tc.temperature || !hasMT || mt != tc.wantMax || hasMCT {
					t.Errorf("body: temperature %v (%v), max_tokens %v, max_completion_tokens %v; want temperature %v, max_tokens %v", temp, hasTemp, mt, mct, tc.temperature, tc.wantMax)
				}
			}
			if auth != "" {
				t.Errorf("Authorization %q sent with no api_key_env", auth)
			}
		})
	}
}

// TestOpenAIAPIKey checks that the key is read from the environment at request time.
func TestOpenAIAPIKey(t *testing.T) {
	t.Parallel()
	var got []string
	var mu sync.Mutex
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Get("Authorization"))
		mu.Unlock()
		reply("ok")(w, r)
	})
	env := map[string]string{"MY_KEY": "key-one"}
	p := cascade.NewOpenAI(cascade.OpenAIConfig{Name: "p", BaseURL: srv.URL + "/v1", Model: "m", APIKeyEnv: "MY_KEY",
		Getenv: func(k string) string { return env[k] }})
	req := llm.Request{Messages: []llm.Message{{Role: "user", Content: "hi"}}}
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	env["MY_KEY"] = "key-two"
	if _, err := p.Complete(context.Background(), req); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if want := []string{"Bearer key-one", "Bearer key-two"}; strings.Join(got, ",") != strings.Join(want, ",") {
		t.Fatalf("Authorization headers = %q, want %q", got, want)
	}
}

// TestMissingAPIKey: an unset key variable fails fast with class auth, names the variable,
// sends nothing, and the cascade moves on.
func TestMissingAPIKey(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	srv := newServer(t, reply("never"))
	next := &cascade.Fake{Script: []cascade.FakeStep{cascade.FakeReply("from the fake")}}
	h := newHarness(t, sqldb,
		openAIEntry("remote", srv.URL, func(cfg *cascade.OpenAIConfig, e *cascade.Entry) {
			cfg.APIKeyEnv = "CASCADE_TEST_UNSET_KEY_VAR"
			cfg.Getenv = func(string) string { return "" }
		}),
		fakeEntry("offline", next))

	res, err := h.c.Complete(context.Background(), 0, llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Provider != "offline" || res.Text != "from the fake" {
		t.Fatalf("result = %+v, want the fake's", res)
	}
	if n := srv.hits.Load(); n != 0 {
		t.Fatalf("server saw %d requests, want 0", n)
	}
	rows := attempts(t, sqldb)
	if len(rows) != 2 || cascade.Class(rows[0].ErrorClass) != cascade.ClassAuth || rows[0].HTTPStatus != 0 || rows[1].Outcome != "ok" {
		t.Fatalf("rows = %+v, want remote auth then offline ok", rows)
	}
	if !strings.Contains(rows[0].Error, "CASCADE_TEST_UNSET_KEY_VAR") {
		t.Errorf("error %q does not name the variable", rows[0].Error)
	}
	if row, ok := cooldown(t, sqldb, "remote"); !ok || row.ConsecutiveFailures != 1 || !strings.Contains(row.LastError, "CASCADE_TEST_UNSET_KEY_VAR") {
		t.Errorf("cooldown row = %+v, %v; want one failure naming the variable", row, ok)
	}

	// Directly: the error matches ErrNoAPIKey and names the variable.
	p := cascade.NewOpenAI(cascade.OpenAIConfig{Name: "remote", BaseURL: srv.URL + "/v1", Model: "m",
		APIKeyEnv: "CASCADE_TEST_UNSET_KEY_VAR", Getenv: func(string) string { return "" }})
	_, err = p.Complete(context.Background(), llm.Request{})
	if class, _, _ := cascade.Classify(err); class != cascade.ClassAuth || !errors.Is(err, cascade.ErrNoAPIKey) ||
		!strings.Contains(err.Error(), "CASCADE_TEST_UNSET_KEY_VAR") {
		t.Errorf("err = %v (class %s), want auth naming the variable", err, class)
	}
}

// TestAPIKeyNeverLeaks triggers every kind of failure with a key set, against servers that
// echo the Authorization header back, and looks for the key everywhere the cascade writes.
func TestAPIKeyNeverLeaks(t *testing.T) {
	const key = "sk-test-SECRETKEY123456789"
	const env = "CASCADE_TEST_LEAK_KEY"
	t.Setenv(env, key)
	t.Run("default redaction", func(t *testing.T) { testKeyNeverLeaks(t, key, env, nil) })
	// The provider removes its own key even when the configured redaction misses it.
	t.Run("no redaction", func(t *testing.T) { testKeyNeverLeaks(t, key, env, func(s string) string { return s }) })
}

func testKeyNeverLeaks(t *testing.T, key, env string, redactFn func(string) string) {
	sqldb, _ := openDB(t)

	var mu sync.Mutex
	var seen []string
	echo := func(status int, shape string) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			a := r.Header.Get("Authorization")
			mu.Lock()
			seen = append(seen, a)
			mu.Unlock()
			switch shape {
			case "api": // an OpenAI error object quoting the header
				apiError(status, "", "invalid_request_error", "Incorrect API key provided: "+a+" (key "+strings.TrimPrefix(a, "Bearer ")+")")(w, r)
			case "text": // a plain-text body dumping the request headers
				w.WriteHeader(status)
				for k, v := range r.Header {
					fmt.Fprintf(w, "%s: %s\n", k, strings.Join(v, ","))
				}
			case "bare": // vLLM's top-level error shape
				w.WriteHeader(status)
				json.NewEncoder(w).Encode(map[string]any{"object": "error", "message": "bad header " + a, "type": "BadRequestError", "code": status})
			case "badjson":
				fmt.Fprint(w, "not json at all, header was "+a)
			}
		}
	}
	refused := refusedURL
	hang := func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-r.Context().Done():
		case <-time.After(3 * time.Second):
		}
	}
	withKey := func(cfg *cascade.OpenAIConfig, e *cascade.Entry) {
		cfg.APIKeyEnv = env
		cfg.Timeout = 300 * time.Millisecond
	}
	entries := []cascade.Entry{
		openAIEntry("e401", newServer(t, echo(401, "api")).URL, withKey),
		openAIEntry("e403", newServer(t, echo(403, "text")).URL, withKey),
		openAIEntry("e429", newServer(t, echo(429, "api")).URL, withKey),
		openAIEntry("e500", newServer(t, echo(500, "text")).URL, withKey),
		openAIEntry("e503", newServer(t, echo(503, "api")).URL, withKey),
		openAIEntry("e400", newServer(t, echo(400, "bare")).URL, withKey),
		openAIEntry("e404", newServer(t, echo(404, "api")).URL, withKey),
		openAIEntry("ebadjson", newServer(t, echo(200, "badjson")).URL, withKey),
		openAIEntry("ehang", newServer(t, hang).URL, withKey),
		openAIEntry("erefused", refused, withKey),
	}
	h := newHarnessWith(t, sqldb, cascade.Options{Redact: redactFn}, entries...) // nil: the default
	_, err := h.c.Complete(context.Background(), 0, llm.Request{Messages: []llm.Message{{Role: "user", Content: "x"}}})
	if err == nil {
		t.Fatal("Complete succeeded, want every provider to fail")
	}

	mu.Lock()
	if len(seen) == 0 || seen[0] != "Bearer "+key {
		t.Fatalf("servers saw Authorization %q, want the key sent (else this test proves nothing)", seen)
	}
	mu.Unlock()

	var texts []string
	texts = append(texts, errorTexts(err)...)
	for _, pe := range providerErrors(t, err) {
		texts = append(texts, errorTexts(pe.Err)...)
	}
	for _, r := range attempts(t, sqldb) {
		texts = append(texts, r.Error)
	}
	st, serr := h.c.Status(context.Background())
	if serr != nil {
		t.Fatal(serr)
	}
	for _, s := range st {
		texts = append(texts, s.LastError)
	}
	for _, ev := range h.recordedEvents() {
		texts = append(texts, ev.Err)
	}
	js, _ := json.Marshal(st)
	texts = append(texts, string(js))
	for _, s := range texts {
		if strings.Contains(s, key) || strings.Contains(s, "SECRETKEY123456789") {
			t.Errorf("the key leaked into %q", s)
		}
	}

	// The errors still say what went wrong.
	msg := err.Error()
	for _, want := range []string{"e401", "authentication failed (HTTP 401)", "Incorrect API key provided",
		"e429", "rate limited (HTTP 429)", "e500", "server error (HTTP 500)", "e400", "bad request (HTTP 400)",
		"ebadjson", "bad response", "ehang", "timeout", "erefused", "network error"} {
		if !strings.Contains(msg, want) {
			t.Errorf("error does not contain %q:\n%s", want, msg)
		}
	}
	if n := len(providerErrors(t, err)); n != len(entries) {
		t.Errorf("%d causes, want %d", n, len(entries))
	}
	if testing.Verbose() {
		t.Log(msg)
	}
}

// refusedURL is an address where nothing listens: port 1 (tcpmux) is below the ports the
// system hands out and no test listens on it. A closed listener's port could be taken by the
// tests running beside (those of the PostgreSQL run are another process), and then it answers.
const refusedURL = "http://127.0.0.1:1"
