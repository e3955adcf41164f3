package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
)

// TestRefusedRequestStoresNothing: a request whose newest user message alone is over the
// thread's limit (under on_failure keep, which never cuts it) is answered 400
// context_length_exceeded before anything is stored: a new thread is not made, an existing
// thread keeps its history, its message count and its search index as they were, and the
// upstream is never called. The next request that fits goes on as if the refused one never
// came.
func TestRefusedRequestStoresNothing(t *testing.T) {
	t.Parallel()
	const limit = 2048
	e := newEnv(t, envOptions{limit: limit})
	ctx := context.Background()
	huge := "quokkaplan " + strings.Repeat("the whole log of the failing build, line after line; ", 400)
	body := func(msgs ...map[string]any) string {
		b, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
		return string(b)
	}
	sys := map[string]any{"role": "system", "content": "You are an agent."}
	user := func(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

	// A thread that did not exist stays so; a message far over the limit is measured by its
	// words, a floor of its tokens.
	status, out, _ := e.post("/t/fresh/v1/chat/completions", body(sys, user(strings.Repeat(huge, 4))))
	if status != http.StatusBadRequest || errorCode(t, out) != "context_length_exceeded" || !strings.Contains(out, "nothing was stored") || !strings.Contains(out, "at least") {
		t.Fatalf("new thread: %d %s; want 400 context_length_exceeded saying nothing was stored", status, out)
	}
	if _, err := e.store.Thread(ctx, "fresh"); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Fatalf("the refused request left thread fresh behind: %v", err)
	}
	if ths, err := e.store.Threads(ctx); err != nil || len(ths) != 0 {
		t.Fatalf("threads after a refused request: %v %v; want none", ths, err)
	}

	// An existing thread keeps what it held.
	status, out, _ = e.post("/t/kept/v1/chat/completions", body(sys, user("hello")))
	if status != http.StatusOK {
		t.Fatalf("first turn: %d %s", status, out)
	}
	var resp struct {
		Choices []struct {
			Message map[string]any `json:"message"`
		} `json:"choices"`
	}
	json.Unmarshal([]byte(out), &resp)
	reply := resp.Choices[0].Message
	before := e.history("kept")
	th, err := e.store.Thread(ctx, "kept")
	if err != nil {
		t.Fatal(err)
	}
	requests, _ := e.up.stats()
	for range 2 { // a retry of the refused request is refused the same
		status, out, _ = e.post("/t/kept/v1/chat/completions", body(sys, user("hello"), reply, user(huge)))
		if status != http.StatusBadRequest || errorCode(t, out) != "context_length_exceeded" || !strings.Contains(out, "on_failure: fit") {
			t.Fatalf("existing thread: %d %s; want 400 context_length_exceeded naming on_failure: fit", status, out)
		}
	}
	if after := e.history("kept"); strings.Join(after, "\n") != strings.Join(before, "\n") {
		t.Fatalf("history after the refused request:\n%s\nwant:\n%s", strings.Join(after, "\n"), strings.Join(before, "\n"))
	}
	if th2, err := e.store.Thread(ctx, "kept"); err != nil || th2.Messages != th.Messages || th2.ActiveTokens != th.ActiveTokens {
		t.Fatalf("thread after the refused request: %+v %v; want %+v", th2, err, th)
	}
	if hits, err := e.store.Search(ctx, "quokkaplan", memory.SearchOptions{}); err != nil || len(hits) != 0 {
		t.Fatalf("search finds the refused message: %v %v", hits, err)
	}
	if n, _ := e.up.stats(); n != requests {
		t.Fatalf("the upstream was called %d times for refused requests", n-requests)
	}

	// The agent drops the huge message: the turn goes on, stored once.
	status, out, _ = e.post("/t/kept/v1/chat/completions", body(sys, user("hello"), reply, user("and now?")))
	if status != http.StatusOK {
		t.Fatalf("turn after the refused one: %d %s", status, out)
	}
	if h := e.history("kept"); len(h) != len(before)+2 || h[len(before)] != "user: and now?" {
		t.Fatalf("history after the next turn:\n%s", strings.Join(h, "\n"))
	}
}

// TestRefusedOnlyWhenNothingCanFit: what a compaction can shrink is not refused before it
// is tried: a huge tool result (cut in what the model gets), a huge older message (summarized
// or left out), and under on_failure fit a huge newest user message (cut). Changed
// instructions over the limit are stored (their pin finds no room, and the middle is
// summarized) and the turn is answered as before; instructions that start a thread over the
// limit are refused.
func TestRefusedOnlyWhenNothingCanFit(t *testing.T) {
	t.Parallel()
	const limit = 2048
	huge := strings.Repeat("the whole log of the failing build, line after line; ", 400)
	body := func(msgs ...map[string]any) string {
		b, _ := json.Marshal(map[string]any{"model": "m", "messages": msgs})
		return string(b)
	}
	sys := map[string]any{"role": "system", "content": "You are an agent."}
	user := func(text string) map[string]any { return map[string]any{"role": "user", "content": text} }

	fit := newEnv(t, envOptions{limit: limit, server: func(s *serve.Server) { s.Compactor.Settings.OnFailure = compact.OnFailureFit }})
	status, out, _ := fit.post("/t/cut/v1/chat/completions", body(sys, user(huge)))
	if status != http.StatusOK {
		t.Fatalf("on_failure fit, huge user message: %d %s; want it cut and answered", status, out)
	}
	if h := fit.history("cut"); len(h) != 3 || len(h[1]) < len(huge) {
		t.Fatalf("on_failure fit: history %d messages; want the huge message stored whole and the reply", len(h))
	}
	status, out, _ = fit.post("/t/sys/v1/chat/completions", body(map[string]any{"role": "system", "content": huge}, user("hi")))
	if status != http.StatusBadRequest || errorCode(t, out) != "context_length_exceeded" || !strings.Contains(out, "not even with compaction.on_failure: fit") {
		t.Fatalf("instructions over the limit: %d %s; want 400 context_length_exceeded", status, out)
	}
	if h, err := fit.store.History(context.Background(), "sys"); !errors.Is(err, memory.ErrThreadNotFound) {
		t.Fatalf("the refused thread holds %d messages (%v)", len(h), err)
	}

	keep := newEnv(t, envOptions{limit: limit})
	status, out, _ = keep.post("/t/old/v1/chat/completions", body(sys, user(huge), map[string]any{"role": "assistant", "content": "noted"}, user("what now?")))
	if status != http.StatusOK {
		t.Fatalf("a huge older message: %d %s; want it compacted and answered", status, out)
	}
	if h := keep.history("old"); len(h) != 5 {
		t.Fatalf("a huge older message: %d messages stored, want 5", len(h))
	}
}
