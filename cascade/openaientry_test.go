package cascade_test

import (
	"context"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
)

// TestOpenAIEntry: an entry built from the provider's config alone names the provider and
// model as the config does, and its provider answers through the cascade.
func TestOpenAIEntry(t *testing.T) {
	srv := newServer(t, reply("the summary"))
	e := cascade.OpenAIEntry(cascade.OpenAIConfig{Name: "local", BaseURL: srv.URL + "/v1", Model: "qwen2.5:7b", MaxOutputTokens: 256})
	if e.Name != "local" || e.Type != "openai" || e.Model != "qwen2.5:7b" || e.BaseURL != srv.URL+"/v1" || e.MaxOutputTokens != 256 {
		t.Fatalf("entry %+v", e)
	}
	h, _ := openDB(t)
	c := cascade.New(h, e)
	res, err := c.Complete(context.Background(), 0, llm.Request{MaxTokens: 100, Messages: []llm.Message{{Role: "user", Content: "summarize"}}})
	if err != nil || !strings.Contains(res.Text, "the summary") || res.Provider != "local" || srv.hits.Load() != 1 {
		t.Fatalf("%+v %v (%d requests)", res, err, srv.hits.Load())
	}
}
