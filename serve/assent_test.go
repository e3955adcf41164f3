package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
)

// recording is answering's upstream that keeps the body of each request it answers.
func recording(t testing.TB) (*httptest.Server, func() [][]byte) {
	inner := answering(t)
	var mu sync.Mutex
	var bodies [][]byte
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		mu.Lock()
		bodies = append(bodies, b)
		mu.Unlock()
		r.Body = io.NopCloser(bytes.NewReader(b))
		inner.Config.Handler.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, func() [][]byte {
		mu.Lock()
		defer mu.Unlock()
		return bodies
	}
}

// A turn whose active context is its request's messages, as sent (the thread not compacted),
// is forwarded to the upstream as the agent sent it, byte for byte, turn after turn, in each
// dialect; once the thread is compacted, the upstream's request is rendered from the active
// context: the summary in place of the messages it holds.
func TestForwardedAsSent(t *testing.T) {
	t.Parallel()
	for _, sh := range turnShapes {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			up, bodies := recording(t)
			e := newEnv(t, envOptions{server: func(s *serve.Server) { s.Upstream = up.URL + "/v1" }})
			path := "/t/assent/v1" + sh.route
			var elems [][]byte
			add := func(role, text string) {
				el, _ := json.Marshal(map[string]string{"role": role, "content": text})
				elems = append(elems, el)
			}
			turn := func(n int) []byte {
				t.Helper()
				add("user", fmt.Sprintf("question %d: what does the log of run %d say? %s", n, n, strings.Repeat("The build failed in step three. ", 8)))
				body := sh.body(elems)
				code, out, _ := e.post(path, string(body))
				if code != http.StatusOK {
					t.Fatalf("turn %d: %d %s", n, code, out)
				}
				reply, ok := sh.reply([]byte(out))
				if !ok {
					t.Fatalf("turn %d: not a reply: %s", n, out)
				}
				add("assistant", reply)
				return body
			}
			for n := range 12 {
				body := turn(n)
				got := bodies()
				if len(got) != n+1 || !bytes.Equal(got[n], body) {
					t.Fatalf("turn %d: the upstream got %d bytes, not the request's %d as sent:\n got %.300s\nwant %.300s", n, len(got[n]), len(body), got[n], body)
				}
			}
			limit := 400
			rep, err := e.srv.Compactor.Compact(context.Background(), "assent", compact.Options{Force: true, Override: compact.ThreadSettings{TokenLimit: &limit}})
			if err != nil || rep.Status != memory.StatusApplied {
				t.Fatalf("compact: %s %v", rep.Status, err)
			}
			body := turn(12)
			got := bodies()
			if len(got) != 13 || len(got[12]) >= len(body) || !bytes.Contains(got[12], []byte("question 12")) {
				t.Fatalf("compacted: the upstream got %d bytes for a request of %d, want the active context rendered, smaller:\n%.300s", len(got[12]), len(body), got[12])
			}
		})
	}
}
