package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
)

// TestAutoWindowRefreshedAfterResplit: a provider with context_window auto whose cached window
// is wrong (its server restarted with a smaller n_ctx) gets a context_length answer. The
// summarizer re-splits and the compaction succeeds on that provider, but the README promises
// that the window is "asked again when the server answers that a request is too long": the
// cache must hold the server's new window afterwards. Seen with memctl: `memctl providers`
// kept "auto (3000)" for a server of 1,500 tokens, and every later compaction's first request
// was refused again with context_length (the cascade only forgets the window when a turn
// ends in context_length, and the summarizer's re-split hides it).
func TestAutoWindowRefreshedAfterResplit(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	var mu sync.Mutex
	window, refused := 3000, 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		win := window
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.Method + " " + r.URL.Path {
		case "GET /props":
			fmt.Fprintf(w, `{"default_generation_settings":{"n_ctx":%d},"total_slots":1}`, win)
		case "POST /v1/chat/completions":
			body, _ := io.ReadAll(r.Body)
			var req struct {
				MaxTokens int `json:"max_tokens"`
			}
			json.Unmarshal(body, &req)
			if len(body)/4+req.MaxTokens > win { // about 4 bytes a token
				mu.Lock()
				refused++
				mu.Unlock()
				w.WriteHeader(400)
				fmt.Fprintf(w, `{"error":{"message":"This model's maximum context length is %d tokens.","type":"invalid_request_error","code":"context_length_exceeded"}}`, win)
				return
			}
			fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"## Goal and constraints\nwork went on"},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":5,"total_tokens":15}}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)

	s, _ := storetest.Open(t)
	longRecordedThread(t, s, "a")
	longRecordedThread(t, s, "b")
	cfg := cascade.OpenAIConfig{Name: "local", BaseURL: srv.URL + "/v1", Model: "m", Timeout: 10 * time.Second, MaxOutputTokens: 256}
	e := cascade.Entry{Name: "local", Type: "openai", Model: "m", BaseURL: cfg.BaseURL, AutoWindow: true,
		MaxAttempts: 1, Cooldown: 30 * time.Second, MaxCooldown: time.Hour, Provider: cascade.NewOpenAI(cfg)}
	cas := cascade.New(s.DB(), e)
	c := compact.New(s, cas, compact.Settings{TokenLimit: 16000})
	if rep, err := c.Compact(ctx, "a", compact.Options{Force: true}); err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact a: %+v, %v", rep, err)
	}
	// The server restarts with a smaller window.
	mu.Lock()
	window = 1500
	mu.Unlock()
	rep, err := c.Compact(ctx, "b", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact b: %+v, %v", rep, err)
	}
	mu.Lock()
	n := refused
	mu.Unlock()
	if n == 0 {
		t.Fatal("no request was refused: the test did not exercise a wrong cached window")
	}
	st, err := cas.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st[0].ContextWindow != 1500 {
		t.Errorf("after %d context_length answers the cached window is %d, want the server's 1500", n, st[0].ContextWindow)
	}
}
