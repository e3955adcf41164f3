package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"
	"time"
)

// TestFallThroughToOffline: a first provider that rate-limits with Retry-After 120, or hangs,
// under the default attempts and timeouts (and a 6 s total budget for the hang), with the
// offline rung after it: `memctl compact` is applied by the offline rung, the first provider
// got one request; the rate-limited one is cooling down for at least the 120 s it asked, the
// hanging one, cut by the compaction's own budget, is not cooled (minCool 0).
func TestFallThroughToOffline(t *testing.T) {
	for _, tc := range []struct {
		name    string
		handler http.HandlerFunc
		extra   string
		minCool time.Duration
	}{
		{"429 Retry-After 120", func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Retry-After", "120")
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			fmt.Fprint(w, `{"error":{"message":"rate limited","type":"rate_limit_error"}}`)
		}, "", 119 * time.Second},
		{"hang, 6 s budget", func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body) // a server notices the client left only once the body is read
			<-r.Context().Done()
		}, "  total_timeout: 6s\n", 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var hits atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1); tc.handler(w, r) }))
			defer srv.Close()
			m := newMemctl(t)
			m.config = filepath.Join(m.dir, "memctl.yaml")
			cfg := fmt.Sprintf("compaction:\n  token_limit: 6000\n%scascade:\n  - name: local\n    base_url: %s/v1\n    model: m\n    context_window: 16000\n  - name: offline\n    type: extractive\n", tc.extra, srv.URL)
			if err := os.WriteFile(m.config, []byte(cfg), 0o600); err != nil {
				t.Fatal(err)
			}
			m.must("import", "t", conversationFiles(t)[0])
			start := time.Now()
			var rep struct{ Status, Provider string }
			if err := json.Unmarshal([]byte(m.must("compact", "t", "--force", "--json")), &rep); err != nil {
				t.Fatal(err)
			}
			if rep.Status != "applied" || rep.Provider != "offline" {
				t.Fatalf("compaction %s by %q, want applied by the offline rung: %+v", rep.Status, rep.Provider, rep)
			}
			if n := hits.Load(); n != 1 {
				t.Fatalf("the first provider got %d requests, want 1 (no retry after a long Retry-After or a hang)", n)
			}
			var provs []struct {
				Name         string
				CoolingUntil *time.Time `json:"cooling_until"`
			}
			if err := json.Unmarshal([]byte(m.must("providers", "--json")), &provs); err != nil {
				t.Fatal(err)
			}
			if tc.minCool == 0 && provs[0].CoolingUntil != nil {
				t.Fatalf("the first provider, cut by the compaction's budget, cools until %v", provs[0].CoolingUntil)
			}
			if tc.minCool > 0 && (provs[0].CoolingUntil == nil || provs[0].CoolingUntil.Sub(start) < tc.minCool) {
				t.Fatalf("the first provider cools until %v; want at least %s after the start", provs[0].CoolingUntil, tc.minCool)
			}
			t.Logf("%s: applied by the offline rung after %s", tc.name, time.Since(start).Round(time.Millisecond))
		})
	}
}
