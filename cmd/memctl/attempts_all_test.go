package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"testing"
)

// TestAttemptsOfOneCompactionAll: `attempts --compaction ID` lists every attempt of the
// compaction (here more than 50, through a 1,024-token window), not the first 50 of the
// default --limit; with --limit it lists that many.
func TestAttemptsOfOneCompactionAll(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"## Goal and constraints\nwork went on"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
	}))
	defer srv.Close()
	m := newMemctl(t)
	m.config = filepath.Join(m.dir, "memctl.yaml")
	cfg := fmt.Sprintf("compaction:\n  token_limit: 8000\ncascade:\n  - name: small\n    base_url: %s/v1\n    model: m\n    context_window: 1024\n", srv.URL)
	if err := os.WriteFile(m.config, []byte(cfg), 0o600); err != nil {
		t.Fatal(err)
	}
	for range 2 { // the recorded conversations twice: a middle of some 60k tokens
		for _, f := range conversationFiles(t) {
			m.must("import", "t", f, "--again")
		}
	}
	var rep struct {
		ID       int64
		Status   string
		Requests int
	}
	if err := json.Unmarshal([]byte(m.must("compact", "t", "--force", "--json")), &rep); err != nil {
		t.Fatal(err)
	}
	if rep.Status != "applied" || rep.Requests <= 50 {
		t.Fatalf("compaction %s with %d requests; the test needs over 50", rep.Status, rep.Requests)
	}
	var all, some []json.RawMessage
	if err := json.Unmarshal([]byte(m.must("attempts", "--compaction", fmt.Sprint(rep.ID), "--json")), &all); err != nil {
		t.Fatal(err)
	}
	if len(all) != rep.Requests {
		t.Fatalf("attempts --compaction %d lists %d attempts; the compaction made %d requests", rep.ID, len(all), rep.Requests)
	}
	if err := json.Unmarshal([]byte(m.must("attempts", "--compaction", fmt.Sprint(rep.ID), "--limit", "7", "--json")), &some); err != nil {
		t.Fatal(err)
	}
	if len(some) != 7 {
		t.Fatalf("attempts --compaction --limit 7 lists %d", len(some))
	}
}
