package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/mcpserver"
	"github.com/memcascade/memcascade/serve"
	"github.com/memcascade/memcascade/tokencount"
)

// trustTurns is the length of TestTrustLife; the 50 MB message comes near its end, so that the
// client resends it only a few times.
const (
	trustTurns  = 200
	trustWindow = 6000 // the model's real window; its /v1/models says four times that
	hugeTurn    = trustTurns - 6
	hugeBytes   = 50 << 20
)

// secretGen makes secrets that look like real ones: random letters and digits.
type secretGen struct{ r *rand.Rand }

func (g secretGen) alnum(n int) string {
	const set = "abcdefghijkmnopqrstuvwxyzABCDEFGHJKLMNPQRSTUVWXYZ23456789"
	b := make([]byte, n)
	for i := range b {
		b[i] = set[g.r.IntN(len(set))]
	}
	return string(b)
}

// trustSummarizer is an OpenAI-compatible summarizing provider that records what it is sent
// and answers with the start of it, so that a secret it saw would also reach the summary.
type trustSummarizer struct {
	mu     sync.Mutex
	bodies []string
}

func (p *trustSummarizer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	b, _ := io.ReadAll(r.Body)
	p.mu.Lock()
	p.bodies = append(p.bodies, string(b))
	p.mu.Unlock()
	var req struct {
		Messages []chat.Message `json:"messages"`
	}
	json.Unmarshal(b, &req)
	text := ""
	if len(req.Messages) > 0 {
		text = req.Messages[len(req.Messages)-1].Text()
	}
	text = "Summary of the conversation so far: " + text[:min(len(text), 1500)]
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{"id": "s", "object": "chat.completion", "model": "m",
		"choices": []any{map[string]any{"index": 0, "message": map[string]any{"role": "assistant", "content": text}, "finish_reason": "stop"}},
		"usage":   map[string]int{"prompt_tokens": 100, "completion_tokens": 100, "total_tokens": 200}})
}

