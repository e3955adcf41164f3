package compact_test

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// gitleaksExample is one line of redact/testdata/gitleaks-secrets.jsonl: a text that one of
// gitleaks' rules finds a secret in (generated from the rule's expression by redact's tests).
type gitleaksExample struct {
	Rule, Text, Secret string
}

func readGitleaksCorpus(t *testing.T) []gitleaksExample {
	t.Helper()
	f, err := os.Open("../redact/testdata/gitleaks-secrets.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []gitleaksExample
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var ex gitleaksExample
		if err := json.Unmarshal(sc.Bytes(), &ex); err != nil {
			t.Fatalf("gitleaks-secrets.jsonl: %v", err)
		}
		out = append(out, ex)
	}
	if len(out) < 200 {
		t.Fatalf("gitleaks-secrets.jsonl: %d examples, want at least 200", len(out))
	}
	return out
}

// TestGitleaksSecretsNeverLeave: a secret made from each of gitleaks' rules, said by the user,
// passed in a tool call's arguments and returned by the tool, reaches neither a remote provider
// nor the stored summary, report or facts, with a remote and with the offline summarizer.
func TestGitleaksSecretsNeverLeave(t *testing.T) {
	t.Parallel()
	exs := readGitleaksCorpus(t)
	var msgs []chat.Message
	for i, ex := range exs {
		args, _ := json.Marshal(map[string]string{"input": ex.Text})
		call := chat.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{
			{ID: fmt.Sprintf("call_%d", i), Type: "function", Function: chat.FunctionCall{Name: "configure", Arguments: string(args)}}}}
		res := chat.TextMessage("tool", "saved:\n"+ex.Text)
		res.ToolCallID = fmt.Sprintf("call_%d", i)
		msgs = append(msgs, chat.TextMessage("user", "Use this: "+ex.Text), call, res)
	}
	secrets := make([][2]string, len(exs))
	for i, ex := range exs {
		secrets[i] = [2]string{ex.Rule, ex.Secret}
	}
	neverLeave(t, msgs, secrets)
}

// neverLeave compacts a thread of msgs (after a system message, before six recent questions)
// with a remote and with the offline summarizer, and fails for each secret (a name and its
// value) a request carried or a summary, report or fact stored.
func neverLeave(t *testing.T, conv []chat.Message, secrets [][2]string) {
	t.Helper()
	for _, provider := range []string{"remote", "offline"} {
		t.Run(provider, func(t *testing.T) {
			ctx := context.Background()
			s, _ := storetest.Open(t)
			msgs := append([]chat.Message{chat.TextMessage("system", "You are a deployment assistant.")}, conv...)
			for i := range 6 {
				msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("recent question %d %s", i, strings.Repeat("word ", 40))))
			}
			if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
				t.Fatal(err)
			}
			rec := &recorder{}
			srv := httptest.NewServer(rec)
			defer srv.Close()
			entry := cascade.Entry{Name: "offline", Type: "extractive", Provider: extractive.Summarizer{}, Offline: true,
				MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute}
			if provider == "remote" {
				entry = cascade.Entry{Name: "remote", Type: "openai", Model: "m",
					Provider:      cascade.NewOpenAI(cascade.OpenAIConfig{Name: "remote", BaseURL: srv.URL + "/v1", Model: "m", Timeout: 5 * time.Second, MaxOutputTokens: 500}),
					ContextWindow: 1000000, MaxOutputTokens: 500, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute}
			}
			casc := cascade.New(s.DB(), entry)
			a, _ := s.Active(ctx, "t")
			var spans []compact.Span
			c := compact.NewWith(s, casc, compact.Settings{TokenLimit: a.Tokens / 2, TargetRatio: 0.05, SummaryMaxTokens: 1500},
				compact.Config{OnSummarized: func(_ context.Context, sp compact.Span) error { spans = append(spans, sp); return nil }})
			rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if err != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("compact: %+v, %v", rep, err)
			}
			if provider == "remote" && len(rec.bodies) == 0 {
				t.Fatal("the provider got no request")
			}
			stored := storedText(t, s, spans)
			if rep.FromSeq > 2 || rep.ToSeq < int64(len(conv)+1) {
				t.Fatalf("compacted %d..%d, want every message with a secret (2..%d)", rep.FromSeq, rep.ToSeq, len(conv)+1)
			}
			sent := strings.Join(rec.bodies, "\n")
			leaked, kept := 0, 0
			for _, sec := range secrets {
				in := func(s string) bool {
					return strings.Contains(s, sec[1]) || strings.Contains(s, jsonEscaped(sec[1]))
				}
				if in(sent) {
					leaked++
					t.Errorf("%s: a request carried %q", sec[0], sec[1])
				}
				if in(stored.String()) {
					kept++
					t.Errorf("%s: %q was stored in a summary, report or fact", sec[0], sec[1])
				}
			}
			t.Logf("%d of %d secrets reached the provider, %d were stored", leaked, len(secrets), kept)
		})
	}
}

// TestEveryFieldNeverLeaves: a secret in each text field of a message (its name, a content
// part, a tool call's id, name and arguments, a tool result's tool_call_id), and the secrets
// only the conversation shows, reach neither a provider nor a summary, report or fact.
func TestEveryFieldNeverLeaves(t *testing.T) {
	t.Parallel()
	const token = "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12xy"
	parts, _ := json.Marshal([]map[string]string{{"type": "text", "text": "deploy notes"}, {"type": "text", "text": "db password=Lk9#Wq2Zr7Tb"}})
	call := chat.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{{ID: "call_glpat-Xy7Zq2Wv9Ut4Sr8Pq1No", Type: "function",
		Function: chat.FunctionCall{Name: "deploy_sk-ant-api03-Zk4Pq8Wm2Xr6Tn1Yb5Vc9Hd3Jf7Lg0Ks4Ma8Qe2Ru6", Arguments: `{"env":"prod","api_key":"Zx4Vb8Nm2Qw6Er1Ty5Ui"}`}}}}
	res := chat.TextMessage("tool", "deploy done")
	res.ToolCallID = "call_glpat-Xy7Zq2Wv9Ut4Sr8Pq1No"
	named := chat.TextMessage("user", "deploy the release")
	named.Name = "xoxb-2931847561-8273645102-Qk7Lm2Vb9Tz4Rk8Wc1Yd5Fh3"
	msgs := []chat.Message{
		chat.TextMessage("assistant", "Please type your password."),
		chat.TextMessage("user", "Qm4!Tz8Wr2Lp"),
		chat.TextMessage("user", "here is the token "+token[:17]),
		chat.TextMessage("user", token[17:]+" deploy"),
		{Role: "user", Content: parts},
		call, res, named,
	}
	neverLeave(t, msgs, [][2]string{{"reply", "Qm4!Tz8Wr2Lp"}, {"split token, first half", token[4:17]}, {"split token, second half", token[17:]},
		{"content part", "Lk9#Wq2Zr7Tb"}, {"arguments", "Zx4Vb8Nm2Qw6Er1Ty5Ui"}, {"tool call id and tool_call_id", "Xy7Zq2Wv9Ut4Sr8Pq1No"},
		{"tool name", "Zk4Pq8Wm2Xr6Tn1Yb5Vc9Hd3Jf7Lg0Ks4Ma8Qe2Ru6"}, {"message name", "Qk7Lm2Vb9Tz4Rk8Wc1Yd5Fh3"}})
}
