package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// secrets are twenty kinds of secret as they show up in agent conversations; the value after
// the comma is the part that must never leave the machine or reach a summary.
var secrets = [][2]string{
	{"OPENAI_API_KEY=sk-proj-Qx7Lm2Vb9Tz4Rk8Wc1Yd5Fh3Jn6Pg0Se2Ua7Ib4Oc9", "sk-proj-Qx7Lm2Vb9Tz4Rk8Wc1Yd5Fh3Jn6Pg0Se2Ua7Ib4Oc9"},
	{"export ANTHROPIC_API_KEY=sk-ant-api03-Zk4Pq8Wm2Xr6Tn1Yb5Vc9Hd3Jf7Lg0Ks4Ma8Qe2Ru6", "sk-ant-api03-Zk4Pq8Wm2Xr6Tn1Yb5Vc9Hd3Jf7Lg0Ks4Ma8Qe2Ru6"},
	{"git remote set-url origin https://ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12xy@github.com/acme/app", "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12xy"},
	{"token: github_pat_11AB2CD3E0fGh4IjK5lMn6_OpQr7StU8vWx9YzA0bCd1EfG2hIj3KlM4nOp5QrS6tUv7WxY8zA", "github_pat_11AB2CD3E0fGh4IjK5lMn6_OpQr7StU8vWx9YzA0bCd1EfG2hIj3KlM4nOp5QrS6tUv7WxY8zA"},
	{"CI uses glpat-Xy7Zq2Wv9Ut4Sr8Pq1No", "glpat-Xy7Zq2Wv9Ut4Sr8Pq1No"},
	{"SLACK_BOT_TOKEN=xoxb-204857391028-3948572019384-Kd8Ls2Mq7Np4Or1Ps6Qt3Ru9", "xoxb-204857391028-3948572019384-Kd8Ls2Mq7Np4Or1Ps6Qt3Ru9"},
	{"stripe.api_key = \"sk_live_51Hq8Zk2Lm9Np4Qr7St1Uv6Wx3Yz0Ab\"", "sk_live_51Hq8Zk2Lm9Np4Qr7St1Uv6Wx3Yz0Ab"},
	{"aws_access_key_id = AKIA2OGYBAH6ZQ3XK4PM", "AKIA2OGYBAH6ZQ3XK4PM"},
	{"aws_secret_access_key = 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", "wJa1rXUtnFEMI/K7MDENG/bPxRfiCYzQ8Kd93hQa"},
	{"maps key AIzaSyB7x2Kq9Lm4Np8Qr1St6Uv3Wx0Yz5Ab2Cd", "AIzaSyB7x2Kq9Lm4Np8Qr1St6Uv3Wx0Yz5Ab2Cd"},
	{"HF_TOKEN=hf_Vb3Nm7Kq2Lp9Wx4Zr8Ts1Yu6Io0Pa5Sd3Fg", "hf_Vb3Nm7Kq2Lp9Wx4Zr8Ts1Yu6Io0Pa5Sd3Fg"},
	{"SENDGRID=SG.Ab3Cd7Ef2Gh9Ij4Kl8Mn1Op.Qr6St3Uv0Wx7Yz2Ab5Cd9Ef4Gh1Ij8Kl3Mn6Op0", "SG.Ab3Cd7Ef2Gh9Ij4Kl8Mn1Op.Qr6St3Uv0Wx7Yz2Ab5Cd9Ef4Gh1Ij8Kl3Mn6Op0"},
	{"//registry.example.com/:_authToken=npm_Zq8Xw3Vc7Bn2Ml9Kj4Hg1Fd6Sa0Po5Iu3Yt", "npm_Zq8Xw3Vc7Bn2Ml9Kj4Hg1Fd6Sa0Po5Iu3Yt"},
	{"curl -H 'Authorization: Bearer 9f8e7d6c5b4a39281706f5e4d3c2b1a0fe9d8c7b' https://api.acme.dev/v1", "9f8e7d6c5b4a39281706f5e4d3c2b1a0fe9d8c7b"},
	{"session=eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiI4NzEyMzQiLCJyb2xlIjoiYWRtaW4ifQ.Xk2Lm9Np4Qr7St1Uv6Wx3Yz0AbCdEfGhIjKlMnOp", "eyJzdWIiOiI4NzEyMzQiLCJyb2xlIjoiYWRtaW4ifQ"},
	{"-----BEGIN RSA PRIVATE KEY-----\nMIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun\nVTLw7onLRnrq0/IzW7yWR7QkrmBL7jTKEn5u+qKhbwKfBstIs+bMY2Zkp18gnTxK\n-----END RSA PRIVATE KEY-----", "MIIEpAIBAAKCAQEAu1SU1LfVLPHCozMxH2Mo4lgOEePzNm0tRgeLezV6ffAt0gun"},
	{"db settings: password=Tr0ub4dor&3xyzQ", "Tr0ub4dor&3xyzQ"},
	{`{"api_key": "a7f3c9e1b5d2084f6e1a9c3b7d5f2e80"}`, "a7f3c9e1b5d2084f6e1a9c3b7d5f2e80"},
	{"DATABASE_URL=postgres://admin:S3cr3tP4ssw0rd@db.internal:5432/prod", "S3cr3tP4ssw0rd"},
	{"mongodb+srv://svc:hunter2Hunter2@cluster0.example.net/app", "hunter2Hunter2"},
	{`"client_secret": "GOCSPX-Lm4Np8Qr1St6Uv3Wx0Yz5Ab2Cd"`, "GOCSPX-Lm4Np8Qr1St6Uv3Wx0Yz5Ab2Cd"},
}

