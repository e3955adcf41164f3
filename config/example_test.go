package config_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/db"
	"github.com/memcascade/memcascade/memory"
)

// The README's quick start: the program opens the database and builds on it the store and, from
// a config, the compactor and its cascade, with one redactor. The config's own pattern (an
// internal badge number) is redacted in what the provider receives, as the built-in ones are.
func ExampleConfig_NewCompactor() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "memcascade")
	defer os.RemoveAll(dir)
	provider := newRecordingProvider() // stands for an OpenAI-compatible server
	defer provider.Close()

	cfg, err := config.Parse([]byte(`
redact_patterns: ['ACME-[0-9]{6}']
compaction: {token_limit: 1000, reserve_tokens: 0}
cascade:
  - name: remote
    base_url: `+provider.URL+`/v1
    model: m
`), "memcascade.yaml")
	if err != nil {
		log.Fatal(err)
	}
	h, err := db.OpenHandle(ctx, filepath.Join(dir, "agent.db"), db.Options{}) // threads, cooldowns, attempt log
	if err != nil {
		log.Fatal(err)
	}
	defer h.Close()
	store, err := memory.New(ctx, h, memory.Options{})
	if err != nil {
		log.Fatal(err)
	}
	defer store.Close()
	msgs := []chat.Message{chat.TextMessage(chat.RoleSystem, "You are a helpful support agent.")}
	for i := range 20 {
		msgs = append(msgs,
			chat.TextMessage(chat.RoleUser, fmt.Sprintf("Question %d: my badge ACME-12345%d does not open door %d.", i, i, i)),
			chat.TextMessage(chat.RoleAssistant, fmt.Sprintf("I reset door %d for you.", i)))
	}
	if _, err := store.Append(ctx, "support-42", msgs, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		log.Fatal(err)
	}

	// The cascade on h and the store's clock, and one redactor, from the config.
	compactor, _, err := cfg.NewCompactor(h, store, cascade.Options{}, compact.Config{})
	if err != nil {
		log.Fatal(err)
	}
	report, err := compactor.Compact(ctx, "support-42", compact.Options{Force: true})
	if err != nil {
		log.Fatal(err)
	}
	sent := provider.Received()
	fmt.Println("status:", report.Status)
	fmt.Println("badge sent:", strings.Contains(sent, "ACME-123450"))
	fmt.Println("marker sent:", strings.Contains(sent, "[REDACTED:custom]"))
	// Output:
	// status: applied
	// badge sent: false
	// marker sent: true
}

// recordingProvider is an OpenAI chat completions server that keeps every request body.
type recordingProvider struct {
	*httptest.Server
	mu     sync.Mutex
	bodies strings.Builder
}

func newRecordingProvider() *recordingProvider {
	p := &recordingProvider{}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		p.mu.Lock()
		p.bodies.Write(b)
		p.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"The user asked about doors; each was reset."},"finish_reason":"stop"}],"usage":{"prompt_tokens":10,"completion_tokens":10,"total_tokens":20}}`)
	}))
	return p
}

// Received returns every request body the provider got.
func (p *recordingProvider) Received() string {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.bodies.String()
}
