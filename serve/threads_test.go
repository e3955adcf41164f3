package serve_test

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/serve"
)

// What the server keeps of its threads is bounded: the cached histories stay within
// CacheBytes however many threads it served, and a thread idle for CacheIdle is dropped.
func TestThreadStateBounded(t *testing.T) {
	t.Parallel()
	const budget = 64 << 10
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.CacheBytes, s.CacheIdle = budget, time.Hour }})
	e.up.set(func(u *upstream) {
		u.reply = func(int, []chat.Message) chat.Message { return chat.TextMessage("assistant", "ok") }
	})
	for i := 0; i < 40; i++ {
		thread := fmt.Sprintf("t%d", i)
		msgs := `{"role":"user","content":"` + strings.Repeat("x", 4000) + `"}`
		for turn := 1; turn <= 2; turn++ {
			if code, body, _ := e.post("/t/"+thread+"/v1/chat/completions", `{"model":"gpt-4o","messages":[`+msgs+`]}`); code != 200 {
				t.Fatalf("%s turn %d: %d %s", thread, turn, code, body)
			}
			msgs += `,{"role":"assistant","content":"ok"},{"role":"user","content":"` + strings.Repeat("y", 4000) + `"}`
		}
	}
	e.srv.WaitBackground()
	threads, cached := e.srv.Tracked()
	if cached > budget || threads > 20 {
		t.Fatalf("after 40 threads the server keeps %d threads and %d bytes of history, want at most %d bytes (and so few threads)", threads, cached, budget)
	}
	// Every thread's history is still whole: the cache only saves reads.
	if got := len(e.history("t0")); got != 4 {
		t.Fatalf("t0 holds %d messages, want 4", got)
	}
}

func TestIdleThreadsDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.CacheIdle = 2 * time.Second }})
	e.up.set(func(u *upstream) {
		u.reply = func(int, []chat.Message) chat.Message { return chat.TextMessage("assistant", "ok") }
	})
	turns := func(threads ...string) {
		for _, thread := range threads {
			for _, body := range []string{
				`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`,
				`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"ok"},{"role":"user","content":"again"}]}`,
			} {
				if code, out, _ := e.post("/t/"+thread+"/v1/chat/completions", body); code != 200 {
					t.Fatalf("%s: %d %s", thread, code, out)
				}
			}
		}
		e.srv.WaitBackground()
	}
	turns("a", "b", "c")
	if threads, _ := e.srv.Tracked(); threads != 3 {
		t.Fatalf("the server keeps %d threads, want the 3 it just served", threads)
	}
	time.Sleep(2500 * time.Millisecond)
	turns("d")
	if threads, _ := e.srv.Tracked(); threads != 1 {
		t.Fatalf("the server keeps %d threads, want 1: the three idle ones dropped", threads)
	}
}
