package config_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestHooksParse: the hooks section decodes with the default timeout, and each wrong value is
// named with its key and line.
func TestHooksParse(t *testing.T) {
	t.Parallel()
	cfg, err := config.Parse([]byte("hooks:\n  before_compaction:\n    command: [/bin/hook, --json]\n  after_compaction: {command: [notify], timeout: 2s}\n"), "c.yaml")
	if err != nil {
		t.Fatal(err)
	}
	b, a := cfg.Hooks.BeforeCompaction, cfg.Hooks.AfterCompaction
	if b == nil || a == nil || strings.Join(b.Command, " ") != "/bin/hook --json" || b.Timeout != config.DefaultHookTimeout ||
		a.Command[0] != "notify" || a.Timeout != config.Duration(2*time.Second) {
		t.Fatalf("hooks %+v %+v", b, a)
	}
	// The rendered config parses back to the same hooks.
	back, err := config.Parse(cfg.YAML(), "r.yaml")
	if err != nil || back.Hooks.BeforeCompaction == nil || back.Hooks.BeforeCompaction.Timeout != b.Timeout || back.Hooks.AfterCompaction.Command[0] != "notify" {
		t.Fatalf("rendered %s: %+v, %v", cfg.YAML(), back.Hooks, err)
	}
	for _, tc := range []struct{ yaml, want string }{
		{"hooks:\n  before_compaction: {command: /bin/hook}\n", "c.yaml:2: hooks.before_compaction.command: expected a list"},
		{"hooks:\n  before_compaction: {timeout: 1s}\n", "c.yaml:2: hooks.before_compaction.command: is required"},
		{"hooks:\n  before_compaction: {command: [\"\"]}\n", "hooks.before_compaction.command[0]: must not be empty"},
		{"hooks:\n  after_compaction: {command: [x], timeout: 0s}\n", "c.yaml:2: hooks.after_compaction.timeout: 0s must be positive"},
		{"hooks:\n  before: {command: [x]}\n", "c.yaml:2: hooks.before: unknown key"},
		{"compaction:\n  max_failures: 0\n", "c.yaml:2: compaction.max_failures: 0 must be at least 1"},
	} {
		if _, err := config.Parse([]byte(tc.yaml), "c.yaml"); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%q: %v, want %q", tc.yaml, err, tc.want)
		}
	}
	if got := config.Default().Settings().MaxFailures; got != 3 {
		t.Errorf("default max_failures %d", got)
	}
}

// script writes an executable shell script into dir and returns its path.
func script(t *testing.T, dir, name, body string) string {
	t.Helper()
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"+body+"\n"), 0o700); err != nil {
		t.Fatal(err)
	}
	return path
}

// chatServer is an OpenAI chat completions server that records each request body and answers
// a short summary.
type chatServer struct {
	mu     sync.Mutex
	bodies []string
}

func (c *chatServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	c.mu.Lock()
	c.bodies = append(c.bodies, string(b))
	c.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":10,"total_tokens":20}}`,
		"## Work done\nThe questions were answered.")
}

func (c *chatServer) all() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return strings.Join(c.bodies, "\n")
}

