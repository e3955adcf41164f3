package compact_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// TestReportUsage: a compaction's report says how many requests its providers received
// (a rate-limited one that fell through, and a small-window one that took several chunks),
// and the tokens: reported by one server, counted locally for the other (estimated). The
// list of reports shows the same usage.
func TestReportUsage(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, _ := storetest.Open(t)
	longRecordedThread(t, s, "t")
	var limitedHits, localHits atomic.Int64
	limited := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		limitedHits.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Retry-After", "120")
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusTooManyRequests)
		fmt.Fprint(w, `{"error":{"message":"rate limited","type":"rate_limit_error","param":null,"code":null}}`)
	}))
	defer limited.Close()
	local := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		localHits.Add(1)
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		// No usage object: a server that does not report it.
		b, _ := json.Marshal(map[string]any{"id": "x", "object": "chat.completion", "created": 1, "model": "small",
			"choices": []any{map[string]any{"index": 0, "finish_reason": "stop",
				"message": map[string]any{"role": "assistant", "content": "## Goal and constraints\nThe work went on as planned."}}}})
		w.Write(b)
	}))
	defer local.Close()
	entry := func(name, url string, window int) cascade.Entry {
		return cascade.Entry{Name: name, Type: "openai", Model: "small", ContextWindow: window, MaxOutputTokens: 512,
			MaxAttempts: 2, Cooldown: time.Second, MaxCooldown: time.Minute,
			Provider: cascade.NewOpenAI(cascade.OpenAIConfig{Name: name, BaseURL: url + "/v1", Model: "small", Timeout: 10 * time.Second})}
	}
	counter, err := s.Counter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	casc := cascade.NewWith(s.DB(), cascade.Options{Count: counter.CountText}, entry("hosted", limited.URL, 128000), entry("local", local.URL, 2048))
	c := compact.New(s, casc, compact.Settings{TokenLimit: 16000})
	rep, err := c.Compact(ctx, "t", compact.Options{Force: true})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %s, %v", rep.Status, err)
	}
	received := int(limitedHits.Load() + localHits.Load())
	if limitedHits.Load() != 1 || localHits.Load() < 3 {
		t.Fatalf("the servers received %d and %d requests; want 1 (fall-through) and several chunks", limitedHits.Load(), localHits.Load())
	}
	u := rep.Usage
	if u.Requests != received || rep.Requests != received {
		t.Errorf("usage.requests %d, requests %d; the servers received %d", u.Requests, rep.Requests, received)
	}
	if !u.Estimated || u.PromptTokens < 1000*int(localHits.Load()) || u.CompletionTokens < 5*int(localHits.Load()) {
		t.Errorf("usage %+v: want the local requests counted (over 1000 prompt tokens each) and marked estimated", u)
	}
	reps, err := s.Reports(ctx, "t", 1)
	if err != nil || len(reps) != 1 || reps[0].Usage != u {
		t.Errorf("reports: %+v, %v; want the usage %+v", reps, err, u)
	}
}
