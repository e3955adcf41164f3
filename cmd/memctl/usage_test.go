package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// TestReportShowsUsage: report (text and JSON) and reports show a compaction's usage; a
// provider with context_window: auto whose server does not report its window is used with
// the default window, and a warning says so on stderr (not a terminal) once.
func TestReportShowsUsage(t *testing.T) {
	m := newMemctl(t)
	var chats atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/chat/completions" {
			http.NotFound(w, r)
			return
		}
		chats.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"finish_reason":"stop","message":{"role":"assistant","content":"## Goal and constraints\nThe work went on."}}],"usage":{"prompt_tokens":900,"completion_tokens":40,"total_tokens":940}}`)
	}))
	defer srv.Close()
	m.config = filepath.Join(m.dir, "memctl.yaml")
	cfg := fmt.Sprintf("cascade:\n  - name: local\n    base_url: %s/v1\n    model: m\n    context_window: auto\n  - name: offline\n    type: extractive\n", srv.URL)
	if err := os.WriteFile(m.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	m.must("import", "t1", conversationFiles(t)[0])
	code, _, errs := m.run("compact", "t1", "--limit", "2000", "--force")
	if code != 0 {
		t.Fatalf("compact: exit %d: %s", code, errs)
	}
	if n := strings.Count(errs, "warning"); n != 1 || !strings.Contains(errs, "local: warning: context_window auto:") ||
		!strings.Contains(errs, "using 4096 tokens") {
		t.Errorf("stderr %q: want one warning naming the fallback window", errs)
	}
	n := int(chats.Load())
	var rep struct {
		Usage struct {
			Requests         int  `json:"requests"`
			PromptTokens     int  `json:"prompt_tokens"`
			CompletionTokens int  `json:"completion_tokens"`
			Estimated        bool `json:"estimated"`
		} `json:"usage"`
	}
	if err := json.Unmarshal([]byte(m.must("report", "1", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if u := rep.Usage; n == 0 || u.Requests != n || u.PromptTokens != 900*n || u.CompletionTokens != 40*n || u.Estimated {
		t.Errorf("usage %+v; the server received %d requests of 900+40 tokens", u, n)
	}
	text := m.must("report", "1")
	if want := fmt.Sprintf("  usage     %d requests, %d prompt + %d completion tokens\n", n, 900*n, 40*n); !strings.Contains(text, want) {
		t.Errorf("report:\n%s\nwant the line %q", text, want)
	}
	list := m.must("reports")
	if !strings.Contains(list, "REQUESTS") || !strings.Contains(list, fmt.Sprintf("%d+%d", 900*n, 40*n)) {
		t.Errorf("reports:\n%s", list)
	}
	providers := m.must("providers")
	if !strings.Contains(providers, "auto") {
		t.Errorf("providers:\n%s\nwant the window shown as auto", providers)
	}
}
