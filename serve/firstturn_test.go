package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/serve"
)

// TestFirstTurnRoundTrips pins what a thread's first turn costs on PostgreSQL, counted at the
// wire (testdb.Proxy): the thread not found by one query, its creation with its messages and
// the window its fit records (its settings) in one append of four round trips (the kept state
// made from what the append wrote, not read back), and the reply's append of two; a turn of a
// thread kept costs its two appends (a reply's usage sent with the tail as one UPDATE). It
// once cost 19 round trips: a read transaction of the
// thread not made yet, the thread read back whole in the append's transaction, the settings
// in a transaction of their own and the notice state read.
func TestFirstTurnRoundTrips(t *testing.T) {
	if testdb.Backend() != testdb.Postgres {
		t.Skip("counts the round trips to a PostgreSQL server: run with " + testdb.Env + " set")
	}
	t.Parallel()
	var proxy *testdb.Proxy
	e := newEnv(t, envOptions{auto: true,
		db: func(name string) string {
			proxy = testdb.NewProxy(t, name)
			return proxy.URL(t, name)
		},
		server: func(s *serve.Server) { s.Notice.Enabled = true },
	})
	e.up.set(func(u *upstream) { u.window, u.way = 200000, "vllm" })
	turn := func(thread string, msgs []chat.Message) (roundTrips, statements int64, reply chat.Message) {
		t.Helper()
		rt, st := proxy.Messages('S', 'Q'), proxy.Messages('E', 'Q')
		code, body, _ := e.post("/t/"+thread+"/v1/chat/completions", turnBody(t, msgs))
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", thread, code, body)
		}
		return proxy.Messages('S', 'Q') - rt, proxy.Messages('E', 'Q') - st, replyOf(t, body)
	}
	first := []chat.Message{chat.TextMessage(chat.RoleSystem, "You are a coding agent."), chat.TextMessage(chat.RoleUser, "run the tests")}
	// A thread's first turn then a second, for the connections to be open and their
	// statements prepared.
	_, _, r := turn("warm", first)
	turn("warm", append(first, r, chat.TextMessage(chat.RoleUser, "again")))

	rt, st, r := turn("new", first)
	t.Logf("first turn: %d round trips, %d statements", rt, st)
	if rt != 7 || st != 17 {
		t.Errorf("a first turn: %d round trips, %d statements; want 7 and 17", rt, st)
	}
	rt, st, _ = turn("new", append(first, r, chat.TextMessage(chat.RoleUser, "again")))
	t.Logf("second turn: %d round trips, %d statements", rt, st)
	if rt != 4 || st != 12 {
		t.Errorf("a second turn: %d round trips, %d statements; want 4 and 12", rt, st)
	}

	// What the first turn stored is what it stored before: its messages, and the window
	// recorded in the thread's settings.
	if got := e.history("new"); len(got) != 5 {
		t.Fatalf("history: %q", got)
	}
	th, err := e.store.Thread(context.Background(), "new")
	if err != nil {
		t.Fatal(err)
	}
	var ts compact.ThreadSettings
	if err := json.Unmarshal(th.Settings, &ts); err != nil || ts.Window == nil || ts.Window.Tokens != 200000 {
		t.Fatalf("settings %s (%v): want the window recorded", th.Settings, err)
	}
}

// BenchmarkFirstTurn measures a thread's first turn through the proxy (its window recorded,
// the notices on), one new thread an iteration: go test ./serve -run '^$' -bench FirstTurn
// -benchmem (on PostgreSQL too with MEMCASCADE_TEST_POSTGRES set).
func BenchmarkFirstTurn(b *testing.B) {
	e := newEnv(b, envOptions{auto: true, server: func(s *serve.Server) { s.Notice.Enabled = true }})
	e.up.set(func(u *upstream) { u.window, u.way = 200000, "vllm" })
	body, err := json.Marshal(map[string]any{"model": "gpt-4o", "messages": []chat.Message{
		chat.TextMessage(chat.RoleSystem, "You are a coding agent."), chat.TextMessage(chat.RoleUser, "run the tests")}})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		i++
		if code, out, _ := e.post(fmt.Sprintf("/t/first-%d/v1/chat/completions", i), string(body)); code != http.StatusOK {
			b.Fatalf("%d %s", code, out)
		}
	}
}
