package anthropic_test

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/internal/nodetest"
)

// TestNodeAnthropicSDK: the official Anthropic client (testdata/node, pinned with its
// lockfile) holds a conversation through memctl serve as Claude Code does: the thread in the
// session header, the whole conversation resent, a tool round, streamed turns through the
// beta messages, count_tokens, and an edited history. The client reads serve's
// answers, streams and errors as Anthropic's (the refusal raised as a ConflictError, not
// retried); the upstream gets the thinking block's signature back; each message is stored
// once.
func TestNodeAnthropicSDK(t *testing.T) {
	node, dir := nodetest.Require(t, filepath.Join("testdata", "node"), "@anthropic-ai/sdk")
	t.Parallel()
	e := newEnv(t, 100000)
	e.fake.set(func(f *fake) { f.reply = toolReply })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // bounds a hung node only
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "conversation.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MEMCTL_BASE_URL="+e.url, "SESSION=sdk-session")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node conversation.mjs: %v\n%s", err, stderr.String())
	}
	var res struct {
		First, Second, Third []map[string]any
		Usage                struct {
			InputTokens          int `json:"input_tokens"`
			CacheReadInputTokens int `json:"cache_read_input_tokens"`
		}
		Deltas, Count int
		Edited        map[string]any
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("the script's output: %v\n%s", err, out)
	}
	if len(res.First) != 3 || res.First[0]["signature"] != "sig-1/+=" || res.First[2]["id"] != "toolu_1" || res.Usage.InputTokens == 0 {
		t.Errorf("first: %v, usage %+v", res.First, res.Usage)
	}
	if len(res.Second) != 1 || res.Second[0]["text"] != "reply 2: the command ran." || res.Deltas < 1 {
		t.Errorf("second: %v, %d text deltas", res.Second, res.Deltas)
	}
	if len(res.Third) != 1 || res.Third[0]["text"] != "reply 3" || res.Count < 50 {
		t.Errorf("third: %v, count_tokens %d", res.Third, res.Count)
	}
	if res.Edited["status"] != float64(409) || res.Edited["type"] != "invalid_request_error" || res.Edited["code"] != "history_conflict" || res.Edited["name"] != "ConflictError" {
		t.Errorf("the edited history: %v", res.Edited)
	}
	e.fake.mu.Lock()
	reqs := e.fake.requests
	e.fake.mu.Unlock()
	if len(reqs) != 3 {
		t.Fatalf("%d upstream requests, want 3 (count_tokens and the refusal are serve's own)", len(reqs))
	}
	for _, r := range reqs[1:] {
		if !strings.Contains(string(r.body), `"signature":"sig-1/+="`) {
			t.Errorf("the upstream did not get the signature back: %s", r.body)
		}
	}
	want := []string{
		"system: You are a coding agent.",
		"user: please run ls",
		`assistant: Running it. [toolu_1 Bash {"command":"ls"}]`,
		"tool: go.mod\nmain.go (toolu_1)",
		"assistant: reply 2: the command ran.",
		"user: thanks",
		"assistant: reply 3",
	}
	if got := e.history("sdk-session"); strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}
