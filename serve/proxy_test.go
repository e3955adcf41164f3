package serve_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"testing"

	openai "github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
	"github.com/memcascade/memcascade/tokencount"
)

func (e *env) client(thread, key string) *openai.Client {
	cfg := openai.DefaultConfig(key)
	cfg.BaseURL = e.url + "/t/" + thread + "/v1"
	return openai.NewClientWithConfig(cfg)
}

// A go-openai agent that resends its whole history each turn: every message is stored once,
// in order, and usage, model and finish reason reach it unchanged.
func TestGoClientWholeHistoryStoredOnce(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	c := e.client("chat-1", "unused")
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessage{{Role: "system", Content: "You are terse."}}
	var want []string
	want = append(want, "system: You are terse.")
	for turn := 1; turn <= 4; turn++ {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: "user", Content: fmt.Sprintf("question %d", turn)})
		resp, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "gpt-4o", Messages: msgs})
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		if got, want := resp.Choices[0].Message.Content, fmt.Sprintf("reply %d", turn); got != want {
			t.Fatalf("turn %d: reply %q, want %q", turn, got, want)
		}
		if resp.Model != "gpt-4o-upstream" || resp.Choices[0].FinishReason != "stop" || resp.Usage.CompletionTokens != 7 {
			t.Fatalf("turn %d: model %q, finish %q, usage %+v: not the upstream's", turn, resp.Model, resp.Choices[0].FinishReason, resp.Usage)
		}
		msgs = append(msgs, resp.Choices[0].Message)
		want = append(want, fmt.Sprintf("user: question %d", turn), fmt.Sprintf("assistant: reply %d", turn))
	}
	if got := e.history("chat-1"); !slices.Equal(got, want) {
		t.Fatalf("stored history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The upstream saw the whole conversation each time (no compaction at this size).
	if n, _ := e.up.stats(); n != 4 {
		t.Fatalf("upstream requests = %d, want 4", n)
	}
}

// An agent that sends only its new turn (with or without the system prompt the thread already
// has) gets the same history as one that resends everything.
func TestOnlyNewTurns(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	c := e.client("incremental", "k")
	ctx := context.Background()
	sys := openai.ChatCompletionMessage{Role: "system", Content: "S"}
	turns := [][]openai.ChatCompletionMessage{
		{sys, {Role: "user", Content: "one"}},
		{{Role: "user", Content: "two"}},
		{sys, {Role: "user", Content: "three"}},
	}
	for i, m := range turns {
		if _, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "gpt-4o", Messages: m}); err != nil {
			t.Fatalf("turn %d: %v", i+1, err)
		}
	}
	want := []string{"system: S", "user: one", "assistant: reply 1", "user: two", "assistant: reply 2", "user: three", "assistant: reply 3"}
	if got := e.history("incremental"); !slices.Equal(got, want) {
		t.Fatalf("stored history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	// The model got the whole active context, not only the new turn.
	e.up.mu.Lock()
	last := e.up.lastMsgs
	e.up.mu.Unlock()
	if len(last) != 6 || last[0].Text() != "S" || last[5].Text() != "three" {
		t.Fatalf("the upstream's last request held %d messages, want the 6 of the thread", len(last))
	}
}

// Streaming and tool calls round-trip through go-openai: the chunks reach the client, the
// reply assembled from the deltas (text and tool calls) is stored, and the tool result
// answers it.
func TestGoClientStreamingToolCalls(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.up.set(func(u *upstream) {
		u.reply = func(n int, _ []chat.Message) chat.Message {
			if n == 1 {
				m := chat.TextMessage("assistant", "Let me look.")
				m.ToolCalls = []chat.ToolCall{{ID: "call_1", Type: "function",
					Function: chat.FunctionCall{Name: "get_weather", Arguments: `{"city":"Oslo","unit":"C"}`}}}
				return m
			}
			return chat.TextMessage("assistant", "It is 4 degrees in Oslo.")
		}
	})
	c := e.client("tools", "k")
	ctx := context.Background()
	tools := []openai.Tool{{Type: "function", Function: &openai.FunctionDefinition{Name: "get_weather",
		Description: "Weather of a city", Parameters: map[string]any{"type": "object", "properties": map[string]any{"city": map[string]any{"type": "string"}}}}}}
	msgs := []openai.ChatCompletionMessage{{Role: "user", Content: "Weather in Oslo?"}}
	stream, err := c.CreateChatCompletionStream(ctx, openai.ChatCompletionRequest{Model: "gpt-4o", Messages: msgs, Tools: tools, Stream: true,
		StreamOptions: &openai.StreamOptions{IncludeUsage: true}})
	if err != nil {
		t.Fatal(err)
	}
	var text strings.Builder
	var calls []openai.ToolCall
	chunks, finish, usage := 0, "", 0
	for {
		r, err := stream.Recv()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		chunks++
		if r.Usage != nil {
			usage = r.Usage.CompletionTokens
		}
		for _, ch := range r.Choices {
			text.WriteString(ch.Delta.Content)
			if ch.FinishReason != "" {
				finish = string(ch.FinishReason)
			}
			for _, tc := range ch.Delta.ToolCalls {
				i := *tc.Index
				for len(calls) <= i {
					calls = append(calls, openai.ToolCall{Type: "function"})
				}
				if tc.ID != "" {
					calls[i].ID = tc.ID
				}
				calls[i].Function.Name += tc.Function.Name
				calls[i].Function.Arguments += tc.Function.Arguments
			}
		}
	}
	stream.Close()
	if text.String() != "Let me look." || len(calls) != 1 || calls[0].Function.Arguments != `{"city":"Oslo","unit":"C"}` {
		t.Fatalf("streamed %q with calls %+v", text.String(), calls)
	}
	if chunks < 6 || finish != "tool_calls" || usage != 7 {
		t.Fatalf("%d chunks, finish %q, usage %d: the stream did not pass through", chunks, finish, usage)
	}
	msgs = append(msgs, openai.ChatCompletionMessage{Role: "assistant", Content: text.String(), ToolCalls: calls},
		openai.ChatCompletionMessage{Role: "tool", ToolCallID: "call_1", Content: `{"temp":4}`})
	resp, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "gpt-4o", Messages: msgs, Tools: tools})
	if err != nil {
		t.Fatal(err)
	}
	if resp.Choices[0].Message.Content != "It is 4 degrees in Oslo." {
		t.Fatalf("reply %q", resp.Choices[0].Message.Content)
	}
	want := []string{
		"user: Weather in Oslo?",
		`assistant: Let me look. [call call_1 get_weather {"city":"Oslo","unit":"C"}]`,
		`tool: {"temp":4}`,
		"assistant: It is 4 degrees in Oslo.",
	}
	if got := e.history("tools"); !slices.Equal(got, want) {
		t.Fatalf("stored history:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// A thread that outgrows its limit is compacted, and no request the upstream receives is
// over the limit (the upstream counts with the thread's tokencount counter, tool definitions included).
func TestCompactsPastTheLimit(t *testing.T) {
	t.Parallel()
	const limit = 3000
	e := newEnv(t, envOptions{limit: limit})
	e.up.set(func(u *upstream) {
		u.reply = func(n int, _ []chat.Message) chat.Message {
			return chat.TextMessage("assistant", fmt.Sprintf("Answer %d: %s", n, strings.Repeat("the cache keeps warm entries; ", 12)))
		}
	})
	c := e.client("long", "k")
	ctx := context.Background()
	msgs := []openai.ChatCompletionMessage{{Role: "system", Content: "You are a careful assistant."}}
	for turn := 1; turn <= 30; turn++ {
		msgs = append(msgs, openai.ChatCompletionMessage{Role: "user",
			Content: fmt.Sprintf("Question %d: %s", turn, strings.Repeat("why does the build fail on port 8080? ", 8))})
		resp, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "gpt-4o", Messages: msgs})
		if err != nil {
			t.Fatalf("turn %d: %v", turn, err)
		}
		msgs = append(msgs, resp.Choices[0].Message)
	}
	e.srv.WaitBackground()
	n, maxTokens := e.up.stats()
	if n != 30 {
		t.Fatalf("upstream requests = %d, want 30", n)
	}
	if maxTokens > limit {
		t.Fatalf("an upstream request held %d tokens, over the limit %d", maxTokens, limit)
	}
	reps, err := e.store.Reports(ctx, "long", 0)
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, r := range reps {
		if r.Status == memory.StatusApplied {
			applied++
		}
	}
	if applied == 0 {
		t.Fatalf("no compaction applied (%d reports)", len(reps))
	}
	// The whole conversation is still stored once, in order.
	if got := len(e.history("long")); got != 61 {
		t.Fatalf("stored %d messages, want 61", got)
	}
	a, err := e.store.Active(ctx, "long")
	if err != nil {
		t.Fatal(err)
	}
	if a.Summary == 0 || a.Tokens > limit {
		t.Fatalf("active context: summary %d, %d tokens (limit %d)", a.Summary, a.Tokens, limit)
	}
	t.Logf("%d compactions applied; the largest upstream request held %d tokens (limit %d)", applied, maxTokens, limit)
}

