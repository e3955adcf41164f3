package main

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
)

// TestServeNotice: memctl serve reads serve.notice from the config: a turn whose context
// passes the mark (0.8 of the trigger, 0.8 of token_limit 1000: 640 tokens) sends the upstream
// the note as its last message, the next turn (the agent's conversation resent, without the
// note) is answered 200 with none, and memctl export --all shows no note.
func TestServeNotice(t *testing.T) {
	m := newMemctl(t)
	m.config = filepath.Join(m.dir, "c.yaml")
	if err := os.WriteFile(m.config, []byte("compaction:\n  token_limit: 1000\nserve:\n  notice:\n    enabled: true\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var bodies []string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, string(b))
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"pong"},"finish_reason":"stop"}]}`)
	}))
	defer up.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	ctx, cancel := context.WithCancel(context.Background())
	var out, errb syncBuffer
	done := make(chan int, 1)
	go func() {
		done <- run(ctx, []string{"--config", m.config, "--db", m.db, "serve", "--listen", addr, "--upstream", up.URL + "/v1"}, strings.NewReader(""), &out, &errb)
	}()
	long := `{"role":"user","content":"` + strings.Repeat("word ", 690) + `"}`
	post := func(body string) int {
		for range 500 { // until it listens (or exits)
			req, _ := http.NewRequest("POST", "http://"+addr+"/t/cli/v1/chat/completions", strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			resp, err := http.DefaultClient.Do(req)
			if err == nil {
				io.Copy(io.Discard, resp.Body)
				resp.Body.Close()
				return resp.StatusCode
			}
			select {
			case code := <-done:
				t.Fatalf("memctl serve exited %d: %s", code, errb.String())
			default:
			}
			waitABit()
		}
		t.Fatal("memctl serve does not answer")
		return 0
	}
	if code := post(`{"model":"m","messages":[` + long + `]}`); code != 200 {
		t.Fatalf("the first turn: %d", code)
	}
	if code := post(`{"model":"m","messages":[` + long + `,{"role":"assistant","content":"pong"},{"role":"user","content":"and?"}]}`); code != 200 {
		t.Fatalf("the second turn: %d", code)
	}
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d: %s", code, errb.String())
	}
	mu.Lock()
	defer mu.Unlock()
	if len(bodies) != 2 || !strings.Contains(bodies[0], `{"role":"system","content":"[memctl notice: `) ||
		!strings.HasSuffix(bodies[0], `compaction."}]}`) || strings.Contains(bodies[1], "memctl notice") {
		t.Fatalf("the upstream got %d requests:\n%.300s", len(bodies), strings.Join(bodies, "\n"))
	}
	if code, out, errs := m.run("export", "cli", "--all"); code != 0 || !strings.Contains(out, "and?") || strings.Contains(out, "memctl notice") {
		t.Fatalf("memctl export cli --all: %d %s %s", code, out, errs)
	}
}
