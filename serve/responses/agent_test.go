package responses_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
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
)

// agentTestsEnv runs the tests of the real agents (large, slow to install) when set.
const agentTestsEnv = "MEMCASCADE_AGENT_TESTS"

// lastInputText is the text of the last user message of a request's input, and whether a
// call's output comes after it.
func lastInputText(body []byte) (string, bool) {
	var b struct {
		Input []json.RawMessage `json:"input"`
	}
	_ = json.Unmarshal(body, &b)
	for i := len(b.Input) - 1; i >= 0; i-- {
		var it struct{ Type, Role string }
		_ = json.Unmarshal(b.Input[i], &it)
		switch {
		case it.Type == "function_call_output":
			return "", true
		case it.Role == "user":
			return string(b.Input[i]), false
		}
	}
	return "", false
}

// TestAgentCodexThroughServe: Codex CLI 0.171, headless, 20 turns (a tool call every fifth)
// through memctl serve in front of the fake Responses API, at a limit its conversation
// outgrows: every turn succeeds with the reply the fake gave, serve compacts the thread, and
// no request the upstream gets is over its window.
func TestAgentCodexThroughServe(t *testing.T) {
	if os.Getenv(agentTestsEnv) == "" {
		t.Skipf("the real agents run only when %s is set", agentTestsEnv)
	}
	_, dir := nodetest.Require(t, filepath.Join("..", "testdata", "agents"), "@openai/codex")
	codex := filepath.Join(dir, "node_modules", ".bin", "codex")
	const window = 16000
	pad := strings.Repeat("The cache keeps warm entries near the front. ", 40)
	reply := func(n int, r fakeupstream.Request) fakeupstream.Reply {
		text, toolResult := lastInputText(r.Body)
		switch {
		case toolResult:
			return fakeupstream.Reply{Text: "The tool printed hello-from-tool."}
		case strings.Contains(text, "TOOLCALL"):
			return fakeupstream.Reply{Thinking: "The user wants a tool call.", Text: "Running it.",
				Tool: &fakeupstream.ToolCall{Name: "exec_command", Input: `{"cmd":"echo hello-from-tool"}`}}
		}
		return fakeupstream.Reply{Thinking: "A question.", Text: fmt.Sprintf("Fake reply %d. %s", n, pad)}
	}
	e := newEnv(t, 11000, fakeupstream.Options{Window: window, Reply: reply})
	home := t.TempDir()
	config := fmt.Sprintf(`model_provider = "memctl"
model = "gpt-5.5"
check_for_update_on_startup = false

[model_providers.memctl]
name = "memctl serve"
base_url = "%s/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

[features]
plugins = false
remote_plugin = false
apps = false
in_app_updates = false
`, e.url)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o600); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	env := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + t.TempDir(), "CODEX_HOME=" + home, "FAKE_API_KEY=test"}
	for turn := 1; turn <= 20; turn++ {
		prompt := fmt.Sprintf("Turn %d: %s", turn, strings.Repeat("tell me about the cache. ", 20))
		if turn%5 == 0 {
			prompt = fmt.Sprintf("Turn %d: TOOLCALL please run echo hello-from-tool.", turn)
		}
		args := []string{"exec", "--skip-git-repo-check", prompt}
		if turn > 1 {
			args = []string{"exec", "--skip-git-repo-check", "resume", "--last", prompt}
		}
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // bounds a hung agent only
		cmd := exec.CommandContext(ctx, codex, args...)
		cmd.Dir, cmd.Env = work, env
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		out, err := cmd.Output()
		cancel()
		if err != nil {
			t.Fatalf("turn %d: %v\nstdout:\n%s\nstderr:\n%s", turn, err, out, stderr.Bytes())
		}
		got := strings.TrimSpace(string(out))
		want := "Fake reply"
		if turn%5 == 0 {
			want = "The tool printed hello-from-tool."
		}
		if !strings.HasPrefix(got, want) {
			t.Fatalf("turn %d: output %.200q, want %q...\nstderr:\n%s", turn, got, want, stderr.Bytes())
		}
	}
	var refused, largest, answered int
	for _, r := range e.fake.ModelRequests() {
		if r.Status != http.StatusOK {
			refused++
			continue
		}
		answered++
		largest = max(largest, fakeupstream.Tokens(r.Body))
	}
	if largest > window {
		t.Fatalf("the largest request answered %d tokens (window %d)", largest, window)
	}
	threads, err := e.store.Threads(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, th := range threads {
		reps, _ := e.store.Reports(context.Background(), th.ID, 0)
		for _, r := range reps {
			if r.Status == memory.StatusApplied {
				applied++
			}
		}
	}
	// One thread, named by Codex's session header (a UUID), not by serve.
	if len(threads) != 1 || len(threads[0].ID) != 36 || applied == 0 {
		t.Fatalf("%d threads (%+v), %d compactions applied", len(threads), threads, applied)
	}
	t.Logf("%d requests answered, %d refused and retried; the largest %d tokens (window %d); thread %s, %d compactions applied",
		answered, refused, largest, window, threads[0].ID, applied)
}
