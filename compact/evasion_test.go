package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
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

// evasions are secrets written so that a pattern reading the bytes as they are misses them;
// the second value must never leave the machine nor reach a summary, report or fact.
var evasions = [][2]string{
	{`{"\u0070assword":"Xy8#pQ3rT6vW"}`, "Xy8#pQ3rT6vW"},                                                          // a JSON escape in the key
	{"OPENAI_API_KEY=sk-proj-Qx7Lm2Vb9Tz4\u200bRk8Wc1Yd5Fh3Jn6Pg0Se2Ua7Ib4Oc9", "Rk8Wc1Yd5Fh3Jn6Pg0Se2Ua7Ib4Oc9"}, // a zero-width space inside
	{"p&#97;ssword=Vq3#Lm8Zt2Wx", "Vq3#Lm8Zt2Wx"},                                                                 // an HTML entity in the label
	{"раssword: Hd7!Kp2Qz9Ry", "Hd7!Kp2Qz9Ry"},                                                                    // a Cyrillic р in the label
	{"ｐａｓｓｗｏｒｄ＝Nf4$Tb8Wq1Zs", "Nf4$Tb8Wq1Zs"},                                                                     // full-width label and sign
	{"api\u00a0key: sk-Wm4Xp8", "sk-Wm4Xp8"},                                                                      // a no-break space inside the key name
	{"ACCESS\u202fTOKEN = Zr5Kx2Wm9Lp4", "Zr5Kx2Wm9Lp4"},                                                          // a narrow no-break space
	{"https://app.example.com/login?next=%2Fhome&password%3DJr5%25Yc2Mv7Xk", "Jr5"},                               // percent-encoded
	{"CONFIG_B64=T1BFTkFJX0FQSV9LRVk9c2stcHJvai1NdjNMcThadDJXeDdSazRQYjlOYzFZZDZGaDBKZzVTZThVYTJJYjdPYzM=", "T1BFTkFJX0FQSV9LRVk9c2stcHJvai1NdjNMcThadDJXeDdSazRQYjlOYzFZZDZGaDBKZzVTZThVYTJJYjdPYzM"}, // base64 of a key of a known shape
	{"blob 6768705f5a71384c6d33566237547832526b365763395964344668314a6e35506738536533556130 end", "6768705f5a71384c6d33566237547832526b365763395964344668314a6e35506738536533556130"},                  // hex of a GitHub token
}

// Secrets that only the sequence of messages shows: the pieces of each must never leave.
const splitToken = "ghp_R4nD0mT0k3nV4lu3F0rT3st1ngAbCdEf12xy"

func conversationEvasions() (msgs []chat.Message, pieces []string) {
	parts, _ := json.Marshal([]map[string]string{{"type": "text", "text": "second token: gho_Zq8Lm3Vb7Tx"}, {"type": "text", "text": "2Rk6Wc9Yd4Fh1Jn5Pg8Se3Ua0Ib2"}})
	msgs = []chat.Message{
		chat.TextMessage("assistant", "Please type your password."),
		chat.TextMessage("user", "Qm4!Tz8Wr2Lp"), // a bare reply
		chat.TextMessage("user", "here is the token: "+splitToken[:17]),
		chat.TextMessage("user", splitToken[17:]+" thanks"), // split over two messages
		{Role: "user", Content: parts},                      // split over two content parts
	}
	return msgs, []string{"Qm4!Tz8Wr2Lp", splitToken[4:17], splitToken[17:], "Zq8Lm3Vb7Tx", "2Rk6Wc9Yd4Fh1Jn5Pg8Se3Ua0Ib2"}
}

// TestEvasionsNeverLeave: secrets hidden by an escape, an entity, an invisible or full-width
// character, a look-alike letter or percent-encoding, in a tool call's arguments, its result
// and user text, reach neither a remote provider nor the stored summary, report or facts (the
// ledger decodes the arguments' JSON from the redacted text). The original messages keep them.
func TestEvasionsNeverLeave(t *testing.T) {
	t.Parallel()
	for _, provider := range []string{"remote", "offline"} {
		t.Run(provider, func(t *testing.T) {
			ctx := context.Background()
			s, _ := storetest.Open(t)
			msgs := []chat.Message{chat.TextMessage("system", "You are a deployment assistant.")}
			for i, ev := range evasions {
				call := chat.Message{Role: "assistant", Content: json.RawMessage("null"), ToolCalls: []chat.ToolCall{
					{ID: fmt.Sprintf("call_%d", i), Type: "function", Function: chat.FunctionCall{Name: "login", Arguments: ev[0]}}}}
				res := chat.TextMessage("tool", "ok: "+ev[0])
				res.ToolCallID = fmt.Sprintf("call_%d", i)
				msgs = append(msgs, chat.TextMessage("user", "Use this: "+ev[0]), call, res)
			}
			conv, pieces := conversationEvasions()
			msgs = append(msgs, conv...)
			// An ordinary reply to an ordinary question is sent as it is.
			msgs = append(msgs, chat.TextMessage("assistant", "What is your reservation id?"), chat.TextMessage("user", "BK-2026-118734"))
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
					ContextWindow: 100000, MaxOutputTokens: 500, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute}
			}
			casc := cascade.New(s.DB(), entry)
			a, _ := s.Active(ctx, "t")
			var spans []compact.Span
			c := compact.NewWith(s, casc, compact.Settings{TokenLimit: a.Tokens / 2, SummaryMaxTokens: 1500}, compact.Config{OnSummarized: func(_ context.Context, sp compact.Span) error { spans = append(spans, sp); return nil }})
			rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
			if err != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("compact: %+v, %v", rep, err)
			}
			if provider == "remote" && len(rec.bodies) == 0 {
				t.Fatal("the provider got no request")
			}
			stored := storedText(t, s, spans)
			active, _ := s.Active(ctx, "t")
			b, _ := json.Marshal(active.Messages())
			stored.Write(b)
			if !strings.Contains(stored.String(), "[REDACTED:") {
				t.Fatal("nothing stored shows a marker: the secrets may not have been summarized at all")
			}
			for _, p := range pieces {
				for i, body := range rec.bodies {
					if strings.Contains(body, p) || strings.Contains(body, jsonEscaped(p)) {
						t.Errorf("request %d carried %q", i, p)
					}
				}
				if strings.Contains(stored.String(), p) || strings.Contains(stored.String(), jsonEscaped(p)) {
					t.Errorf("%q was stored in a summary, report or fact", p)
				}
			}
			if provider == "remote" && !strings.Contains(strings.Join(rec.bodies, ""), "BK-2026-118734") {
				t.Error("the booking id given in reply to a question was not sent")
			}
			for _, ev := range evasions {
				for i, body := range rec.bodies {
					if strings.Contains(body, ev[1]) || strings.Contains(body, jsonEscaped(ev[1])) {
						t.Errorf("request %d carried the secret %q of %q", i, ev[1], ev[0])
					}
				}
				if strings.Contains(stored.String(), ev[1]) || strings.Contains(stored.String(), jsonEscaped(ev[1])) {
					t.Errorf("the secret %q of %q was stored in a summary, report or fact", ev[1], ev[0])
				}
			}
			if hist := string(exportAll(t, s, "t")); !strings.Contains(hist, jsonEscaped(evasions[0][0])) {
				t.Fatal("the original message lost its text")
			}
		})
	}
}
