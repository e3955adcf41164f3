package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
)

// compactedThread makes a thread of n turns through the proxy, then forces a compaction
// through the API; it returns the compaction's report.
func compactedThread(t *testing.T, e *env, thread string, n int) memory.Report {
	t.Helper()
	msgs := []map[string]any{{"role": "system", "content": "You help with the build."}}
	for i := 1; i <= n; i++ {
		msgs = append(msgs, map[string]any{"role": "user", "content": fmt.Sprintf("Turn %d: the deploy to port %d failed with <b>exit 3</b> & \"quotes\"; %s", i, 8000+i, strings.Repeat("retrying the pipeline again. ", 6))})
		b, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs})
		code, body, _ := e.post("/t/"+thread+"/v1/chat/completions", string(b))
		if code != 200 {
			t.Fatalf("turn %d: %d %s", i, code, body)
		}
		var resp struct {
			Choices []struct {
				Message map[string]any `json:"message"`
			} `json:"choices"`
		}
		json.Unmarshal([]byte(body), &resp)
		msgs = append(msgs, resp.Choices[0].Message)
	}
	code, body, _ := e.post("/api/threads/"+thread+"/compact", `{"force": true}`)
	if code != 200 {
		t.Fatalf("compact: %d %s", code, body)
	}
	var rep memory.Report
	if err := json.Unmarshal([]byte(body), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Status != memory.StatusApplied || rep.Reason != compact.ReasonForced {
		t.Fatalf("compaction: %s", body)
	}
	return rep
}

// The inspection API answers with the shapes of memctl's --json.
func TestInspectionAPI(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{limit: 1000})
	rep := compactedThread(t, e, "api-1", 8)

	code, body, _ := e.get("/api/threads")
	var threads []map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &threads) != nil || len(threads) != 1 {
		t.Fatalf("/api/threads: %d %s", code, body)
	}
	for _, k := range []string{"id", "model", "messages", "active_messages", "active_tokens", "compactions", "updated_at", "token_limit", "strategy"} {
		if _, ok := threads[0][k]; !ok {
			t.Errorf("/api/threads: no field %q in %v", k, threads[0])
		}
	}
	if threads[0]["id"] != "api-1" || threads[0]["messages"] != float64(17) || threads[0]["token_limit"] != float64(1000) {
		t.Fatalf("/api/threads: %s", body)
	}
	code, body, _ = e.get("/api/threads/api-1")
	var one map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &one) != nil || one["id"] != "api-1" || one["compactions"] != float64(1) {
		t.Fatalf("/api/threads/api-1: %d %s", code, body)
	}
	code, body, _ = e.get("/api/threads/api-1/active")
	var active []chat.Message
	if code != 200 || json.Unmarshal([]byte(body), &active) != nil {
		t.Fatalf("/active: %d %s", code, body)
	}
	a, _ := e.store.Active(context.Background(), "api-1")
	if len(active) != len(a.Entries) || active[1].Text() != a.Entries[1].Text() {
		t.Fatalf("/active: %d messages, the store's active context %d", len(active), len(a.Entries))
	}
	code, body, _ = e.get("/api/threads/api-1/reports")
	var reps []memory.Report
	if code != 200 || json.Unmarshal([]byte(body), &reps) != nil || len(reps) != 1 || reps[0].ID != rep.ID || strings.Contains(body, `"summary":`) {
		t.Fatalf("/reports: %d %s", code, body)
	}
	code, body, _ = e.get(fmt.Sprintf("/api/reports/%d", rep.ID))
	var full memory.Report
	if code != 200 || json.Unmarshal([]byte(body), &full) != nil || full.Summary == nil || *full.Summary == "" || len(full.Attempts) == 0 {
		t.Fatalf("/api/reports/ID: %d %s", code, body)
	}
	code, body, _ = e.get("/api/providers")
	var provs []map[string]any
	if code != 200 || json.Unmarshal([]byte(body), &provs) != nil || len(provs) != 1 || provs[0]["name"] != "offline" {
		t.Fatalf("/api/providers: %d %s", code, body)
	}
	if _, ok := provs[0]["cooling_until"]; !ok {
		t.Fatalf("/api/providers: no cooling_until: %s", body)
	}
	// A dry run plans without writing.
	code, body, _ = e.post("/api/threads/api-1/compact", `{"force": true, "dry_run": true}`)
	if code != 200 || !strings.Contains(body, `"status": "planned"`) {
		t.Fatalf("dry run: %d %s", code, body)
	}
	for _, tc := range []struct {
		path   string
		status int
		code   string
	}{
		{"/api/threads/nope", 404, "thread_not_found"},
		{"/api/threads/nope/active", 404, "thread_not_found"},
		{"/api/threads/nope/reports", 404, "thread_not_found"},
		{"/api/reports/999", 404, "compaction_not_found"},
		{"/api/reports/x", 400, "invalid_compaction_id"},
	} {
		code, body, _ := e.get(tc.path)
		if code != tc.status || errorCode(t, body) != tc.code {
			t.Errorf("%s: %d %s, want %d %s", tc.path, code, body, tc.status, tc.code)
		}
	}
	if code, body, _ := e.post("/api/threads/nope/compact", ""); code != 404 {
		t.Errorf("compact of a missing thread: %d %s", code, body)
	}
	if code, body, _ := e.post("/api/threads/api-1/compact", `{"forse": true}`); code != 400 {
		t.Errorf("compact with an unknown field: %d %s", code, body)
	}
}