// recorder is an OpenAI chat completions server that records every request body and answers
// with a summary that quotes the first secret: a provider must not get a secret into a
// stored summary even by inventing it.
type recorder struct {
	mu     sync.Mutex
	bodies []string
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	b, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies = append(r.bodies, string(b))
	r.mu.Unlock()
	w.Header().Set("Content-Type", "application/json")
	text := "## Goal and constraints\nDeploy the app. The key " + secrets[0][1] + " was mentioned."
	fmt.Fprintf(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":%q},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":10,"total_tokens":20}}`, text)
}

func TestSecretsNeverLeave(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	msgs := []chat.Message{chat.TextMessage("system", "You are a deployment assistant.")}
	for i, sec := range secrets {
		switch i % 3 {
		case 0:
			msgs = append(msgs, chat.TextMessage("user", "Here is my config: "+sec[0]))
			msgs = append(msgs, chat.TextMessage("assistant", "Thanks, noted."))
		case 1:
			args, _ := json.Marshal(map[string]string{"command": sec[0]})
			msgs = append(msgs, chat.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{
				{ID: fmt.Sprintf("call_%d", i), Type: "function", Function: chat.FunctionCall{Name: "run_shell", Arguments: string(args)}}}})
			res := chat.TextMessage("tool", "ok")
			res.ToolCallID = fmt.Sprintf("call_%d", i)
			msgs = append(msgs, res)
		default:
			res := chat.TextMessage("tool", "$ cat .env\n"+sec[0]+"\nDONE")
			msgs = append(msgs, chat.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{
				{ID: fmt.Sprintf("call_%d", i), Type: "function", Function: chat.FunctionCall{Name: "read_file", Arguments: `{"path":".env"}`}}}})
			res.ToolCallID = fmt.Sprintf("call_%d", i)
			msgs = append(msgs, res)
		}
	}
	for i := range 6 { // recent turns that stay
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("recent question %d %s", i, strings.Repeat("word ", 40))))
	}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	rec := &recorder{}
	srv := httptest.NewServer(rec)
	defer srv.Close()
	a, _ := s.Active(ctx, "t")
	casc := cascade.New(s.DB(), cascade.Entry{Name: "remote", Type: "openai", Model: "m",
		Provider:      cascade.NewOpenAI(cascade.OpenAIConfig{Name: "remote", BaseURL: srv.URL + "/v1", Model: "m", Timeout: 5 * time.Second, MaxOutputTokens: 500}),
		ContextWindow: 100000, MaxOutputTokens: 500, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
	c := compact.New(s, casc, compact.Settings{TokenLimit: a.Tokens / 2, SummaryMaxTokens: 1500})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %+v, %v", rep, err)
	}
	if len(rec.bodies) == 0 {
		t.Fatal("the provider got no request")
	}
	if rep.SummarizedMessages < len(secrets) {
		t.Fatalf("only %d messages summarized: the secrets were not in the middle", rep.SummarizedMessages)
	}
	// Everything that left the machine, and everything stored outside the messages table:
	// every report with its summary and attempts, the attempt log, the cooldowns.
	var stored strings.Builder
	reps, err := s.Reports(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		full, err := s.Report(ctx, r.ID)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(full)
		stored.Write(b)
	}
	attempts, err := s.Attempts(ctx, "", 0)
	if err != nil {
		t.Fatal(err)
	}
	status, err := casc.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []any{attempts, status} {
		b, _ := json.Marshal(v)
		stored.Write(b)
	}
	repJSON, _ := json.Marshal(rep)
	for _, sec := range secrets {
		for i, body := range rec.bodies {
			if strings.Contains(body, sec[1]) || strings.Contains(body, jsonEscaped(sec[1])) {
				t.Errorf("request %d carried the secret %q", i, sec[1])
			}
		}
		if strings.Contains(stored.String(), sec[1]) || strings.Contains(string(repJSON), sec[1]) {
			t.Errorf("the secret %q was stored in a summary or report", sec[1])
		}
	}
	if !strings.Contains(rec.bodies[0], "[REDACTED:") {
		t.Fatal("the request shows no redaction marker: the secrets may not have been in it at all")
	}
	if !strings.Contains(*rep.Summary, "[REDACTED:") {
		t.Fatal("the provider's secret was not redacted from the stored summary")
	}
	// The originals stay as they were: they are the user's data.
	hist := exportAll(t, s, "t")
	if !strings.Contains(string(hist), secrets[0][1]) {
		t.Fatal("the original message lost its text")
	}
}

func jsonEscaped(s string) string {
	b, _ := json.Marshal(s)
	return strings.Trim(string(b), `"`)
}

