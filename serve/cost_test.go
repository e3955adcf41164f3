package serve_test

import (
	"context"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/serve"
)

// TestUpstreamCost: with an upstream price of $2 input and $8 output per million tokens,
// each reply stored adds prompt×2 + completion×8 micro-dollars to its thread (the fake
// upstream reports 7 completion tokens a reply, streamed or not): the thread's upstream cost
// and total are exactly that, and the thread's page shows it. A server without a price
// stores none.
func TestUpstreamCost(t *testing.T) {
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.UpstreamPrice = &llm.Price{Input: 2, Output: 8} }})
	history := `{"role":"user","content":"turn 0"}`
	for i := range 3 {
		stream := ""
		if i == 1 {
			stream = `"stream":true,`
		}
		body := fmt.Sprintf(`{"model":"gpt-4o",%s"messages":[%s]}`, stream, history)
		if code, b, _ := e.post("/t/paid/v1/chat/completions", body); code != 200 {
			t.Fatalf("turn %d: %d %s", i, code, b)
		}
		history += fmt.Sprintf(`,{"role":"assistant","content":"reply %d"},{"role":"user","content":"turn %d"}`, i+1, i+1)
	}
	th, err := e.store.Thread(context.Background(), "paid")
	if err != nil {
		t.Fatal(err)
	}
	u := th.Upstream
	want := int64(u.PromptTokens*2 + u.Replies*7*8)
	got := func(c *float64) int64 {
		if c == nil {
			return -1
		}
		return int64(math.Round(*c * 1e6))
	}
	if u.Replies != 3 || u.PromptTokens == 0 || got(u.Cost) != want || got(th.Cost) != want || th.CompactionCost != nil {
		t.Fatalf("thread: upstream %+v (cost %d), cost %d, compaction cost %v; want 3 replies costing %d micro-dollars",
			u, got(u.Cost), got(th.Cost), th.CompactionCost, want)
	}
	if code, page, _ := e.get("/threads/paid"); code != 200 || !strings.Contains(page, `<span id="cost">cost $`) {
		t.Errorf("thread page (%d) shows no cost:\n%s", code, page)
	}

	free := newEnv(t, envOptions{})
	if code, b, _ := free.post("/t/free/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`); code != 200 {
		t.Fatalf("%d %s", code, b)
	}
	th, err = free.store.Thread(context.Background(), "free")
	if err != nil {
		t.Fatal(err)
	}
	if th.Upstream.Replies != 1 || th.Upstream.Cost != nil || th.Cost != nil {
		t.Errorf("thread without a price: upstream %+v, cost %v; want no cost", th.Upstream, th.Cost)
	}
}

// TestUpstreamRungPriced: when the model serve fronts writes the summary (the upstream rung),
// its attempt is priced at serve's upstream price: the report's cost is its tokens at $2/$8
// per million, and the thread's cost is that plus what its replies cost.
func TestUpstreamRungPriced(t *testing.T) {
	e := newSumEnv(t, shapes[0], config.Default(), configuredKey,
		func(s *serve.Server) { s.UpstreamPrice = &llm.Price{Input: 2, Output: 8} })
	e.turns("t1", 6)
	rep := e.compact("t1")
	micros := func(c *float64) int64 {
		if c == nil {
			return -1
		}
		return int64(math.Round(*c * 1e6))
	}
	u := rep.Usage
	if rep.Provider != serve.UpstreamRungName || u.Requests != 1 || micros(u.Cost) != int64(u.PromptTokens*2+u.CompletionTokens*8) {
		t.Fatalf("report by %q: usage %+v, cost %d micro-dollars; want the upstream rung's one request at $2/$8", rep.Provider, u, micros(u.Cost))
	}
	th, err := e.store.Thread(context.Background(), "t1")
	if err != nil {
		t.Fatal(err)
	}
	if micros(th.CompactionCost) != micros(u.Cost) || th.Upstream.Cost == nil || micros(th.Cost) != micros(th.CompactionCost)+micros(th.Upstream.Cost) {
		t.Errorf("thread: compaction cost %d, upstream cost %d, cost %d micro-dollars; want the report's, some, their sum",
			micros(th.CompactionCost), micros(th.Upstream.Cost), micros(th.Cost))
	}
}
