package serve_test

import (
	"os"
	"slices"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/serve"
	"github.com/memcascade/memcascade/serve/anthropic"
	"github.com/memcascade/memcascade/serve/dialect"
	"github.com/memcascade/memcascade/tokencount"
)

// countingCounter counts the calls of CountTools.
type countingCounter struct {
	tokencount.Counter
	calls int
}

func (c *countingCounter) CountTools(tools []chat.Tool) int {
	c.calls++
	return c.Counter.CountTools(tools)
}

// The tokens of the tool definitions an agent sends every turn are counted once per dialect,
// bytes and encoding: the next turns that send the same bytes get the same count without
// counting them again; tools the proxy changed (recall adds one), and another encoding, are
// counted.
func TestToolsCountedOnce(t *testing.T) {
	t.Parallel()
	body, err := os.ReadFile("testdata/agents/captures/claude/turn3.json")
	if err != nil {
		t.Fatal(err)
	}
	parse := func() dialect.Turn {
		turn, err := anthropic.Dialect{}.Parse(body, nil)
		if err != nil {
			t.Fatal(err)
		}
		turn.Sent.Dialect = anthropic.Dialect{}.Name()
		return turn
	}
	o200k, err := tokencount.NewCounter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	cl100k, err := tokencount.NewCounter(tokencount.EncodingCL100k)
	if err != nil {
		t.Fatal(err)
	}
	srv := &serve.Server{}
	c := &countingCounter{Counter: o200k}
	first := parse()
	if len(first.Tools) == 0 {
		t.Fatal("the capture sends no tools")
	}
	want := o200k.CountTools(first.Tools)
	for i, turn := range []dialect.Turn{first, first, parse()} {
		if got := srv.CountTools(c, turn); got != want {
			t.Errorf("turn %d: %d tokens of tools, want %d", i, got, want)
		}
	}
	if c.calls != 1 {
		t.Errorf("counted %d times in three turns sending the same tools, want once", c.calls)
	}
	changed := parse()
	changed.Tools = append(slices.Clone(changed.Tools), chat.Tool{Type: "function", Function: chat.ToolFunction{Name: "recall", Description: "Search the thread."}})
	if got, want := srv.CountTools(c, changed), o200k.CountTools(changed.Tools); got != want || c.calls != 2 {
		t.Errorf("changed tools: %d tokens (want %d), counted %d times (want 2)", got, want, c.calls)
	}
	other := &countingCounter{Counter: cl100k}
	if got, want := srv.CountTools(other, first), cl100k.CountTools(first.Tools); got != want || other.calls != 1 {
		t.Errorf("cl100k: %d tokens (want %d), counted %d times (want 1)", got, want, other.calls)
	}
}
