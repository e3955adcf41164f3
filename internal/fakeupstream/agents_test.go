package fakeupstream_test

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/internal/fakeupstream"
	"github.com/memcascade/memcascade/internal/nodetest"
)

// The real agents are large (about 800 MB installed) and slow to install, so their tests run
// only when asked: MEMCASCADE_AGENT_TESTS=1 go test ./internal/fakeupstream -run Agent.
// -update-captures rewrites serve/testdata/agents/captures from the requests they send.
const agentTestsEnv = "MEMCASCADE_AGENT_TESTS"

var updateCaptures = flag.Bool("update-captures", false, "rewrite serve/testdata/agents/captures from the agents' requests")

var agentsDir = filepath.Join("..", "..", "serve", "testdata", "agents")

// The three turns every agent is run for: the second asks for a tool call, which the fake
// makes (the agent runs it and sends its output in a second request of that turn).
var turns = []string{
	"Turn one: say hi.",
	"Turn two: TOOLCALL please run echo hello-from-tool.",
	"Turn three: summarize.",
}

// captureNames name the four model requests of the three turns.
var captureNames = []string{"turn1.json", "turn2.json", "turn2-toolresult.json", "turn3.json"}

func requireAgents(t *testing.T) string {
	t.Helper()
	if os.Getenv(agentTestsEnv) == "" {
		t.Skipf("the real agents run only when %s is set", agentTestsEnv)
	}
	_, dir := nodetest.Require(t, agentsDir, "@anthropic-ai/claude-code")
	return dir
}

// script answers as the fake model of the agent tests: the output of a tool ends the tool's
// turn; a prompt saying TOOLCALL gets a call of tool with input; anything else a short reply.
// Every reply but the last of the tool's turn starts with a thinking (reasoning) block.
func script(last func(body []byte) (text string, toolResult bool), tool, input string) func(int, fakeupstream.Request) fakeupstream.Reply {
	return func(n int, r fakeupstream.Request) fakeupstream.Reply {
		text, toolResult := last(r.Body)
		switch {
		case toolResult:
			return fakeupstream.Reply{Text: "The tool printed hello-from-tool."}
		case strings.Contains(text, "TOOLCALL"):
			return fakeupstream.Reply{Thinking: "The user wants a tool call.", Text: "Running it.",
				Tool: &fakeupstream.ToolCall{Name: tool, Input: input}}
		}
		return fakeupstream.Reply{Thinking: fmt.Sprintf("Thinking %d.", n), Text: fmt.Sprintf("Fake reply %d.", n)}
	}
}

// run runs one agent command with env alone (no variable of the test's environment but PATH),
// in dir, and returns its standard output.
func run(t *testing.T, dir string, env []string, name string, args ...string) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // bounds a hung agent only
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append([]string{"PATH=" + os.Getenv("PATH")}, env...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("%s %q: %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), args, err, out, stderr.Bytes())
	}
	return out
}

// TestAgentClaudeCode: Claude Code, headless, three turns (the second with a Bash call) against
// the fake Anthropic upstream.
func TestAgentClaudeCode(t *testing.T) {
	dir := requireAgents(t)
	pkg := filepath.Join(dir, "node_modules", "@anthropic-ai", "claude-code")
	claude := filepath.Join(pkg, "bin", "claude.exe")
	if b, err := os.ReadFile(claude); err != nil || !bytes.HasPrefix(b, []byte("\x7fELF")) {
		// npm ran with scripts off: the postinstall that places the native binary did not run.
		node, _ := exec.LookPath("node")
		cmd := exec.Command(node, "install.cjs")
		cmd.Dir = pkg
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Fatalf("node install.cjs: %v\n%s", err, out)
		}
	}
	f := fakeupstream.NewAnthropic(fakeupstream.Options{Reply: script(lastAnthropic, "Bash", `{"command":"echo hello-from-tool"}`)})
	defer f.Close()
	work := t.TempDir()
	env := []string{"HOME=" + t.TempDir(), "ANTHROPIC_BASE_URL=" + f.URL, "ANTHROPIC_API_KEY=test",
		"DISABLE_TELEMETRY=1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC=1"}
	var session string
	for i, prompt := range turns {
		args := []string{"-p", prompt, "--output-format", "json"}
		if i == 1 {
			args = append(args, "--allowedTools", "Bash") // -p asks no permission: Bash must be allowed
		}
		if session != "" {
			args = append(args, "--resume", session)
		}
		out := run(t, work, env, claude, args...)
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
		if want := []string{"Fake reply 0.", "The tool printed hello-from-tool.", "Fake reply 3."}[i]; res.Result != want {
			t.Fatalf("turn %d: result %q, want %q", i+1, res.Result, want)
		}
	}
	reqs := checkRequests(t, f, "/v1/messages", "X-Claude-Code-Session-Id", session)
	if !bytes.Contains(reqs[2].Body, []byte(`"tool_result"`)) || !bytes.Contains(reqs[2].Body, []byte("hello-from-tool")) {
		t.Fatalf("the tool's output is not in the request after the call:\n%.2000s", reqs[2].Body)
	}
	writeCaptures(t, "claude", reqs)
}