// A request that would exceed the limit is compacted first, with reason emergency, before the
// upstream is called.
func TestEmergencyCompactionBeforeTheCall(t *testing.T) {
	t.Parallel()
	const limit = 2000
	e := newEnv(t, envOptions{limit: limit})
	ctx := context.Background()
	// A thread imported near its trigger (no compaction yet), then one large turn.
	var hist []chat.Message
	hist = append(hist, chat.TextMessage("system", "Be brief."))
	counter, _ := e.store.Counter(tokencount.EncodingO200k)
	for i := 0; counter.CountMessages(hist) < 1700; i++ {
		hist = append(hist, chat.TextMessage("user", fmt.Sprintf("note %d: %s", i, strings.Repeat("alpha beta gamma ", 10))),
			chat.TextMessage("assistant", fmt.Sprintf("ok %d", i)))
	}
	if _, err := e.store.Append(ctx, "big", hist, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	a, _ := e.store.Active(ctx, "big")
	if a.Tokens > limit {
		t.Fatalf("setup: %d tokens already over %d", a.Tokens, limit)
	}
	c := e.client("big", "k")
	_, err := c.CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "gpt-4o", Messages: []openai.ChatCompletionMessage{
		{Role: "user", Content: "now this: " + strings.Repeat("delta epsilon zeta ", 90)}}})
	if err != nil {
		t.Fatal(err)
	}
	if _, maxTokens := e.up.stats(); maxTokens > limit {
		t.Fatalf("the upstream got %d tokens, over %d", maxTokens, limit)
	}
	reps, err := e.store.Reports(ctx, "big", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) == 0 || reps[len(reps)-1].Reason != compact.ReasonEmergency || reps[len(reps)-1].Status != memory.StatusApplied {
		t.Fatalf("first compaction: %+v, want an applied emergency one", reps)
	}
}