// With a token, every route needs it (constant-time compared); without it, 401. No CORS
// header is ever sent.
func TestTokenRequired(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{token: "s3cret-token"})
	req := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	for _, h := range [][]string{nil, {"Authorization", "Bearer wrong"}, {"Authorization", "s3cret-token"}, {"Authorization", "Bearer s3cret-token2"}} {
		code, body, hdr := e.post("/t/sec/v1/chat/completions", req, h...)
		if code != 401 || errorCode(t, body) != "invalid_api_key" || hdr.Get("WWW-Authenticate") == "" {
			t.Fatalf("chat with %q: %d %s", h, code, body)
		}
		for _, path := range []string{"/", "/api/threads", "/threads/sec", "/static/style.css"} {
			if code, _, _ := e.get(path, h...); code != 401 {
				t.Fatalf("GET %s with %q: %d, want 401", path, h, code)
			}
		}
	}
	if n, _ := e.up.stats(); n != 0 {
		t.Fatalf("an unauthenticated request reached the upstream")
	}
	code, body, hdr := e.post("/t/sec/v1/chat/completions", req, "Authorization", "Bearer s3cret-token", "Origin", "https://evil.example")
	if code != 200 {
		t.Fatalf("with the token: %d %s", code, body)
	}
	for k := range hdr {
		if strings.HasPrefix(k, "Access-Control-") {
			t.Fatalf("CORS header %s sent", k)
		}
	}
	if code, _, _ := e.get("/api/threads", "Authorization", "bearer s3cret-token"); code != 200 {
		t.Fatalf("API with the token: %d", code)
	}
}

// Without a token, a loopback server answers only requests addressed to a loopback name (DNS
// rebinding).
func TestLoopbackHostOnly(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	req, _ := newRequest("GET", e.url+"/api/threads", "")
	req.Host = "attacker.example:8787"
	if code, body, _ := e.do(req); code != 403 || errorCode(t, body) != "host_not_allowed" {
		t.Fatalf("foreign Host: %d %s", code, body)
	}
	for _, host := range []string{"localhost:8787", "127.0.0.1:8787", "[::1]:8787"} {
		req, _ := newRequest("GET", e.url+"/api/threads", "")
		req.Host = host
		if code, body, _ := e.do(req); code != 200 {
			t.Fatalf("Host %s: %d %s", host, code, body)
		}
	}
}

