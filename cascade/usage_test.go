package cascade_test

import (
	"context"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
)

// TestCompactionUsage: the usage of a compaction counts the requests the servers received
// (skips excluded), sums the tokens they reported, and is marked estimated when a request
// got no usage back.
func TestCompactionUsage(t *testing.T) {
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
	got, err := cascade.CompactionUsage(context.Background(), sqldb, id)
	if err != nil {
		t.Fatal(err)
	}
	want := cascade.Usage{Requests: int(srv.hits.Load()), PromptTokens: 11, CompletionTokens: 7, Estimated: true}
	if got != want || want.Requests != 2 {
		t.Errorf("usage = %+v, want %+v (2 requests: the 503 has no usage)", got, want)
	}

	// Every request answered with usage: not estimated.
	id2 := insertCompactionFor(t, sqldb, "t2")
	if _, err := h.c.Complete(context.Background(), id2, userReq); err != nil {
		t.Fatal(err)
	}
	got, err = cascade.CompactionUsage(context.Background(), sqldb, id2)
	if err != nil {
		t.Fatal(err)
	}
	if want := (cascade.Usage{Requests: 1, PromptTokens: 11, CompletionTokens: 7}); got != want {
		t.Errorf("usage = %+v, want %+v", got, want)
	}
}
