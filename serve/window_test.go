package serve_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/sashabaranov/go-openai"
)

// chatTurns runs n turns of an agent that resends its whole history (starting with msgs), each
// turn a user message of about 120 tokens, and fails the test on any error; it returns the
// history it sent.
func chatTurns(t *testing.T, e *env, thread string, n int, msgs ...openai.ChatCompletionMessage) []openai.ChatCompletionMessage {
	t.Helper()
	c := e.client(thread, "k")
	for i := range n {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: "user", Content: fmt.Sprintf("turn %d: %s", i, strings.Repeat("alpha beta gamma delta ", 30))})
		resp, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: "m", Messages: msgs})
		if err != nil {
			t.Fatalf("turn %d: %v", i, err)
		}
		msgs = append(msgs, resp.Choices[0].Message)
	}
	return msgs
}

// TestWindowOfTheUpstream: with token_limit auto and no limit configured, the proxy reads the
// window of the model from the upstream (as llama.cpp, vLLM, Ollama and LiteLLM report it) and
// the upstream never gets more: every turn answers, none refused.
func TestWindowOfTheUpstream(t *testing.T) {
	t.Parallel()
	for _, way := range []string{"llama.cpp", "vllm", "ollama", "litellm"} {
		t.Run(way, func(t *testing.T) {
			e := newEnv(t, envOptions{auto: true})
			e.up.set(func(u *upstream) { u.window, u.way = 2048, way })
			chatTurns(t, e, "w", 30)
			requests, maxTokens := e.up.stats()
			var refused int
			e.up.set(func(u *upstream) { refused = u.refused })
			if refused != 0 || maxTokens > 2048 || requests != 30 {
				t.Fatalf("%d requests, %d refused, the largest %d tokens; want 30, none refused, at most 2048", requests, refused, maxTokens)
			}
			if got := len(e.history("w")); got != 60 {
				t.Fatalf("%d messages stored, want 60", got)
			}
		})
	}
}

// TestLimitNotOverTheWindow: an upstream whose usage reports a third of the prompt drives the
// calibration ratio to its lower clamp; the limit still never passes the window the upstream
// reports, so no turn is refused and none sent over the window.
func TestLimitNotOverTheWindow(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{auto: true})
	e.up.set(func(u *upstream) { u.window, u.way, u.usageScale = 2048, "llama.cpp", 0.33 })
	chatTurns(t, e, "u", 40)
	requests, maxTokens := e.up.stats()
	var refused int
	e.up.set(func(u *upstream) { refused = u.refused })
	if refused != 0 || maxTokens > 2048 || requests != 40 {
		t.Fatalf("%d requests, %d refused, the largest %d tokens; want 40, none refused, at most 2048", requests, refused, maxTokens)
	}
	code, body, _ := e.get("/api/threads/u")
	if code != 200 || !strings.Contains(body, `"token_limit": 2048`) {
		t.Fatalf("the thread's limit: %d %s, want the window, 2048", code, body)
	}
}

// TestCompactAndRetry: an upstream that counts 30% more than the local tokenizer refuses what
// the proxy thinks fits. The first refusal is absorbed: the proxy compacts to a smaller budget
// and retries, the agent sees the answer; the reply's usage calibrates the budget so that the
// later turns are not refused. Measured: the refusals in 100 turns. The agent starts with a
// history of some 1,800 tokens (by the local count), which fits the window by the local count
// and not by the upstream's.
func TestCompactAndRetry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{auto: true})
	e.up.set(func(u *upstream) { u.window, u.way, u.scale = 2048, "llama.cpp", 1.3 })
	var start []openai.ChatCompletionMessage
	for i := range 12 {
		start = append(start, openai.ChatCompletionMessage{Role: "user", Content: fmt.Sprintf("earlier %d: %s", i, strings.Repeat("epsilon zeta eta theta ", 25))},
			openai.ChatCompletionMessage{Role: "assistant", Content: fmt.Sprintf("noted %d", i)})
	}
	chatTurns(t, e, "r", 100, start...)
	requests, maxTokens := e.up.stats()
	var refused int
	e.up.set(func(u *upstream) { refused = u.refused })
	t.Logf("100 turns: %d requests answered by the upstream, %d refused as too long, the largest accepted %d tokens (by the upstream's count)", requests, refused, maxTokens)
	if refused > 1 || maxTokens > 2048 {
		t.Fatalf("%d refusals (want at most the first), largest %d tokens", refused, maxTokens)
	}
	if refused == 0 {
		t.Fatal("no refusal: the test does not exercise compact-and-retry")
	}
	if got := len(e.history("r")); got != 200+len(start) {
		t.Fatalf("%d messages stored, want %d", got, 200+len(start))
	}
}
