package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
)

// TestThreadHeldShown: a thread the breaker holds (compaction.max_failures failed compactions
// in a row) is marked held by the API, the list of threads and the thread's page; one that
// failed fewer times is not.
func TestThreadHeldShown(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{limit: 2000})
	ctx := context.Background()
	storetest.LongThread(t, e.store, "h", 20, 400)
	failing := compact.New(e.store, storetest.FailingCascade(e.store), e.srv.Compactor.Settings)
	held := func() bool {
		code, body, _ := e.get("/api/threads/h")
		var v serve.ThreadView
		if code != http.StatusOK || json.Unmarshal([]byte(body), &v) != nil {
			t.Fatalf("GET /api/threads/h: %d %s", code, body)
		}
		return v.Held
	}
	for i := range compact.DefaultMaxFailures {
		if held() {
			t.Fatalf("held after %d failures", i)
		}
		if rep, _ := failing.Compact(ctx, "h", compact.Options{Force: true}); rep.Status != memory.StatusFailed {
			t.Fatalf("compaction %d: %s, want failed", i+1, rep.Status)
		}
	}
	if !held() {
		t.Fatalf("not held after %d failures", compact.DefaultMaxFailures)
	}
	if _, body, _ := e.get("/"); !strings.Contains(body, "(held)") {
		t.Error("the list of threads does not mark the thread held")
	}
	if _, body, _ := e.get("/threads/h"); !strings.Contains(body, `id="held"`) {
		t.Error("the thread's page does not say it is held")
	}
}