// TestTrustLife: a 200-turn life through serve of an agent whose system prompt changes every
// turn, in front of a model whose /v1/models reports four times its real window, with secrets in
// every field and place (a content part, a tool call's arguments, a message's name, a password
// typed after the model asks for it, a token split across two messages, and a 50 MB tool result
// that holds two), and a summarizing provider besides the offline rung. The agent never gets an
// error; every request the model gets is within its real window and has the day's prompt first
// and alone; no secret reaches the summarizing provider, a stored summary or report, a
// memory_search or memory_read answer or the thread's page; memory_read cuts the 50 MB message
// within its bound; the database checks clean.
func TestTrustLife(t *testing.T) {
	if testing.Short() {
		t.Skip("a 200-turn life with a 50 MB message: the full run has it")
	}
	t.Parallel()
	ctx := context.Background()
	sum := &trustSummarizer{}
	sumSrv := httptest.NewServer(sum)
	defer sumSrv.Close()
	e := newEnv(t, envOptions{auto: true, maxBody: 128 << 20, server: func(srv *serve.Server) {
		cfg := config.Default()
		cfg.Cascade = []config.Provider{{Name: "remote", BaseURL: sumSrv.URL + "/v1", Model: "m"}}
		counter, err := srv.Store.Counter(tokencount.EncodingO200k)
		if err != nil {
			t.Fatal(err)
		}
		c, casc, err := cfg.NewCompactor(srv.Store.DB(), srv.Store, cascade.Options{Count: counter.CountText}, compact.Config{})
		if err != nil {
			t.Fatal(err)
		}
		srv.Compactor, srv.Cascade = c, casc
	}})
	g := secretGen{rand.New(rand.NewPCG(37, 200))}
	var secrets []string
	keep := func(s string) string { secrets = append(secrets, s); return s }

	// The model: it asks for a password, calls deploy with a key, or reads a log, by turn.
	var (
		mu          sync.Mutex
		day         int
		badPrompt   []string
		apiKeys     = map[int]string{}
		passwordAsk = func(turn int) bool { return turn%6 == 3 }
	)
	for turn := range trustTurns {
		if turn%6 == 1 {
			apiKeys[turn] = keep(g.alnum(24))
		}
	}
	e.up.set(func(u *upstream) {
		u.window = trustWindow
		u.models = fmt.Sprintf(`{"object":"list","data":[{"id":"gpt-4o","object":"model","max_model_len":%d}]}`, 4*trustWindow)
		u.reply = func(n int, msgs []chat.Message) chat.Message {
			mu.Lock()
			defer mu.Unlock()
			want := fmt.Sprintf("You are the release agent. Today is day %d.", day)
			systems := 0
			for _, m := range msgs {
				if m.Role == chat.RoleSystem && strings.HasPrefix(m.Text(), "You are the release agent. Today is day") {
					systems++
				}
			}
			if msgs[0].Role != chat.RoleSystem || msgs[0].Text() != want || systems != 1 { // a summary may quote older days
				badPrompt = append(badPrompt, fmt.Sprintf("request %d (day %d): first %s %.60q, %d day prompts", n, day, msgs[0].Role, msgs[0].Text(), systems))
			}
			last := msgs[len(msgs)-1]
			switch {
			case last.Role == chat.RoleTool:
				return chat.TextMessage(chat.RoleAssistant, fmt.Sprintf("Done for day %d.", day))
			case passwordAsk(day) && !strings.HasPrefix(last.Text(), "Qm"):
				return chat.TextMessage(chat.RoleAssistant, "Please type your password.")
			case apiKeys[day] != "":
				m := chat.Message{Role: chat.RoleAssistant, Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{{ID: fmt.Sprintf("call_%d", day), Type: "function",
					Function: chat.FunctionCall{Name: "deploy", Arguments: fmt.Sprintf(`{"env":"prod","release":"R%d","api_key":"%s"}`, day, apiKeys[day])}}}}
				return m
			case day == hugeTurn:
				return chat.Message{Role: chat.RoleAssistant, Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{{ID: "call_log", Type: "function",
					Function: chat.FunctionCall{Name: "read_log", Arguments: `{"file":"build.log"}`}}}}
			}
			return chat.TextMessage(chat.RoleAssistant, fmt.Sprintf("Noted for day %d: release R%d is on track.", day, day))
		}
	})

	var conv []chat.Message // what the agent resends each turn, after its system prompt
	post := func(turn int) chat.Message {
		t.Helper()
		mu.Lock()
		day = turn
		mu.Unlock()
		body := turnBody(t, append([]chat.Message{chat.TextMessage(chat.RoleSystem, fmt.Sprintf("You are the release agent. Today is day %d.", turn))}, conv...))
		code, resp, _ := e.post("/t/life/v1/chat/completions", body)
		if code != http.StatusOK {
			t.Fatalf("turn %d: %d %.300s", turn, code, resp)
		}
		reply := replyOf(t, resp)
		conv = append(conv, reply)
		return reply
	}
	for turn := range trustTurns {
		var user []chat.Message
		switch turn % 6 {
		case 0: // a secret in a content part
			parts, _ := json.Marshal([]map[string]string{{"type": "text", "text": fmt.Sprintf("release notes for day %d", turn)},
				{"type": "text", "text": "db password=" + keep(g.alnum(14))}})
			user = []chat.Message{{Role: chat.RoleUser, Content: parts}}
		case 2: // a secret as a message's name
			m := chat.TextMessage(chat.RoleUser, fmt.Sprintf("ship release R%d", turn))
			m.Name = "xoxb-" + fmt.Sprint(1000000000+g.r.IntN(1e9)) + "-" + fmt.Sprint(1000000000+g.r.IntN(1e9)) + "-" + keep(g.alnum(24))
			user = []chat.Message{m}
		case 4: // a token split across two messages
			tok := "ghp_" + g.alnum(36)
			keep(tok[4:18])
			keep(tok[18:])
			user = []chat.Message{chat.TextMessage(chat.RoleUser, "here is the token "+tok[:18]), chat.TextMessage(chat.RoleUser, tok[18:]+" for the deploy")}
		default:
			user = []chat.Message{chat.TextMessage(chat.RoleUser, fmt.Sprintf("What is the status of release R%d?", turn))}
		}
		conv = append(conv, user...)
		reply := post(turn)
		switch {
		case reply.Text() == "Please type your password.":
			conv = append(conv, chat.TextMessage(chat.RoleUser, "Qm"+keep(g.alnum(12))))
			post(turn)
		case len(reply.ToolCalls) == 1 && reply.ToolCalls[0].Function.Name == "read_log":
			logText := hugeLog(keep("db password="+g.alnum(16)), keep("AKIA"+strings.ToUpper(g.alnum(16))))
			conv = append(conv, chat.ToolResult("call_log", logText))
			post(turn)
		case len(reply.ToolCalls) == 1:
			conv = append(conv, chat.ToolResult(reply.ToolCalls[0].ID, "deployed"))
			post(turn)
		}
	}
	e.srv.WaitBackground()

	if len(badPrompt) > 0 {
		t.Errorf("%d requests without the day's prompt first and alone, the first: %s", len(badPrompt), badPrompt[0])
	}
	requests, maxTokens := e.up.stats()
	refused := 0
	e.up.set(func(u *upstream) { refused = u.refused })
	if maxTokens > trustWindow {
		t.Errorf("the model got a request of %d tokens, over its window of %d", maxTokens, trustWindow)
	}
	reps, err := e.store.Reports(ctx, "life", 10000)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("%d turns, %d requests answered (largest %d tokens of %d), %d refused and retried, %d compactions, %d summarizer requests",
		trustTurns, requests, maxTokens, trustWindow, refused, len(reps), len(sum.bodies))
	if len(sum.bodies) == 0 || len(reps) == 0 {
		t.Fatalf("no summarizer request (%d) or no compaction (%d): the life proves nothing", len(sum.bodies), len(reps))
	}

	leaks := map[string]int{}
	look := func(where, text string) {
		for _, s := range secrets {
			if strings.Contains(text, s) || strings.Contains(text, html.EscapeString(s)) {
				leaks[where]++
				if leaks[where] == 1 {
					t.Errorf("%s shows the secret %q", where, s)
				}
			}
		}
	}
	for _, b := range sum.bodies {
		look("a summarizer request", b)
	}
	repJSON, _ := json.Marshal(reps)
	look("the stored reports", string(repJSON))
	_, page, _ := e.get("/threads/life")
	look("the thread's page", page)

	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
		&mcp.StreamableClientTransport{Endpoint: e.url + "/mcp?thread=life"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	tool := func(name string, args map[string]any) string {
		t.Helper()
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: name, Arguments: args})
		if err != nil || res.IsError {
			t.Fatalf("%s %v: %v %+v", name, args, err, res)
		}
		b, _ := json.Marshal(res)
		return string(b)
	}
	for _, q := range []string{"password", "token", "deploy", "release", "db", "api_key", "log"} {
		look("memory_search", tool(mcpserver.ToolSearch, map[string]any{"query": q, "limit": 100}))
	}
	hist, err := e.store.History(ctx, "life")
	if err != nil {
		t.Fatal(err)
	}
	largest := 0
	for from := int64(1); from <= int64(len(hist)); {
		out := tool(mcpserver.ToolRead, map[string]any{"from_seq": from, "to_seq": len(hist)})
		largest = max(largest, len(out))
		look("memory_read", out)
		var res struct {
			StructuredContent mcpserver.ReadOutput `json:"structuredContent"`
		}
		if err := json.Unmarshal([]byte(out), &res); err != nil || len(res.StructuredContent.Messages) == 0 {
			t.Fatalf("memory_read from %d: %v %.300s", from, err, out)
		}
		msgs := res.StructuredContent.Messages
		from = msgs[len(msgs)-1].Seq + 1
	}
	if largest > 8*mcpserver.DefaultReadTokens*4 { // a few times the bound, in bytes (4 bytes a token)
		t.Errorf("the largest memory_read answer is %d bytes, over a few times its bound of %d tokens", largest, mcpserver.DefaultReadTokens)
	}
	t.Logf("memory_read: %d messages read, the largest answer %d bytes", len(hist), largest)
	if err := e.store.DB().Check(ctx); err != nil {
		t.Errorf("check: %v", err)
	}
}

// hugeLog is a build log of hugeBytes holding the two secrets, one near each end.
func hugeLog(first, last string) string {
	var b strings.Builder
	b.Grow(hugeBytes + 200)
	b.WriteString("build started\n" + first + "\n")
	for i := 0; b.Len() < hugeBytes; i++ {
		fmt.Fprintf(&b, "step %d: compiled package %d of the release in %d ms\n", i, i%997, i%313)
	}
	b.WriteString(last + "\nbuild finished\n")
	return b.String()
}
