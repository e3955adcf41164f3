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
	for _, provider := range []string{"remote", "offline"} {
		t.Run(provider, func(t *testing.T) {
			ctx := context.Background()
			s, _ := storetest.Open(t)
			msgs := []chat.Message{chat.TextMessage("system", "You are a deployment assistant.")}
			for i, ex := range exs {
				args, _ := json.Marshal(map[string]string{"input": ex.Text})
				call := chat.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{
					{ID: fmt.Sprintf("call_%d", i), Type: "function", Function: chat.FunctionCall{Name: "configure", Arguments: string(args)}}}}
				res := chat.TextMessage("tool", "saved:\n"+ex.Text)
				res.ToolCallID = fmt.Sprintf("call_%d", i)
				msgs = append(msgs, chat.TextMessage("user", "Use this: "+ex.Text), call, res)
			}
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
			var stored strings.Builder
			reps, err := s.Reports(ctx, "", 0)
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reps {
				full, err := s.Report(ctx, *r.ID)
				if err != nil {
					t.Fatal(err)
				}
				b, _ := json.Marshal(full)
				stored.Write(b)
			}
			for _, sp := range spans {
				b, _ := json.Marshal(sp.Facts)
				stored.Write(b)
				stored.WriteString(sp.Summary)
			}
			if rep.FromSeq > 2 || rep.ToSeq < int64(3*len(exs)+1) {
				t.Fatalf("compacted %d..%d, want every message with a secret (2..%d)", rep.FromSeq, rep.ToSeq, 3*len(exs)+1)
			}
			sent := strings.Join(rec.bodies, "\n")
			leaked, kept := 0, 0
			for _, ex := range exs {
				in := func(s string) bool {
					return strings.Contains(s, ex.Secret) || strings.Contains(s, jsonEscaped(ex.Secret))
				}
				if in(sent) {
					leaked++
					t.Errorf("gitleaks %s: a request carried %q (of %q)", ex.Rule, ex.Secret, ex.Text)
				}
				if in(stored.String()) {
					kept++
					t.Errorf("gitleaks %s: %q was stored in a summary, report or fact", ex.Rule, ex.Secret)
				}
			}
			t.Logf("%d of %d gitleaks secrets reached the provider, %d were stored", leaked, len(exs), kept)
		})
	}
}
