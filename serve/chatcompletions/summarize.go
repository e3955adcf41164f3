package chatcompletions

import (
	"strings"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/serve/dialect"
)

// Summarizer is the upstream rung's completer in Chat Completions' shape: cascade's OpenAI
// provider (POST /chat/completions, not streamed, temperature 0, max_tokens or, for reasoning
// models, max_completion_tokens) at the upstream's base URL, with the key of the thread's
// latest turn as a bearer token (the configured key: Chat Completions forwards no agent's key).
func (Dialect) Summarizer(u dialect.SummaryUpstream) llm.Completer {
	key := strings.TrimSpace(strings.TrimPrefix(u.Header.Get("Authorization"), "Bearer "))
	cfg := cascade.OpenAIConfig{Name: u.Name, BaseURL: u.Base, Model: u.Model, HTTPClient: u.Client}
	if key != "" {
		cfg.APIKeyEnv = "the upstream key"
		cfg.Getenv = func(string) string { return key }
	}
	return cascade.NewOpenAI(cfg)
}
