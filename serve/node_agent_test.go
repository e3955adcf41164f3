package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/nodetest"
)

// TestNodeAgentSmallWindow: the official Node client runs a 40-turn agent with tool calls
// through the proxy, no limit configured (token_limit auto), in front of an upstream with a
// 2,048-token window that counts 30% more than the local tokenizer and refuses what is over
// its window; the window is reported the llama.cpp, the vLLM and the Ollama way. Every request
// is answered (the client does not retry), none is refused, and every message is stored once,
// in order.
func TestNodeAgentSmallWindow(t *testing.T) {
	t.Parallel()
	node, dir := nodetest.Require(t, filepath.Join("testdata", "node"), "openai")
	const turns = 40
	for _, way := range []string{"llama.cpp", "vllm", "ollama"} {
		t.Run(way, func(t *testing.T) {
			t.Parallel() // a server, an upstream and a node process of its own
			e := newEnv(t, envOptions{auto: true, token: "node-token"})
			e.up.set(func(u *upstream) {
				u.window, u.way, u.scale = 2048, way, 1.3
				u.reply = func(n int, msgs []chat.Message) chat.Message {
					last := msgs[len(msgs)-1]
					if last.Role == chat.RoleUser {
						step := strings.TrimSuffix(strings.Fields(last.Text())[1], ":") // "Step N: ..."
						return chat.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{{
							ID: fmt.Sprintf("call_%d", n), Type: "function",
							Function: chat.FunctionCall{Name: "read_log", Arguments: fmt.Sprintf(`{"step": %s}`, step)}}}}
					}
					return chat.TextMessage("assistant", fmt.Sprintf("Reply %d: the layer cache of the runner is stale; rebuild it.", n))
				}
			})
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute) // bounds a hung node only
			defer cancel()
			cmd := exec.CommandContext(ctx, node, "agent.mjs")
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "MEMCTL_BASE_URL="+e.url+"/t/agent/v1", "MEMCTL_TOKEN=node-token", fmt.Sprintf("TURNS=%d", turns))
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("node agent.mjs: %v\n%s", err, stderr.String())
			}
			var res struct {
				Messages []chat.Message `json:"messages"`
			}
			if err := json.Unmarshal(out, &res); err != nil {
				t.Fatalf("the script's output: %v\n%s", err, out)
			}
			e.srv.WaitBackground()
			var want []string
			for _, m := range res.Messages {
				line := m.Role + ": " + m.Text()
				for _, tc := range m.ToolCalls {
					line += fmt.Sprintf(" [call %s %s %s]", tc.ID, tc.Function.Name, tc.Function.Arguments)
				}
				want = append(want, line)
			}
			if len(want) != 1+4*turns {
				t.Fatalf("the agent's conversation has %d messages, want %d", len(want), 1+4*turns)
			}
			if got := e.history("agent"); !slices.Equal(got, want) {
				t.Fatalf("stored history (%d messages) is not the agent's (%d)", len(got), len(want))
			}
			requests, maxTokens := e.up.stats()
			var refused int
			e.up.set(func(u *upstream) { refused = u.refused })
			reps, _ := e.store.Reports(context.Background(), "agent", 0)
			t.Logf("%s: %d requests answered, %d refused, the largest %d tokens by the upstream's count; %d compactions", way, requests, refused, maxTokens, len(reps))
			if requests != 2*turns || refused != 0 || maxTokens > 2048 {
				t.Fatalf("%d requests answered (want %d), %d refused, the largest %d tokens (window 2048)", requests, 2*turns, refused, maxTokens)
			}
		})
	}
}