// An agent that rewrites its conversation (an edited message, a regenerate, its own
// compaction) starts a new segment of the thread, the old one kept under the archive's name; a
// request that shares neither the thread's start nor its instructions is another conversation:
// a 409 naming the request's first message in the request's own numbering, never retried, and
// nothing is merged. The reset header starts the thread over in any case.
func TestRewrittenHistory(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	first := `{"model":"gpt-4o","messages":[{"role":"system","content":"S"},{"role":"user","content":"hello"}]}`
	if code, body, _ := e.post("/t/edit/v1/chat/completions", first); code != 200 {
		t.Fatalf("first turn: %d %s", code, body)
	}
	edited := `{"model":"gpt-4o","messages":[{"role":"system","content":"S"},{"role":"user","content":"HELLO?"},{"role":"assistant","content":"reply 1"},{"role":"user","content":"next"}]}`
	code, body, hdr := e.post("/t/edit/v1/chat/completions", edited)
	archive := hdr.Get(serve.ArchivedHeader)
	if code != 200 || !strings.HasPrefix(archive, "edit.segment-") {
		t.Fatalf("edited history: %d %s, archive %q", code, body, archive)
	}
	want := []string{"system: S", "user: HELLO?", "assistant: reply 1", "user: next", "assistant: reply 2"}
	if got := e.history("edit"); !slices.Equal(got, want) {
		t.Fatalf("the new segment:\n%s", strings.Join(got, "\n"))
	}
	if got, want := e.history(archive), []string{"system: S", "user: hello", "assistant: reply 1"}; !slices.Equal(got, want) {
		t.Fatalf("archive %s:\n%s", archive, strings.Join(got, "\n"))
	}

	// A regenerate: the same history without the last reply.
	regen := `{"model":"gpt-4o","messages":[{"role":"system","content":"S"},{"role":"user","content":"HELLO?"},{"role":"assistant","content":"reply 1"},{"role":"user","content":"next"}]}`
	if code, body, hdr := e.post("/t/edit/v1/chat/completions", regen); code != 200 || !strings.HasPrefix(hdr.Get(serve.ArchivedHeader), "edit.segment-") {
		t.Fatalf("regenerate: %d %s", code, body)
	}
	if got := e.history("edit"); len(got) != 5 || got[4] != "assistant: reply 3" || slices.Contains(got, "assistant: reply 2") {
		t.Fatalf("after the regenerate the last reply is the new one:\n%s", strings.Join(got, "\n"))
	}

	// Another conversation: other instructions, another first message.
	other := `{"model":"gpt-4o","messages":[{"role":"system","content":"T"},{"role":"user","content":"unrelated"},{"role":"assistant","content":"x"},{"role":"user","content":"y"}]}`
	before, _ := e.up.stats()
	code, body, hdr = e.post("/t/edit/v1/chat/completions", other)
	if code != 409 || errorCode(t, body) != "history_conflict" || hdr.Get("X-Should-Retry") != "false" ||
		!strings.Contains(body, "the request's messages[1] (user) differs from the thread's message seq 2") ||
		!strings.Contains(body, `"param":"messages[1]"`) {
		t.Fatalf("another conversation: %d %s %v", code, body, hdr)
	}
	if n, _ := e.up.stats(); n != before {
		t.Fatal("the conflicting request reached the upstream")
	}
	if got := e.history("edit"); len(got) != 5 || slices.Contains(got, "user: unrelated") {
		t.Fatalf("another conversation was merged:\n%s", strings.Join(got, "\n"))
	}

	code, body, hdr = e.post("/t/edit/v1/chat/completions", other, serve.ResetHeader, "1")
	if code != 200 || !strings.HasPrefix(hdr.Get(serve.ArchivedHeader), "edit.reset-") {
		t.Fatalf("reset: %d %s", code, body)
	}
	if got := e.history("edit"); len(got) != 5 || got[1] != "user: unrelated" {
		t.Fatalf("after reset:\n%s", strings.Join(got, "\n"))
	}
}

