package anthropic_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/internal/fakeupstream"
	"github.com/memcascade/memcascade/internal/nodetest"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
)

// agentTestsEnv names the variable that asks for the real agents' tests: they are large
// (about 800 MB installed, serve/testdata/agents) and slow, so they run only when asked.
const agentTestsEnv = "MEMCASCADE_AGENT_TESTS"

// claudeTurns is how many turns TestAgentClaudeCodeLife runs.
const claudeTurns = 20

// TestAgentClaudeCodeLife: Claude Code, headless, 20 turns through memctl serve in front of a
// fake Anthropic upstream, the thread named by Claude Code's own session header and its limit
// small enough that the thread compacts several times. Every turn ends without error with the
// fake's reply, no request the upstream answers is over its window (none is refused), each
// turn's prompt and reply are stored once, and the page lists the thread.
//
//	MEMCASCADE_AGENT_TESTS=1 go test ./serve/anthropic -run TestAgentClaudeCodeLife -v
func TestAgentClaudeCodeLife(t *testing.T) {
	if os.Getenv(agentTestsEnv) == "" {
		t.Skipf("the real agents run only when %s is set", agentTestsEnv)
	}
	_, dir := nodetest.Require(t, filepath.Join("..", "testdata", "agents"), "@anthropic-ai/claude-code")
	claude := filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code", "bin", "claude.exe")
	if b, err := os.ReadFile(claude); err != nil || !bytes.HasPrefix(b, []byte("\x7fELF")) {
		// npm ran with scripts off: the postinstall that places the native binary did not run.
		cmd := exec.Command("node", "install.cjs")
		cmd.Dir = filepath.Dir(filepath.Dir(claude))
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("node install.cjs: %v\n%s", err, out)
		}
	}

	// Each turn's prompt and reply carry about 1.5 KB; Claude Code's system prompt and tools
	// about 48 KB. The window (the fake counts bytes/4) holds the fixed part and about eight
	// turns; the thread's limit (serve counts with o200k) makes serve compact before that.
	filler := strings.Repeat("The build log shows lines that matter little here. ", 30)
	reply := func(n int, r fakeupstream.Request) fakeupstream.Reply {
		return fakeupstream.Reply{Text: fmt.Sprintf("Fake reply %d. %s", n, filler)}
	}
	const window = 18000
	up := fakeupstream.NewAnthropic(fakeupstream.Options{Window: window, Reply: reply})
	defer up.Close()
	e := newEnv(t, 14000, func(s *serve.Server) { s.Upstream = serve.UpstreamBase(up.URL) })

	work := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "ANTHROPIC_BASE_URL=" + e.url,
		"ANTHROPIC_API_KEY=test", "DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	var session string
	var prompts []string
	for i := range claudeTurns {
		prompt := fmt.Sprintf("Turn %d: remember the code CODE-%03d. %s", i+1, i+1, filler)
		prompts = append(prompts, prompt)
		args := []string{"-p", prompt, "--output-format", "json"}
		if session != "" {
			args = append(args, "--resume", session)
		}
		out := runAgent(t, work, env, claude, args...)
		var res struct {
			SessionID string `json:"session_id"`
			Result    string `json:"result"`
			IsError   bool   `json:"is_error"`
		}
		if err := json.Unmarshal(out, &res); err != nil || res.IsError || res.SessionID == "" {
			t.Fatalf("turn %d: %v\n%s", i+1, err, out)
		}
		if session != "" && res.SessionID != session {
			t.Fatalf("turn %d: session %s, want %s", i+1, res.SessionID, session)
		}
		session = res.SessionID
		if !strings.HasPrefix(res.Result, fmt.Sprintf("Fake reply %d.", i)) {
			t.Fatalf("turn %d: result %.60q, want the fake's reply %d", i+1, res.Result, i)
		}
	}

	reqs := up.ModelRequests()
	maxTokens := 0
	for i, r := range reqs {
		if r.Status != 200 {
			t.Errorf("upstream request %d answered %d: over the window of %d (%d tokens)", i, r.Status, window, fakeupstream.Tokens(r.Body))
		}
		maxTokens = max(maxTokens, fakeupstream.Tokens(r.Body))
	}
	if len(reqs) != claudeTurns {
		t.Errorf("%d upstream requests for %d turns", len(reqs), claudeTurns)
	}
	ctx := context.Background()
	h, err := e.store.History(ctx, session)
	if err != nil {
		t.Fatal(err)
	}
	all := ""
	for _, m := range h {
		all += m.Message.Text() + "\n"
	}
	for i, p := range prompts {
		if n := strings.Count(all, p); n != 1 {
			t.Errorf("turn %d's prompt is stored %d times, want once", i+1, n)
		}
		if n := strings.Count(all, fmt.Sprintf("Fake reply %d. ", i)); n != 1 {
			t.Errorf("turn %d's reply is stored %d times, want once", i+1, n)
		}
	}
	reports, err := e.store.Reports(ctx, session, 100)
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, r := range reports {
		if r.Status == memory.StatusApplied {
			applied++
		}
	}
	if applied < 3 {
		t.Errorf("%d compactions applied over %d turns, want several (3 or more)", applied, claudeTurns)
	}
	res, err := http.Get(e.url + "/")
	if err != nil {
		t.Fatal(err)
	}
	page, _ := io.ReadAll(res.Body)
	res.Body.Close()
	if res.StatusCode != 200 || !bytes.Contains(page, []byte(session)) {
		t.Errorf("the page (%d) does not list the thread %s", res.StatusCode, session)
	}
	t.Logf("%d turns, %d upstream requests, none refused; largest prompt %d of %d tokens (the fake's count); %d compactions applied; %d messages stored",
		claudeTurns, len(reqs), maxTokens, window, applied, len(h))
}

// runAgent runs an agent's command with env alone, in dir, and returns its standard output.
func runAgent(t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // bounds a hung agent only
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = env
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), err, out, stderr.Bytes())
	}
	return out
}
