package main

import (
	"bytes"
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
	"time"
)

// A non-loopback listener without a token, an unset variable, or a bad address is a usage
// error (exit 2), before anything is opened.
func TestServeRefusesToStart(t *testing.T) {
	m := newMemctl(t)
	t.Setenv("MEMCTL_TEST_UNSET", "")
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"serve", "--listen", "0.0.0.0:8787"}, "needs --token-env"},
		{[]string{"serve", "--listen", ":8787"}, "needs --token-env"},
		{[]string{"serve", "--listen", "192.168.7.7:8787"}, "needs --token-env"},
		{[]string{"serve", "--listen", "0.0.0.0:8787", "--token-env", "MEMCTL_TEST_UNSET"}, "--token-env MEMCTL_TEST_UNSET: the environment variable is not set"},
		{[]string{"serve", "--upstream-key-env", "MEMCTL_TEST_UNSET"}, "--upstream-key-env MEMCTL_TEST_UNSET: the environment variable is not set"},
		{[]string{"serve", "--token-env", "sk-abc123=="}, "must name an environment variable"},
		{[]string{"serve", "--listen", "8787"}, "--listen"},
		{[]string{"serve", "--upstream", "ftp://x/v1"}, "--upstream"},
	} {
		code, _, errs := m.run(tc.args...)
		if code != exitUsage || !strings.Contains(errs, tc.want) {
			t.Errorf("memctl %s: exit %d, %q; want 2 with %q", strings.Join(tc.args, " "), code, errs, tc.want)
		}
	}
	if _, err := os.Stat(m.db); err == nil {
		t.Fatal("a refused serve created the database")
	}
	// The config's serve section is read, and the flags win over it.
	m.config = filepath.Join(m.dir, "c.yaml")
	os.WriteFile(m.config, []byte("serve:\n  listen: 0.0.0.0:8787\n"), 0o600)
	if code, _, errs := m.run("serve"); code != exitUsage || !strings.Contains(errs, "0.0.0.0:8787 is not a loopback address") {
		t.Fatalf("serve.listen from the config: exit %d, %s", code, errs)
	}
}

// memctl serve wires the proxy: the agent's request reaches the upstream with the key read
// from the named variable; neither the key nor the token is logged; SIGINT's context ends it
// with exit 0 and the turn stored.
func TestServeRunsAndStops(t *testing.T) {
	// --log-level holds for serve as for every command: its request lines are at info, so
	// the default level (warn) leaves them out.
	for _, level := range []string{"info", "warn"} {
		t.Run(level, func(t *testing.T) {
			logs := serveRunsAndStops(t, level)
			if logged := strings.Contains(logs, "/t/cli/v1/chat/completions"); logged != (level == "info") {
				t.Fatalf("at --log-level %s, the request logged: %v:\n%s", level, logged, logs)
			}
			// No cascade in the config: the model serve fronts summarizes, then offline.
			if named := strings.Contains(logs, `summarizers="upstream, offline"`); named != (level == "info") {
				t.Fatalf("at --log-level %s, the default summarizers logged: %v:\n%s", level, named, logs)
			}
		})
	}
}

// serveRunsAndStops runs memctl serve at the log level given, sends it one request and
// stops it, checks that it created the database (mode 0600, as the README says), what was
// stored and that no secret was logged, and returns the log.
func serveRunsAndStops(t *testing.T, level string) string {
	m := newMemctl(t)
	if _, err := os.Stat(m.db); !os.IsNotExist(err) {
		t.Fatalf("the database exists before serve: %v", err)
	}
	t.Setenv("MEMCTL_TEST_UPSTREAM_KEY", "sk-upstream-secret-1")
	t.Setenv("MEMCTL_TEST_TOKEN", "client-token-secret-2")
	var mu sync.Mutex
	var gotAuth string
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		gotAuth = r.Header.Get("Authorization")
		mu.Unlock()
		io.Copy(io.Discard, r.Body)
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
		done <- run(ctx, []string{"--db", m.db, "--log-level", level, "serve", "--listen", addr, "--upstream", up.URL + "/v1",
			"--upstream-key-env", "MEMCTL_TEST_UPSTREAM_KEY", "--token-env", "MEMCTL_TEST_TOKEN"}, strings.NewReader(""), &out, &errb)
	}()
	body := `{"model":"m","messages":[{"role":"user","content":"ping"}]}`
	var resp *http.Response
	for range 500 { // until it listens (or exits)
		req, _ := http.NewRequest("POST", "http://"+addr+"/t/cli/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer client-token-secret-2")
		if resp, err = http.DefaultClient.Do(req); err == nil {
			break
		}
		select {
		case code := <-done:
			t.Fatalf("memctl serve exited %d: %s", code, errb.String())
		default:
		}
		waitABit()
	}
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode != 200 || !strings.Contains(string(b), "pong") {
		t.Fatalf("through memctl serve: %d %s", resp.StatusCode, b)
	}
	mu.Lock()
	if gotAuth != "Bearer sk-upstream-secret-1" {
		t.Fatalf("the upstream got Authorization %q", gotAuth)
	}
	mu.Unlock()
	cancel()
	if code := <-done; code != exitOK {
		t.Fatalf("exit %d after the signal: %s", code, errb.String())
	}
	logs := errb.String()
	if strings.Contains(logs, "sk-upstream-secret-1") || strings.Contains(logs, "client-token-secret-2") {
		t.Fatalf("a secret was logged:\n%s", logs)
	}
	if st, err := os.Stat(m.db); err != nil || st.Mode().Perm() != 0o600 {
		t.Fatalf("the database serve created: %v %v, want mode 0600", st, err)
	}
	if code, out, errs := m.run("export", "cli", "--all"); code != 0 || !strings.Contains(out, "ping") || !strings.Contains(out, "pong") {
		t.Fatalf("the stored turn: %d %s %s", code, out, errs)
	}
	return logs
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines and the test.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// waitABit yields while memctl serve starts listening.
func waitABit() { <-time.After(10 * time.Millisecond) }