// Malformed requests get 400 (413, 415) in OpenAI's error shape, and reach no upstream.
func TestMalformedRequests(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{maxBody: 4096})
	cases := []struct {
		name, path, body, ctype string
		status                  int
		code                    string
	}{
		{"not json", "/t/a/v1/chat/completions", `{"model":`, "application/json", 400, "invalid_request"},
		{"no model", "/t/a/v1/chat/completions", `{"messages":[{"role":"user","content":"x"}]}`, "application/json", 400, "invalid_request"},
		{"no messages", "/t/a/v1/chat/completions", `{"model":"m"}`, "application/json", 400, "invalid_request"},
		{"empty messages", "/t/a/v1/chat/completions", `{"model":"m","messages":[]}`, "application/json", 400, "invalid_request"},
		{"message not an object", "/t/a/v1/chat/completions", `{"model":"m","messages":["hi"]}`, "application/json", 400, "invalid_request"},
		{"bad content type", "/t/a/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":5}]}`, "application/json", 400, "invalid_request"},
		{"unknown role", "/t/a/v1/chat/completions", `{"model":"m","messages":[{"role":"wizard","content":"x"}]}`, "application/json", 400, "invalid_message"},
		{"tool answers nothing", "/t/a/v1/chat/completions", `{"model":"m","messages":[{"role":"tool","tool_call_id":"c9","content":"x"}]}`, "application/json", 400, "invalid_message"},
		{"stream not a bool", "/t/a/v1/chat/completions", `{"model":"m","stream":"yes","messages":[{"role":"user","content":"x"}]}`, "application/json", 400, "invalid_request"},
		{"bad thread id", "/t/..bad/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "application/json", 400, "invalid_thread_id"},
		{"thread id too long", "/t/" + strings.Repeat("x", 129) + "/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "application/json", 400, "invalid_thread_id"},
		{"not JSON content type", "/t/a/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"x"}]}`, "text/plain", 415, "unsupported_media_type"},
		{"body too large", "/t/a/v1/chat/completions", `{"model":"m","messages":[{"role":"user","content":"` + strings.Repeat("x", 5000) + `"}]}`, "application/json", 413, "request_too_large"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := newRequest("POST", e.url+tc.path, tc.body)
			req.Header.Set("Content-Type", tc.ctype)
			code, body, _ := e.do(req)
			if code != tc.status || errorCode(t, body) != tc.code {
				t.Fatalf("%d %s, want %d with code %s", code, body, tc.status, tc.code)
			}
		})
	}
	if n, _ := e.up.stats(); n != 0 {
		t.Fatalf("%d malformed requests reached the upstream", n)
	}
	if _, err := e.store.Thread(context.Background(), "a"); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Fatalf("a malformed request created the thread: %v", err)
	}
}

