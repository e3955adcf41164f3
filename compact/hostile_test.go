package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// headerSecrets are secrets in shapes a header field can hold (letters, digits, _ and -): a
// message name, a tool call id, a function name.
var headerSecrets = []string{
	"ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12xy",
	"AKIA2OGYBAH6ZQ3XK4PM",
	"sk-proj-Qx7Lm2Vb9Tz4Rk8Wc1Yd5Fh3Jn6Pg0Se2Ua7Ib4Oc9",
	"hf_Vb3Nm7Kq2Lp9Wx4Zr8Ts1Yu6Io0Pa5Sd3Fg",
	"glpat-Xy7Zq2Wv9Ut4Sr8Pq1No",
	"npm_Zq8Xw3Vc7Bn2Ml9Kj4Hg1Fd6Sa0Po5Iu3Yt1", // npm_ and 36 characters
}

// hostileConversation is a generated agent conversation built to break the guarantees: long
// tool results, parallel calls, many ids, a user constraint, and a planted secret in every
// field (content, name, tool call id, function name, arguments, tool result, unknown key).
// It returns the messages and every secret planted.
func hostileConversation(r *rand.Rand, n int) ([]chat.Message, []string) {
	var planted []string
	body := func() string { s := secrets[r.IntN(len(secrets))]; planted = append(planted, s[1]); return s[0] }
	header := func() string { s := headerSecrets[r.IntN(len(headerSecrets))]; planted = append(planted, s); return s }
	id := func() string {
		return fmt.Sprintf("%c%c%c%d%c%c", 'A'+r.IntN(26), 'A'+r.IntN(26), 'A'+r.IntN(26), r.IntN(10), 'A'+r.IntN(26), 'A'+r.IntN(26))
	}
	msgs := []chat.Message{
		chat.TextMessage("system", "You are an operations agent."),
		chat.TextMessage("user", fmt.Sprintf("I must never be charged more than $%d, and only use account %s. %s", 100+r.IntN(900), id(), body())),
	}
	named := chat.TextMessage("user", "from the ops channel: "+body())
	named.Name = header()
	named.Extra = map[string]json.RawMessage{"x_debug_token": json.RawMessage(fmt.Sprintf("%q", header()))}
	msgs = append(msgs, named)
	calls := 0
	for len(msgs) < n {
		switch r.IntN(3) {
		case 0:
			msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("check order %s and %s please", id(), id())))
		case 1:
			msgs = append(msgs, chat.TextMessage("assistant", fmt.Sprintf("Order %s ships on 2024-06-%02d; %s", id(), 1+r.IntN(28), body())))
		default:
			m := chat.Message{Role: "assistant", Content: json.RawMessage("null")}
			for range 1 + r.IntN(3) {
				calls++
				callID := fmt.Sprintf("call_%d", calls)
				fn := "lookup_order"
				switch r.IntN(3) {
				case 0:
					callID = fmt.Sprintf("call_%d_%s", calls, header())
				case 1:
					fn = "fetch_" + header()
				}
				args, _ := json.Marshal(map[string]string{"order_id": id(), "auth": body()})
				m.ToolCalls = append(m.ToolCalls, chat.ToolCall{ID: callID, Type: "function", Function: chat.FunctionCall{Name: fn, Arguments: string(args)}})
			}
			msgs = append(msgs, m)
			for _, c := range r.Perm(len(m.ToolCalls)) {
				text := fmt.Sprintf(`{"order": %q, "status": "delivered", "log": %q}`, id(), body()+strings.Repeat(" row", r.IntN(2000)))
				res := chat.TextMessage("tool", text)
				res.ToolCallID = m.ToolCalls[c].ID
				msgs = append(msgs, res)
			}
		}
	}
	msgs = append(msgs, chat.TextMessage("user", "what is the status now?"))
	return msgs, planted
}

