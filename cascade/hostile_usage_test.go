package cascade_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
)

// TestUsageNegativeFromServerNotTrusted: a server whose usage says prompt_tokens -5 (with a
// positive completion count) must not make a compaction's cost negative: a count below zero
// is not a count, so the attempt is counted locally (estimated) or at least never below zero.
// Seen with memctl: 74 requests summed to "prompt_tokens": -370 in the report and in
// `memctl reports` (PROMPT+COMPLETION "-370+74000000000000").
func TestUsageNegativeFromServerNotTrusted(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	id := insertCompaction(t, sqldb)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"one two three"},"finish_reason":"stop"}],"usage":{"prompt_tokens":-5,"completion_tokens":3,"total_tokens":-2}}`)
	})
	c := cascade.NewWith(sqldb, cascade.Options{Count: func(s string) int { return len(strings.Fields(s)) }}, openAIEntry("srv", srv.URL))
	req := llm.Request{Messages: []llm.Message{{Role: "user", Content: "summarize this text"}}}
	if _, err := c.Complete(context.Background(), id, req); err != nil {
		t.Fatal(err)
	}
	got, err := compactionUsage(t, sqldb, id)
	if err != nil {
		t.Fatal(err)
	}
	if got.PromptTokens < 0 || got.CompletionTokens < 0 {
		t.Errorf("usage = %+v: a server's negative count was summed as is", got)
	}
}