// The upstream's errors reach the client with their status and body; the request's messages
// are kept, and the retry appends nothing twice.
func TestUpstreamErrorPassedThrough(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	const failBody = `{"error":{"message":"Rate limit reached","type":"requests","code":"rate_limit_exceeded"}}`
	e.up.set(func(u *upstream) { u.failStatus, u.failBody = 429, failBody })
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`
	code, got, _ := e.post("/t/err/v1/chat/completions", body)
	if code != 429 || got != failBody {
		t.Fatalf("%d %s", code, got)
	}
	e.up.mu.Lock()
	e.up.failStatus = 0
	e.up.mu.Unlock()
	if code, got, _ := e.post("/t/err/v1/chat/completions", body); code != 200 {
		t.Fatalf("retry: %d %s", code, got)
	}
	if got, want := e.history("err"), []string{"user: hi", "assistant: reply 2"}; !slices.Equal(got, want) {
		t.Fatalf("history %q, want %q", got, want)
	}
}

// A reply in flight when Shutdown starts is finished and stored.
func TestShutdownFinishesReplies(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	hold, got := make(chan struct{}), make(chan struct{}, 1)
	e.up.set(func(u *upstream) { u.hold, u.got = hold, got })
	type result struct {
		code int
		body string
	}
	res := make(chan result, 1)
	go func() {
		code, body, _ := e.post("/t/bye/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"last words"}]}`)
		res <- result{code, body}
	}()
	<-got // the request is at the upstream
	shut := make(chan error, 1)
	go func() { shut <- e.srv.Shutdown(context.Background()) }()
	close(hold)
	r := <-res
	if r.code != 200 || !strings.Contains(r.body, "reply 1") {
		t.Fatalf("in-flight reply: %d %s", r.code, r.body)
	}
	if err := <-shut; err != nil {
		t.Fatal(err)
	}
	if got, want := e.history("bye"), []string{"user: last words", "assistant: reply 1"}; !slices.Equal(got, want) {
		t.Fatalf("history %q, want %q", got, want)
	}
}
