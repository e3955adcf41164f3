package serve_test

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/memory"
)

// A server whose upstream is itself refuses the request it sends itself with 508, at once:
// the agent gets the 508 and its message, the log says what was refused, and no second thread
// receives a copy of the messages.
func TestSelfPointingUpstreamRefused(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{selfUpstream: true})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, e.url+"/t/outer/v1/chat/completions",
		strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
	req.Header.Set("Content-Type", "application/json")
	code, body, _ := e.do(req)
	if code != http.StatusLoopDetected || errorCode(t, body) != "loop_detected" || !strings.Contains(body, "--upstream points back at it") {
		t.Fatalf("%d %s, want 508 loop_detected", code, body)
	}
	if _, err := e.store.Thread(context.Background(), "inner"); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Fatalf("the looped request created the thread inner: %v", err)
	}
	logs := e.logs.String()
	if !strings.Contains(logs, "a loop") || strings.Count(logs, "status=508") != 2 || strings.Contains(logs, "status=200") {
		t.Fatalf("the log does not say what was refused (both requests 508, none 200):\n%s", logs)
	}
}

// State-changing API routes answer no request a page of another site can make: a foreign
// Origin, Sec-Fetch-Site cross-site or same-site, or a body that is not declared JSON (a form
// or a text/plain POST needs no preflight) is refused, token or not, and nothing runs.
func TestNoCrossSiteWrites(t *testing.T) {
	t.Parallel()
	for _, token := range []string{"", "secret"} {
		e := newEnv(t, envOptions{token: token})
		auth := []string{}
		if token != "" {
			auth = []string{"Authorization", "Bearer " + token}
		}
		if code, body, _ := e.post("/t/x/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`, auth...); code != 200 {
			t.Fatalf("setup: %d %s", code, body)
		}
		cases := []struct {
			name   string
			header []string
			ctype  string
			status int
		}{
			{"foreign origin", []string{"Origin", "https://evil.example"}, "application/json", 403},
			{"null origin", []string{"Origin", "null"}, "application/json", 403},
			{"cross-site", []string{"Sec-Fetch-Site", "cross-site"}, "application/json", 403},
			{"same-site", []string{"Sec-Fetch-Site", "same-site"}, "application/json", 403},
			{"no content type", nil, "", 415},
			{"text/plain", nil, "text/plain", 415},
			{"form", nil, "application/x-www-form-urlencoded", 415},
		}
		for _, tc := range cases {
			req, _ := http.NewRequest(http.MethodPost, e.url+"/api/threads/x/compact", strings.NewReader(""))
			if tc.ctype != "" {
				req.Header.Set("Content-Type", tc.ctype)
			}
			h := append(append([]string{}, auth...), tc.header...)
			for i := 0; i+1 < len(h); i += 2 {
				req.Header.Set(h[i], h[i+1])
			}
			code, body, _ := e.do(req)
			if code != tc.status {
				t.Errorf("token %q, %s: %d %s, want %d", token, tc.name, code, body, tc.status)
			}
		}
		if reps, err := e.store.Reports(context.Background(), "x", 0); err != nil || len(reps) != 0 {
			t.Fatalf("token %q: a refused request ran a compaction (%d reports, %v)", token, len(reps), err)
		}
		// The same request from the server's own origin goes through.
		h := append(append([]string{}, auth...), "Origin", e.url, "Sec-Fetch-Site", "same-origin")
		if code, body, _ := e.post("/api/threads/x/compact", `{"dry_run": true}`, h...); code != 200 {
			t.Fatalf("token %q, same origin: %d %s", token, code, body)
		}
	}
}

// A thread created for a model the tokenizer does not know is counted with o200k: the log
// says so, once, where the operator sees it; a known model gives no warning.
func TestUnknownModelWarned(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	for i, model := range []string{"qwen3-8b", "qwen3-8b", "gpt-4o"} {
		thread := "local"
		if model == "gpt-4o" {
			thread = "openai"
		}
		body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":"hi %d"}]}`, model, i)
		if code, resp, _ := e.post("/t/"+thread+"/v1/chat/completions", body); code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", i, code, resp)
		}
	}
	logs := e.logs.String()
	if got := strings.Count(logs, `the tokenizer does not know model \"qwen3-8b\"`); got != 1 {
		t.Fatalf("the unknown model was warned about %d times, want once:\n%s", got, logs)
	}
	if strings.Contains(logs, "gpt-4o\\\" ") || strings.Contains(logs, `model \"gpt-4o\"`) {
		t.Fatalf("a known model was warned about:\n%s", logs)
	}
}