// TestSecretCutByTrimNeverLeaves: a secret where a long tool result is trimmed for the
// summarizer is redacted whole first, so no piece of it is sent.
func TestSecretCutByTrimNeverLeaves(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	key := secrets[0][1]
	// The summarizer's input keeps the first two thirds of DefaultMaxResultBytes of a long
	// text: the cut falls 12 bytes into the key.
	head := compact.DefaultMaxResultBytes*2/3 - 12
	output := strings.Repeat("a", head-1) + " " + key + " " + strings.Repeat("b", 3000)
	call := chat.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{
		{ID: "c1", Type: "function", Function: chat.FunctionCall{Name: "cat", Arguments: `{"path":".env"}`}}}}
	res := chat.TextMessage("tool", output)
	res.ToolCallID = "c1"
	msgs := []chat.Message{chat.TextMessage("system", "sys"), chat.TextMessage("user", "show me the env file"), call, res}
	for i := range 4 {
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("later question %d", i)))
	}
	if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	fake := &cascade.Fake{Func: func(ctx context.Context, req llm.Request) (llm.Response, error) {
		return llm.Response{Text: "The user read the env file.", FinishReason: "stop"}, nil
	}}
	casc := cascade.New(s.DB(), cascade.Entry{Name: "f", Provider: fake, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
	a, _ := s.Active(ctx, "t")
	if _, err := compact.New(s, casc, compact.Settings{TokenLimit: a.Tokens / 2}).Compact(ctx, "t", compact.Options{Force: true}); err != nil {
		t.Fatal(err)
	}
	if len(fake.Calls()) == 0 {
		t.Fatal("no request")
	}
	for _, req := range fake.Calls() {
		for _, m := range req.Messages {
			if strings.Contains(m.Content, key[:12]) {
				t.Fatalf("a piece of the key (%q) was sent", key[:12])
			}
			if !strings.Contains(m.Content, "bytes trimmed") && m.Role == "user" {
				t.Fatal("the tool result was not trimmed: the test does not test the cut")
			}
		}
	}
}
