package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/serve"
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

// TestWindowOutOfRange: an upstream that reports a window of 10^15 tokens for the model does
// not wedge the thread. Before, every turn was a 400 invalid_settings (the limit, over the
// largest supported, did not resolve); now the window is not believed, the default is assumed
// (and recorded), and the turns are answered.
func TestWindowOutOfRange(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{auto: true})
	e.up.set(func(u *upstream) {
		u.models = `{"object":"list","data":[{"id":"m","object":"model","max_model_len":1000000000000000}]}`
	})
	chatTurns(t, e, "w", 3)
	ts, err := compact.ThreadSettingsOf(context.Background(), e.store, "w")
	if err != nil {
		t.Fatal(err)
	}
	if w := ts.Window; w == nil || w.Tokens != cascade.DefaultAutoWindow || !strings.Contains(w.Source, "1000000000000000 is out of range") {
		t.Fatalf("recorded window %+v, want the default, saying why", w)
	}
}

// TestWindowOneBadEntry: an entry of the upstream's GET /v1/models whose max_model_len is not a
// whole number (3000.5, "4096") hides no other model's window. Before, the answer failed to
// decode as a whole: a model that reports 300 was assumed to have 4,096, was sent a prompt of
// 495 tokens and refused it (the proxy compacted and retried). Now the proxy compacts first
// and the upstream never gets more than 300.
func TestWindowOneBadEntry(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{auto: true})
	e.up.set(func(u *upstream) {
		u.window = 300 // enforced, and reported by GET /v1/models only
		u.models = `{"object":"list","data":[{"id":"x","object":"model","max_model_len":3000.5},
			{"id":"y","object":"model","max_model_len":"4096"},{"id":"m","object":"model","max_model_len":300}]}`
	})
	var msgs []openai.ChatCompletionMessage
	for i := range 12 {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: "user", Content: fmt.Sprintf("note %d: %s", i, strings.Repeat("kappa lambda mu ", 8))})
	}
	c := e.client("b", "k")
	if _, err := c.CreateChatCompletion(context.Background(), openai.ChatCompletionRequest{Model: "m", Messages: msgs}); err != nil {
		t.Fatal(err)
	}
	requests, maxTokens := e.up.stats()
	var refused int
	e.up.set(func(u *upstream) { refused = u.refused })
	if refused != 0 || requests != 1 || maxTokens > 300 {
		t.Fatalf("%d requests answered, %d refused, the largest %d tokens; want one, none refused, at most 300", requests, refused, maxTokens)
	}
	ts, err := compact.ThreadSettingsOf(context.Background(), e.store, "b")
	if err != nil {
		t.Fatal(err)
	}
	if ts.Window == nil || ts.Window.Tokens != 300 {
		t.Fatalf("recorded window %+v, want 300", ts.Window)
	}
}

// TestWindowRecordRefused: a window recorded on a thread that the current rules refuse (here
// 2^28+1 tokens; an earlier version recorded 10^15) is not shown as the thread's limit, and is
// dropped at the thread's next turn, not kept. Before, the thread showed a limit of 10^15 from
// the upstream and kept the record.
func TestWindowRecordRefused(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	e := newEnv(t, envOptions{auto: true})
	e.up.set(func(u *upstream) { u.window, u.way = 3000, "vllm" })
	hist := chatTurns(t, e, "p", 1)
	limit := 5000
	huge := cascade.MaxWindow + 1 // the largest out of range that a 32-bit int holds is as refused as 10^15
	bad := &compact.Window{Model: "m", Tokens: huge, Source: fmt.Sprintf("max_model_len %d of GET /v1/models", huge),
		Ratio: 1, Limit: huge}
	if err := compact.SaveThreadSettings(ctx, e.store, "p", compact.ThreadSettings{Window: bad}); err != nil {
		t.Fatal(err)
	}
	status, body, _ := e.get("/api/threads/p")
	var v struct {
		TokenLimit     int    `json:"token_limit"`
		TokenLimitFrom string `json:"token_limit_from"`
	}
	if err := json.Unmarshal([]byte(body), &v); status != http.StatusOK || err != nil {
		t.Fatalf("%d %s", status, body)
	}
	if v.TokenLimitFrom != serve.LimitFromConfig || v.TokenLimit == bad.Limit {
		t.Fatalf("thread shown with limit %d from %s, want the config's", v.TokenLimit, v.TokenLimitFrom)
	}
	// The thread's own limit: this turn reads no window, and drops the record.
	if err := compact.SaveThreadSettings(ctx, e.store, "p", compact.ThreadSettings{TokenLimit: &limit, Window: bad}); err != nil {
		t.Fatal(err)
	}
	chatTurns(t, e, "p", 1, hist...)
	ts, err := compact.ThreadSettingsOf(ctx, e.store, "p")
	if err != nil {
		t.Fatal(err)
	}
	if ts.Window != nil || ts.TokenLimit == nil || *ts.TokenLimit != limit {
		t.Fatalf("settings after a turn: window %+v, limit %v; want the window dropped, the limit kept", ts.Window, ts.TokenLimit)
	}
	if n := strings.Count(e.logs.String(), "recorded window is refused"); n != 1 {
		t.Fatalf("%d log lines about the refused record, want 1:\n%s", n, e.logs)
	}
}

// TestWindowLearnedFromRefusal: an upstream that reports no window (Anthropic's API, a
// llama.cpp without /props) is not taken to have the 4,096 tokens assumed for it: the thread
// is sent whole until the upstream refuses a prompt naming its window ("9000 tokens, 8192
// available"); that refusal teaches the window and the upstream's count of the prompt, the
// turn is compacted and retried, and no later turn is refused.
func TestWindowLearnedFromRefusal(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{auto: true})
	e.up.set(func(u *upstream) { u.window, u.way, u.scale = 6000, "", 1.2 })
	chatTurns(t, e, "learn", 60)
	requests, maxTokens := e.up.stats()
	var refused int
	e.up.set(func(u *upstream) { refused = u.refused })
	if refused != 1 || maxTokens > 6000 || requests != 60 {
		t.Fatalf("%d requests, %d refused, the largest %d tokens; want 60, the first over the window refused alone, at most 6000", requests, refused, maxTokens)
	}
	ts, err := compact.ThreadSettingsOf(context.Background(), e.store, "learn")
	if err != nil || ts.Window == nil || ts.Window.Tokens != 6000 || !strings.Contains(ts.Window.Source, "refusal") {
		t.Fatalf("the recorded window: %+v %v, want 6000 learned from the refusal", ts.Window, err)
	}
}
