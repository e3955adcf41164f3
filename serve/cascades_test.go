package serve_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
	"github.com/memcascade/memcascade/tokencount"
)

// TestProxyUsesThreadCascade: the compaction the proxy runs before a request that would exceed
// the limit summarizes through the thread's cascade (memctl set --cascade), not the default one.
func TestProxyUsesThreadCascade(t *testing.T) {
	t.Parallel()
	const limit = 2000
	fake := func() *cascade.Fake {
		return &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) {
			return llm.Response{Text: "## Work done\nNotes were taken.", FinishReason: "stop", Model: "m"}, nil
		}}
	}
	def, named := fake(), fake()
	e := newEnv(t, envOptions{limit: limit, server: func(srv *serve.Server) {
		entry := func(name string, p *cascade.Fake) *cascade.Cascade {
			return cascade.NewWith(srv.Store.DB(), cascade.Options{Now: srv.Store.Now},
				cascade.Entry{Name: name, Type: "fake", Model: "m", Provider: p, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
		}
		srv.Compactor = compact.NewWith(srv.Store, entry("def", def), srv.Compactor.Settings,
			compact.Config{Summarizers: map[string]compact.Summarizer{"named": entry("named", named)}})
	}})
	ctx := context.Background()
	hist := []chat.Message{chat.TextMessage("system", "Be brief.")}
	counter, _ := e.store.Counter(tokencount.EncodingO200k)
	for i := 0; counter.CountMessages(hist) < 1700; i++ {
		hist = append(hist, chat.TextMessage("user", fmt.Sprintf("note %d: %s", i, strings.Repeat("alpha beta gamma ", 10))),
			chat.TextMessage("assistant", fmt.Sprintf("ok %d", i)))
	}
	if _, err := e.store.Append(ctx, "big", hist, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	if err := compact.SaveThreadSettings(ctx, e.store, "big", compact.ThreadSettings{Cascade: "named"}); err != nil {
		t.Fatal(err)
	}
	_, err := e.client("big", "k").CreateChatCompletion(ctx, openai.ChatCompletionRequest{Model: "gpt-4o", Messages: []openai.ChatCompletionMessage{
		{Role: "user", Content: "now this: " + strings.Repeat("delta epsilon zeta ", 90)}}})
	if err != nil {
		t.Fatal(err)
	}
	reps, err := e.store.Reports(ctx, "big", 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(reps) == 0 || reps[len(reps)-1].Status != memory.StatusApplied || reps[len(reps)-1].Provider != "named" {
		t.Fatalf("compactions: %+v; want one applied by the thread's cascade", reps)
	}
	if len(def.Calls()) != 0 || len(named.Calls()) == 0 {
		t.Fatalf("requests: the default cascade %d, the thread's %d; want 0 and at least 1", len(def.Calls()), len(named.Calls()))
	}
}
