package cascade_test

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/memory"
)

// TestCompactionUsage: the usage of a compaction counts the requests the servers received
// (skips excluded) and sums the tokens they reported; an error status carries no tokens and
// is not an estimate.
func TestCompactionUsage(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	id := insertCompaction(t, sqldb)
	var n atomic.Int64
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		if n.Add(1) == 1 {
			apiError(503, "", "", "busy")(w, r)
			return
		}
		reply("the summary")(w, r)
	})
	setCooldown(t, sqldb, "cooling", t0.Add(time.Hour), 1)
	h := newHarness(t, sqldb, fakeEntry("cooling", &cascade.Fake{}), openAIEntry("srv", srv.URL))
	if _, err := h.c.Complete(context.Background(), id, userReq); err != nil {
		t.Fatal(err)
	}
	got, err := compactionUsage(t, sqldb, id)
	if err != nil {
		t.Fatal(err)
	}
	want := memory.Usage{Requests: int(srv.hits.Load()), PromptTokens: 11, CompletionTokens: 7}
	if got != want || want.Requests != 2 {
		t.Errorf("usage = %+v, want %+v (2 requests: the 503 counts none)", got, want)
	}
}

// TestUsageCountedLocally: a server that sends no usage has its request and answer counted
// with the cascade's Count, and the usage is marked estimated; so is a request cut by a
// timeout (its prompt only). The sums equal the counts of what was sent and received.
func TestUsageCountedLocally(t *testing.T) {
	t.Parallel()
	sqldb, _ := openDB(t)
	id := insertCompaction(t, sqldb)
	srv := newServer(t, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprint(w, `{"id":"x","object":"chat.completion","created":1,"model":"m","choices":[{"index":0,"message":{"role":"assistant","content":"one two three"},"finish_reason":"stop"}]}`)
	})
	words := func(s string) int { return len(strings.Fields(s)) }
	c := cascade.NewWith(sqldb, cascade.Options{Count: words}, openAIEntry("srv", srv.URL))
	req := llm.Request{Messages: []llm.Message{{Role: "system", Content: "be brief"}, {Role: "user", Content: "summarize this text"}}}
	if _, err := c.Complete(context.Background(), id, req); err != nil {
		t.Fatal(err)
	}
	// 3 tokens of reply priming, 4 per message, and the words.
	wantPrompt, wantCompletion := 3+4+2+4+3, 3
	got, err := compactionUsage(t, sqldb, id)
	if err != nil {
		t.Fatal(err)
	}
	if want := (memory.Usage{Requests: 1, PromptTokens: wantPrompt, CompletionTokens: wantCompletion, Estimated: true}); got != want {
		t.Errorf("usage = %+v, want %+v", got, want)
	}
	rows, err := storeOn(t, sqldb).CompactionAttempts(context.Background(), id)
	if err != nil || len(rows) != 1 || !rows[0].UsageEstimated {
		t.Fatalf("attempts = %+v, %v: want one, marked usage_estimated", rows, err)
	}

	// A request cut by the attempt timeout: the server read the prompt; no answer.
	id2 := insertCompactionFor(t, sqldb, "t2")
	hang := newServer(t, func(w http.ResponseWriter, r *http.Request) { <-r.Context().Done() })
	c2 := cascade.NewWith(sqldb, cascade.Options{Count: words, AttemptTimeout: 300 * time.Millisecond},
		openAIEntry("hang", hang.URL, func(_ *cascade.OpenAIConfig, e *cascade.Entry) { e.MaxAttempts = 1 }))
	if _, err := c2.Complete(context.Background(), id2, req); err == nil {
		t.Fatal("a hanging server answered")
	}
	got, err = compactionUsage(t, sqldb, id2)
	if err != nil {
		t.Fatal(err)
	}
	if want := (memory.Usage{Requests: 1, PromptTokens: wantPrompt, Estimated: true}); got != want {
		t.Errorf("usage after a timeout = %+v, want %+v", got, want)
	}
}
