package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// bodyLog is an OpenAI chat completions server that records each request body and answers a
// short summary, or 503 while down.
type bodyLog struct {
	mu     sync.Mutex
	bodies []string
	down   bool
}

func (b *bodyLog) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	body, _ := io.ReadAll(r.Body)
	b.mu.Lock()
	b.bodies = append(b.bodies, string(body))
	down := b.down
	b.mu.Unlock()
	if down {
		http.Error(w, `{"error":{"message":"overloaded"}}`, http.StatusServiceUnavailable)
		return
	}
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"## Work done\nthe booking went on"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
}

func (b *bodyLog) count() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return len(b.bodies)
}

func (b *bodyLog) all() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return strings.Join(b.bodies, "\n")
}

// hookMemctl is a memctl whose config has one provider, srv, and extra.
func hookMemctl(t *testing.T, srv *httptest.Server, extra string) *memctl {
	t.Helper()
	m := newMemctl(t)
	m.config = filepath.Join(m.dir, "memctl.yaml")
	cfg := fmt.Sprintf("offline: false\ncascade:\n  - {name: p, base_url: %s/v1, model: m, max_attempts: 1}\n%s", srv.URL, extra)
	if err := os.WriteFile(m.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	return m
}

// TestCompactInstructionsReachProvider: `compact --instructions` puts the text in the
// provider's request; instructions over their size are exit 2, naming them.
func TestCompactInstructionsReachProvider(t *testing.T) {
	log := &bodyLog{}
	srv := httptest.NewServer(log)
	defer srv.Close()
	m := hookMemctl(t, srv, "")
	m.must("import", "t", testdata(longFile))
	note := "KEEP-NOTE: keep the refund amounts and the reservation ids"
	rep := compactJSON(t, m, "t", "--force", "--limit", "8000", "--instructions", note)
	if rep["status"] != "applied" {
		t.Fatalf("compact: %v", rep)
	}
	// The request body is JSON: the note's text is in it as written (no character to escape).
	if !strings.Contains(log.all(), note) {
		t.Fatalf("the provider's requests lack the instructions")
	}
	code, _, errs := m.run("compact", "t", "--force", "--instructions", strings.Repeat("x", 9000))
	if code != 2 || !strings.Contains(errs, "instructions") {
		t.Fatalf("long instructions: exit %d, %s; want 2 naming them", code, errs)
	}
}

// TestThreadsShowHeld: after compaction.max_failures failed compactions in a row, the thread
// is held: `threads` marks it, `compact` asks no provider and says how to release it (exit 1),
// and `compact --force` runs.
func TestThreadsShowHeld(t *testing.T) {
	log := &bodyLog{down: true}
	srv := httptest.NewServer(log)
	defer srv.Close()
	m := hookMemctl(t, srv, "compaction: {token_limit: 8000, max_failures: 2}\n")
	m.must("import", "t", testdata(longFile))
	for i := range 2 {
		if code, _, errs := m.run("compact", "t"); code != 1 {
			t.Fatalf("compaction %d: exit %d: %s", i+1, code, errs)
		}
	}
	var threads []map[string]any
	if err := json.Unmarshal([]byte(m.must("threads", "--json")), &threads); err != nil || len(threads) != 1 || threads[0]["held"] != true {
		t.Fatalf("threads --json: %v (%v); want held true", threads, err)
	}
	if out := m.must("threads"); !strings.Contains(out, "(held)") {
		t.Fatalf("threads does not mark the held thread:\n%s", out)
	}
	hits := log.count()
	code, out, errs := m.run("compact", "t", "--json")
	if code != 1 || !strings.Contains(out, `"status": "held"`) || !strings.Contains(errs, "--force") || log.count() != hits {
		t.Fatalf("held compact: exit %d, %d requests, stdout %s, stderr %s", code, log.count()-hits, out, errs)
	}
	// Forced, it runs: the provider, cooling down since the first failure, is skipped, and the
	// compaction is recorded failed.
	if code, out, errs := m.run("compact", "t", "--force", "--json"); code != 1 || !strings.Contains(out, `"status": "failed"`) {
		t.Fatalf("forced compact: exit %d: %s %s", code, out, errs)
	}
	if rep := compactJSON(t, m, "t", "--dry-run"); rep["status"] != "planned" {
		t.Fatalf("dry run of a held thread: %v", rep)
	}
}