func TestIsLoopback(t *testing.T) {
	t.Parallel()
	for addr, want := range map[string]bool{
		"127.0.0.1:8787": true, "localhost:1": true, "[::1]:8787": true, "127.5.0.1:80": true,
		"0.0.0.0:8787": false, ":8787": false, "192.168.1.4:8787": false, "[::]:8787": false, "example.com:80": false,
	} {
		got, err := serve.IsLoopback(addr)
		if err != nil || got != want {
			t.Errorf("IsLoopback(%q) = %v, %v; want %v", addr, got, err, want)
		}
	}
	if _, err := serve.IsLoopback("8787"); err == nil {
		t.Error("IsLoopback(\"8787\"): no error")
	}
}

// The page escapes what comes from the conversation.
func TestPageEscapes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{limit: 1000})
	compactedThread(t, e, "esc", 8)
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"<script>alert(1)</script><img src=x onerror=alert(2)>"}]}`
	if code, b, _ := e.post("/t/esc2/v1/chat/completions", body); code != 200 {
		t.Fatal(code, b)
	}
	for _, path := range []string{"/", "/threads/esc", "/threads/esc2"} {
		code, page, hdr := e.get(path)
		if code != 200 || !strings.HasPrefix(hdr.Get("Content-Type"), "text/html") {
			t.Fatalf("%s: %d", path, code)
		}
		if strings.Contains(page, "<script>") || strings.Contains(page, "<img src=x") || strings.Contains(page, "<b>exit 3</b>") {
			t.Fatalf("%s: unescaped conversation text in the page", path)
		}
		if !strings.Contains(hdr.Get("Content-Security-Policy"), "default-src 'none'") {
			t.Fatalf("%s: no content security policy", path)
		}
	}
	_, page, _ := e.get("/threads/esc2")
	if !strings.Contains(page, "&lt;script&gt;alert(1)&lt;/script&gt;") {
		t.Fatal("the message is not shown escaped")
	}
	if code, _, _ := e.get("/threads/nope"); code != 404 {
		t.Fatalf("a missing thread's page: %d", code)
	}
}

// TestPageNamesSummarizers: the page says which cascade writes the summaries.
func TestPageNamesSummarizers(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	code, body, _ := e.get("/")
	if code != 200 || !strings.Contains(body, `id="summarizers"`) || !strings.Contains(body, "offline") {
		t.Fatalf("the page: %d, want the summarizers named:\n%s", code, body)
	}
}

// TestPageCacheInvalidated: the thread page lists, for each compaction, the prompt prefix it
// invalidated in the upstream's cache, as its report has it, and says it of the one shown.
func TestPageCacheInvalidated(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{limit: 1000})
	compactedThread(t, e, "cache", 8)
	reps, err := e.store.Reports(context.Background(), "cache", 0)
	if err != nil || len(reps) == 0 {
		t.Fatalf("reports: %v, %d", err, len(reps))
	}
	_, page, _ := e.get("/threads/cache")
	for _, r := range reps {
		if r.Status != memory.StatusApplied {
			continue
		}
		if r.CacheInvalidatedTokens == nil {
			t.Fatalf("compaction %d applied without its cache figures", r.ID)
		}
		row := fmt.Sprintf(`<td class="num">%d → %d</td><td class="num">%d</td>`, r.MessagesBefore, r.MessagesAfter, *r.CacheInvalidatedTokens)
		if !strings.Contains(page, row) {
			t.Errorf("compaction %d: the page has no row with %s", r.ID, row)
		}
		_, one, _ := e.get(fmt.Sprintf("/threads/cache?compaction=%d", r.ID))
		want := fmt.Sprintf("the first %d tokens kept as they were, the upstream's cache of the %d after them invalidated", *r.CachePrefixTokens, *r.CacheInvalidatedTokens)
		if !strings.Contains(one, want) {
			t.Errorf("compaction %d: its section does not say %q", r.ID, want)
		}
	}
}