// TestAgentCodex: Codex CLI, headless, three turns (the second with an exec_command call)
// against the fake Responses upstream.
func TestAgentCodex(t *testing.T) {
	dir := requireAgents(t)
	codex := filepath.Join(dir, "node_modules", ".bin", "codex")
	f := fakeupstream.NewResponses(fakeupstream.Options{Reply: script(lastResponses, "exec_command", `{"cmd":"echo hello-from-tool"}`)})
	defer f.Close()
	home := t.TempDir()
	config := fmt.Sprintf(`model_provider = "fake"
model = "gpt-5.5"
check_for_update_on_startup = false

[model_providers.fake]
name = "Fake upstream"
base_url = "%s/v1"
env_key = "FAKE_API_KEY"
wire_api = "responses"

[analytics]
enabled = false

# Off, Codex looks up api.github.com at start (the curated plugins' sync): the
# agent must reach nothing but the fake.
[features]
plugins = false
remote_plugin = false
apps = false
in_app_updates = false
`, f.URL)
	if err := os.WriteFile(filepath.Join(home, "config.toml"), []byte(config), 0o644); err != nil {
		t.Fatal(err)
	}
	work := t.TempDir()
	env := []string{"HOME=" + t.TempDir(), "CODEX_HOME=" + home, "FAKE_API_KEY=test"}
	for i, prompt := range turns {
		args := []string{"exec", "--skip-git-repo-check", prompt}
		if i > 0 {
			args = []string{"exec", "--skip-git-repo-check", "resume", "--last", prompt}
		}
		out := strings.TrimSpace(string(run(t, work, env, codex, args...)))
		if want := []string{"Fake reply 0.", "The tool printed hello-from-tool.", "Fake reply 3."}[i]; out != want {
			t.Fatalf("turn %d: output %q, want %q", i+1, out, want)
		}
	}
	reqs := f.ModelRequests()
	if len(reqs) == 0 {
		t.Fatal("no model request")
	}
	reqs = checkRequests(t, f, "/v1/responses", "Session-Id", reqs[0].Header.Get("Session-Id"))
	if !bytes.Contains(reqs[2].Body, []byte(`"function_call_output"`)) || !bytes.Contains(reqs[2].Body, []byte("hello-from-tool")) {
		t.Fatalf("the tool's output is not in the request after the call:\n%.2000s", reqs[2].Body)
	}
	writeCaptures(t, "codex", reqs)
}

// checkRequests checks that the agent sent the four model requests of the three turns, and
// nothing else, all on path and with the session header set to session; it returns them.
func checkRequests(t *testing.T, f *fakeupstream.Fake, path, header, session string) []fakeupstream.Request {
	t.Helper()
	reqs := f.Requests()
	if len(reqs) != len(captureNames) {
		for _, r := range reqs {
			t.Logf("%s %s?%s -> %d", r.Method, r.Path, r.RawQuery, r.Status)
		}
		t.Fatalf("%d requests, want %d", len(reqs), len(captureNames))
	}
	for i, r := range reqs {
		if r.Method != "POST" || r.Path != path || r.Status != 200 || r.Header.Get(header) != session {
			t.Fatalf("request %d: %s %s -> %d, %s %q (want %q)", i, r.Method, r.Path, r.Status, header, r.Header.Get(header), session)
		}
	}
	return reqs
}

// writeCaptures rewrites serve/testdata/agents/captures/agent with -update-captures: each
// request's body re-indented (key order and string escapes as sent) and requests.json, the
// request lines and headers, with the key headers' values redacted.
func writeCaptures(t *testing.T, agent string, reqs []fakeupstream.Request) {
	t.Helper()
	if !*updateCaptures {
		return
	}
	dir := filepath.Join(agentsDir, "captures", agent)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	type line struct {
		Body      string            `json:"body"`
		Method    string            `json:"method"`
		Path      string            `json:"path"`
		Query     string            `json:"query"`
		Status    int               `json:"status"`
		BodyBytes int               `json:"body_bytes"`
		Headers   map[string]string `json:"headers"`
	}
	var lines []line
	for i, r := range reqs {
		var b bytes.Buffer
		if err := json.Indent(&b, r.Body, "", "  "); err != nil {
			t.Fatal(err)
		}
		b.WriteByte('\n')
		if err := os.WriteFile(filepath.Join(dir, captureNames[i]), b.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
		h := map[string]string{}
		for k, v := range r.Header {
			h[k] = strings.Join(v, ", ")
			if k == "X-Api-Key" || k == "Authorization" {
				h[k] = "REDACTED"
			}
		}
		lines = append(lines, line{captureNames[i], r.Method, r.Path, r.RawQuery, r.Status, len(r.Body), h})
	}
	b, err := json.MarshalIndent(lines, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "requests.json"), append(b, '\n'), 0o644); err != nil {
		t.Fatal(err)
	}
}

// lastAnthropic: the text of the last user message, and whether it carries a tool result.
func lastAnthropic(body []byte) (string, bool) {
	var b struct {
		Messages []struct {
			Role    string          `json:"role"`
			Content json.RawMessage `json:"content"`
		} `json:"messages"`
	}
	_ = json.Unmarshal(body, &b)
	for i := len(b.Messages) - 1; i >= 0; i-- {
		if m := b.Messages[i]; m.Role == "user" {
			return string(m.Content), bytes.Contains(m.Content, []byte(`"tool_result"`))
		}
	}
	return "", false
}

// lastResponses: the text of the last user message of the input, and whether a function
// call's output comes after it.
func lastResponses(body []byte) (string, bool) {
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