// TestPropertyHostileConversations: on generated conversations with secrets in every field,
// compacted through a remote provider (which even echoes a secret back) and the offline one,
// at several limits: no planted secret is in any request body, summary, report, error, attempt
// or progress line, and the facts guarantee holds. The default run keeps seeds 0 to 2 with
// both providers; -tags heavy runs seeds 0 to 5.
func TestPropertyHostileConversations(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	seeds := uint64(3)
	if storetest.Heavy {
		seeds = 6
	}
	for seed := range seeds {
		for _, prov := range []string{"remote", "offline"} {
			t.Run(fmt.Sprintf("seed%d/%s", seed, prov), func(t *testing.T) {
				t.Parallel()
				r := rand.New(rand.NewPCG(seed, 7))
				msgs, planted := hostileConversation(r, 40+r.IntN(60))
				s, _ := storetest.Open(t)
				if _, err := s.Append(ctx, "t", msgs, memory.AppendOptions{}); err != nil {
					t.Fatal(err)
				}
				rec := &recorder{}
				srv := httptest.NewServer(rec)
				defer srv.Close()
				var logMu sync.Mutex
				var logged strings.Builder
				observe := cascade.Options{Observe: func(e cascade.Event) { logMu.Lock(); fmt.Fprintf(&logged, "%+v\n", e); logMu.Unlock() }}
				casc := cascade.NewWith(s.DB(), observe, storetest.ExtractiveEntry(t, s))
				if prov == "remote" {
					casc = cascade.NewWith(s.DB(), observe, cascade.Entry{Name: "remote", Type: "openai", Model: "m",
						Provider:      cascade.NewOpenAI(cascade.OpenAIConfig{Name: "remote", BaseURL: srv.URL + "/v1", Model: "m", Timeout: 5 * time.Second, MaxOutputTokens: 800}),
						ContextWindow: 4096, MaxOutputTokens: 800, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
				}
				a, _ := s.Active(ctx, "t")
				for _, limit := range []int{a.Tokens / 2, a.Tokens / 5} {
					var spans []compact.Span
					c := compact.NewWith(s, casc, compact.Settings{TokenLimit: limit}, compact.Config{
						Progress:     func(p compact.Progress) { logMu.Lock(); fmt.Fprintf(&logged, "%+v\n", p); logMu.Unlock() },
						OnSummarized: func(_ context.Context, sp compact.Span) error { spans = append(spans, sp); return nil },
					})
					rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
					if err != nil {
						fmt.Fprintf(&logged, "%v\n", err)
					}
					if rep.Status == memory.StatusApplied {
						checkFactsGuarantee(t, s, "t", rep, spans)
					}
				}
				if prov == "remote" && len(rec.bodies) == 0 {
					t.Fatal("the provider got no request")
				}
				var out strings.Builder
				for _, b := range rec.bodies {
					out.WriteString(b)
				}
				reps, _ := s.Reports(ctx, "", 0)
				if len(reps) == 0 {
					t.Fatal("no compaction recorded")
				}
				for _, r := range reps {
					full, _ := s.Report(ctx, r.ID)
					b, _ := json.Marshal(full)
					out.Write(b)
				}
				attempts, _ := s.Attempts(ctx, "", 0)
				b, _ := json.Marshal(attempts)
				out.Write(b)
				active, _ := s.Active(ctx, "t")
				for _, m := range active.Entries {
					if m.CompactionID != 0 {
						out.WriteString(m.Message.Text()) // the summary in the active context
					}
				}
				out.WriteString(logged.String())
				all := out.String()
				for _, sec := range planted {
					if i := strings.Index(all, sec); i >= 0 || strings.Contains(all, jsonEscaped(sec)) {
						if i >= 0 {
							t.Logf("context: %q", all[max(0, i-200):min(len(all), i+80)])
						}
						t.Errorf("the planted secret %q left the machine or reached a summary, report, attempt or log", sec)
					}
				}
			})
		}
	}
}