// TestConfigHooks runs the config's hook commands around real compactions: a before hook's
// instructions reach the provider, its skip writes nothing, the after hook reads the report;
// a hook that fails, times out or prints what is not a decision is logged, without its
// secret, and the compaction proceeds.
func TestConfigHooks(t *testing.T) {
	t.Parallel()
	secret := "sk-proj-" + strings.Repeat("Zq9Xw", 8)
	for _, tc := range []struct {
		name, before string
		timeout      string
		want         memory.Status
		requested    bool   // the provider is asked
		inRequest    string // in the provider's request
		logged       string // in the log
	}{
		{name: "instructions", before: `cat > "$DIR/event.json"; echo '{"action":"proceed","instructions":"HOOK-NOTE keep the billing plan"}'`,
			want: memory.StatusApplied, requested: true, inRequest: "HOOK-NOTE keep the billing plan"},
		{name: "skip", before: `echo '{"action":"skip"}'`, want: compact.StatusSkipped},
		{name: "exit", before: `echo "failed with key ` + secret + `" >&2; exit 3`, want: memory.StatusApplied, requested: true, logged: "exit status 3"},
		{name: "timeout", before: `exec sleep 5`, timeout: "50ms", want: memory.StatusApplied, requested: true, logged: "timed out after 50ms"},
		{name: "bad-json", before: `echo '{"action": "skip", "instruction": "typo"}'`, want: memory.StatusApplied, requested: true, logged: "not the JSON of a decision"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			dir := t.TempDir()
			s, _ := storetest.Open(t)
			storetest.LongThread(t, s, "t", 12, 200)
			th, _ := s.Thread(ctx, "t")
			srv := &chatServer{}
			hs := httptest.NewServer(srv)
			defer hs.Close()
			timeout := "5s"
			if tc.timeout != "" {
				timeout = tc.timeout
			}
			before := script(t, dir, "before.sh", "DIR="+dir+"\n"+tc.before)
			script(t, dir, "after.sh", `cat > "`+dir+`/report.json"`)
			cfg, err := config.Parse(fmt.Appendf(nil, `offline: false
compaction: {token_limit: %d}
cascade:
  - {name: p, base_url: %s/v1, model: m, max_attempts: 1}
hooks:
  before_compaction: {command: [%s], timeout: %s}
  after_compaction: {command: [./after.sh]}
`, th.ActiveTokens, hs.URL, before, timeout), filepath.Join(dir, "memctl.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			var log bytes.Buffer
			logger := slog.New(slog.NewTextHandler(&syncWriter{w: &log}, nil))
			c, _, err := cfg.NewCompactor(s.DB(), s, cascade.Options{}, compact.Config{Logger: logger})
			if err != nil {
				t.Fatal(err)
			}
			reps0, _ := s.Reports(ctx, "t", 0)
			start := time.Now()
			rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if err != nil || rep.Status != tc.want {
				t.Fatalf("compact: %s, %v; want %s", rep.Status, err, tc.want)
			}
			if d := time.Since(start); d > 4*time.Second {
				t.Fatalf("the compaction took %s: the hook's timeout did not hold", d)
			}
			if asked := srv.all() != ""; asked != tc.requested {
				t.Fatalf("provider asked: %v, want %v", asked, tc.requested)
			}
			if !strings.Contains(srv.all(), tc.inRequest) {
				t.Fatalf("the provider's request lacks %q", tc.inRequest)
			}
			if tc.logged != "" && !strings.Contains(log.String(), tc.logged) {
				t.Fatalf("log %q lacks %q", log.String(), tc.logged)
			}
			if strings.Contains(log.String(), secret) {
				t.Fatalf("the hook's secret was logged: %s", log.String())
			}
			reps1, _ := s.Reports(ctx, "t", 0)
			if stored := len(reps1) - len(reps0); (tc.want == compact.StatusSkipped) != (stored == 0) {
				t.Fatalf("%d reports stored by a %s compaction", stored, tc.want)
			}
			var got memory.Report
			if b, err := os.ReadFile(filepath.Join(dir, "report.json")); err != nil || json.Unmarshal(b, &got) != nil || got.Status != tc.want {
				t.Fatalf("after hook read %+v (%v)", got.Status, err)
			}
			if tc.name == "instructions" {
				var ev compact.HookEvent
				if b, err := os.ReadFile(filepath.Join(dir, "event.json")); err != nil || json.Unmarshal(b, &ev) != nil || ev.Thread != "t" || ev.Turn != 12 || ev.ToSeq != rep.ToSeq {
					t.Fatalf("before hook read %+v (%v)", ev, err)
				}
			}
		})
	}
}

// syncWriter is a writer safe for the log's concurrent records.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(p)
}
