package responses_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
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
// through memctl serve in front of the fake Responses API: every turn succeeds with a reply the
// fake gave and no request the upstream gets is over its window. At a limit its conversation
// outgrows, serve compacts the thread; when Codex compacts its conversation itself
// (model_auto_compact_token_limit), each compaction rewrites the conversation and starts a new
// segment of the thread, never a 409.
func TestAgentCodexThroughServe(t *testing.T) {
	if os.Getenv(agentTestsEnv) == "" {
		t.Skipf("the real agents run only when %s is set", agentTestsEnv)
	}
	t.Run("serve compacts", func(t *testing.T) {
		applied, segments := runCodex(t, "")
		if applied == 0 || segments != 0 {
			t.Fatalf("%d compactions applied, %d segments", applied, segments)
		}
	})
	t.Run("codex compacts", func(t *testing.T) {
		_, segments := runCodex(t, "model_auto_compact_token_limit = 9000\n")
		if segments == 0 {
			t.Fatal("Codex did not compact its conversation")
		}
	})
}

// runCodex runs Codex's 20 turns, extra added to its config, and returns the compactions
// serve applied and the segments of the thread.
func runCodex(t *testing.T, extra string) (applied, segments int) {
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
	// A recorder in front of serve: what Codex sends, logged when a turn fails.
	var seen []string
	target := e.url
	rec := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		req, _ := http.NewRequest(r.Method, target+r.URL.RequestURI(), bytes.NewReader(body))
		req.Header = r.Header.Clone()
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			http.Error(w, err.Error(), 502)
			return
		}
		defer resp.Body.Close()
		out, _ := io.ReadAll(resp.Body)
		seen = append(seen, fmt.Sprintf("%s %s -> %d\n%s\n<- %.600s", r.Method, r.URL.Path, resp.StatusCode, body, out))
		for k, v := range resp.Header {
			w.Header()[k] = v
		}
		w.WriteHeader(resp.StatusCode)
		w.Write(out)
	}))
	defer rec.Close()
	home := t.TempDir()
	config := fmt.Sprintf(`model_provider = "memctl"
model = "gpt-5.5"
check_for_update_on_startup = false
%s
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
`, extra, rec.URL)
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
			for _, x := range seen[max(0, len(seen)-4):] {
				t.Logf("%s", x)
			}
			t.Fatalf("turn %d: %v\nstdout:\n%s\nstderr:\n%s", turn, err, out, stderr.Bytes())
		}
		// A tool's turn ends with the fake's answer to the tool's output, unless Codex compacted
		// its conversation after the call (its summary is then the last user message).
		got := strings.TrimSpace(string(out))
		if !strings.HasPrefix(got, "Fake reply") && (turn%5 != 0 || got != "The tool printed hello-from-tool.") {
			t.Fatalf("turn %d: output %.200q\nstderr:\n%s", turn, got, stderr.Bytes())
		}
	}
	var refused, largest, answered, toolOutputs, compactions int
	for _, r := range seen {
		if strings.HasPrefix(r, "POST /v1/responses/compact") {
			compactions++
		}
	}
	for _, r := range e.fake.ModelRequests() {
		if bytes.Contains(r.Body, []byte(`"function_call_output"`)) && bytes.Contains(r.Body, []byte("hello-from-tool")) {
			toolOutputs++
		}
		if r.Status != http.StatusOK {
			refused++
			continue
		}
		answered++
		largest = max(largest, fakeupstream.Tokens(r.Body))
	}
	if largest > window || toolOutputs == 0 {
		t.Fatalf("the largest request answered %d tokens (window %d); %d requests with the tool's output", largest, window, toolOutputs)
	}
	threads, err := e.store.Threads(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, th := range threads {
		reps, _ := e.store.Reports(context.Background(), th.ID, 0)
		for _, r := range reps {
			if r.Status == memory.StatusApplied {
				applied++
			}
		}
	}
	// One thread, named by Codex's session header (a UUID), not by serve; the segments its
	// own compactions started (its conversation rewritten) archived beside it.
	main := ""
	for _, th := range threads {
		if len(th.ID) == 36 {
			if main != "" {
				t.Fatalf("two threads: %s and %s", main, th.ID)
			}
			main = th.ID
		}
	}
	for _, th := range threads {
		if th.ID != main {
			if !strings.HasPrefix(th.ID, main+".segment-") {
				t.Fatalf("thread %s beside %s", th.ID, main)
			}
			segments++
		}
	}
	if main == "" {
		t.Fatalf("threads %+v", threads)
	}
	if segments == 0 {
		// Every turn's prompt is stored once in the thread (export --all holds each turn once).
		h, err := e.store.History(context.Background(), main)
		if err != nil {
			t.Fatal(err)
		}
		var all strings.Builder
		for _, m := range h {
			all.WriteString(m.Message.Text() + "\n")
		}
		for turn := 1; turn <= 20; turn++ {
			prompt := fmt.Sprintf("Turn %d: %s", turn, strings.Repeat("tell me about the cache. ", 20))
			if turn%5 == 0 {
				prompt = fmt.Sprintf("Turn %d: TOOLCALL please run echo hello-from-tool.", turn)
			}
			if n := strings.Count(all.String(), prompt); n != 1 {
				t.Errorf("turn %d's prompt is stored %d times, want once", turn, n)
			}
		}
	}
	t.Logf("%d requests answered, %d refused and retried; the largest %d tokens (window %d); thread %s, %d segments (Codex compacted), %d /responses/compact calls; %d compactions applied",
		answered, refused, largest, window, main, segments, compactions, applied)
	return applied, segments
}
