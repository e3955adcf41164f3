package mcpserver_test

import (
	"context"
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	_ "github.com/memcascade/memcascade/db/postgres"
	"github.com/memcascade/memcascade/extractive"
	"github.com/memcascade/memcascade/internal/testdb"
	"github.com/memcascade/memcascade/mcpserver"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/tokencount"
)

// TestMain runs the tests on SQLite, then on PostgreSQL when MEMCASCADE_TEST_POSTGRES is set.
func TestMain(m *testing.M) { testdb.Main(m) }

const airline = "../testdata/conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl"

// freshDB makes setup's databases: copies of one a store made, on SQLite.
var freshDB = testdb.NewTemplate(func(path string) error {
	s, err := memory.Open(context.Background(), path)
	if err != nil {
		return err
	}
	return s.Close()
})

// airlineStore is a store of its own holding the airline conversation as thread "t".
func airlineStore(t *testing.T) *memory.Store {
	t.Helper()
	ctx := context.Background()
	s, err := memory.Open(ctx, freshDB.Name(t, "mcp.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	f, err := os.Open(airline)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := s.Import(ctx, "t", f, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	return s
}

// setup imports the airline conversation into thread "t" and compacts it at 4,000 tokens,
// and returns a client session of a server with opt (its Compactor set here).
func setup(t *testing.T, opt mcpserver.Options) (*mcp.ClientSession, *memory.Store) {
	t.Helper()
	ctx := context.Background()
	s := airlineStore(t)
	counter, err := s.Counter(tokencount.EncodingO200k)
	if err != nil {
		t.Fatal(err)
	}
	casc := cascade.New(s.DB(), cascade.Entry{Name: "offline", Type: "extractive", Model: "extractive",
		Provider: extractive.Summarizer{Count: counter.CountText}, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
	c := compact.New(s, casc, compact.Settings{TokenLimit: 4000})
	if rep, err := c.Compact(ctx, "t", compact.Options{Force: true}); err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %s %v", rep.Status, err)
	}
	opt.Compactor = c
	st, ct := mcp.NewInMemoryTransports()
	if _, err := mcpserver.New(opt).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs, s
}

// call calls a tool and decodes its structured answer into out; it returns the error text of
// a tool error ("" when none).
func call(t *testing.T, cs *mcp.ClientSession, name string, args map[string]any, out any) string {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	if res.IsError {
		return res.Content[0].(*mcp.TextContent).Text
	}
	b, err := json.Marshal(res.StructuredContent)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, out); err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return ""
}

// TestTools: the recorded conversation, compacted, through every tool: a booking id the
// compaction moved out is found, read back, pinned, and stays through a requested compaction.
func TestTools(t *testing.T) {
	cs, s := setup(t, mcpserver.Options{})
	ctx := context.Background()
	tools, err := cs.ListTools(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, tool := range tools.Tools {
		names = append(names, tool.Name)
		if tool.Description == "" || tool.InputSchema == nil {
			t.Errorf("tool %s has no description or schema", tool.Name)
		}
	}
	slices.Sort(names)
	if want := []string{"memory_compact", "memory_compactions", "memory_pin", "memory_read", "memory_search", "memory_unpin"}; !slices.Equal(names, want) {
		t.Fatalf("tools %v, want %v", names, want)
	}

	var found mcpserver.SearchOutput
	if e := call(t, cs, "memory_search", map[string]any{"query": "LQ940Q", "thread": "t"}, &found); e != "" {
		t.Fatal(e)
	}
	// One ranking (memory.Store.Search): the tool's hits are the store's, in its order, the
	// messages before the summaries.
	direct, err := s.Search(ctx, "LQ940Q", memory.SearchOptions{Thread: "t"})
	if err != nil || len(direct) != len(found.Hits) {
		t.Fatalf("store search: %d hits (%v), the tool %d", len(direct), err, len(found.Hits))
	}
	var archived *memory.SearchHit
	for i, h := range found.Hits {
		if d := direct[i]; d.Thread != h.Thread || d.Seq != h.Seq || d.CompactionID != h.CompactionID || d.InActiveContext != h.InActiveContext {
			t.Fatalf("hit %d: the tool's %+v, the store's %+v", i, h, d)
		}
		if i > 0 && h.CompactionID == 0 && found.Hits[i-1].CompactionID != 0 {
			t.Fatalf("a message after a summary: %v", found.Hits)
		}
		if h.CompactionID == 0 && !h.InActiveContext && archived == nil {
			h := h
			archived = &h
		}
	}
	if archived == nil {
		t.Fatalf("no hit of LQ940Q outside the active context: %+v", found.Hits)
	}
	var read mcpserver.ReadOutput
	if e := call(t, cs, "memory_read", map[string]any{"thread": "t", "from_seq": archived.Seq - 1, "to_seq": archived.Seq}, &read); e != "" {
		t.Fatal(e)
	}
	holds := func(m mcpserver.ReadMessage) bool {
		return strings.Contains(m.Content, "LQ940Q") || slices.ContainsFunc(m.ToolCalls, func(c mcpserver.ReadCall) bool { return strings.Contains(c.Arguments, "LQ940Q") })
	}
	if len(read.Messages) != 2 || !holds(read.Messages[1]) || read.Truncated {
		t.Fatalf("read %d..%d: %+v", archived.Seq-1, archived.Seq, read)
	}
	var pinned mcpserver.PinOutput
	if e := call(t, cs, "memory_pin", map[string]any{"thread": "t", "seq": archived.Seq}, &pinned); e != "" || !pinned.Pinned {
		t.Fatalf("pin: %s %+v", e, pinned)
	}
	var comp mcpserver.CompactOutput
	if e := call(t, cs, "memory_compact", map[string]any{"thread": "t", "reason": "downgrades done"}, &comp); e != "" {
		t.Fatal(e)
	}
	if comp.Reason != compact.ReasonRequested {
		t.Fatalf("compact: %+v", comp)
	}
	if e := call(t, cs, "memory_search", map[string]any{"query": "LQ940Q", "thread": "t"}, &found); e != "" {
		t.Fatal(e)
	}
	if !slices.ContainsFunc(found.Hits, func(h memory.SearchHit) bool { return h.Seq == archived.Seq && h.InActiveContext }) {
		t.Fatalf("after the requested compaction the pinned message %d is not in the active context: %+v", archived.Seq, found.Hits)
	}
	var list mcpserver.CompactionsOutput
	if e := call(t, cs, "memory_compactions", map[string]any{"thread": "t"}, &list); e != "" {
		t.Fatal(e)
	}
	if len(list.Compactions) != 2 || list.Compactions[0].Reason != compact.ReasonRequested || list.Compactions[1].ToSeq == 0 {
		t.Fatalf("compactions: %+v", list.Compactions)
	}
	if e := call(t, cs, "memory_unpin", map[string]any{"thread": "t", "seq": archived.Seq}, &pinned); e != "" {
		t.Fatal(e)
	}
	if pins, _ := s.Pins(ctx, "t"); len(pins) != 0 {
		t.Fatalf("pins after unpin: %v", pins)
	}
}

// TestReadRedacts: memory_read and memory_search redact a secret as it is redacted for a
// provider, unless the server is raw.
func TestReadRedacts(t *testing.T) {
	const secret = "sk-proj-Zq8vN3kR7tY2wX5mB9cD4fG6hJ1lP0sA"
	for _, raw := range []bool{false, true} {
		cs, s := setup(t, mcpserver.Options{Thread: "t", Raw: raw})
		if _, err := s.Append(context.Background(), "t", []chat.Message{chat.TextMessage("user", "my key is "+secret)}, memory.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		var read mcpserver.ReadOutput
		if e := call(t, cs, "memory_read", map[string]any{"from_seq": 63, "to_seq": 63}, &read); e != "" {
			t.Fatal(e)
		}
		var found mcpserver.SearchOutput
		if e := call(t, cs, "memory_search", map[string]any{"query": "key"}, &found); e != "" || len(found.Hits) == 0 {
			t.Fatalf("search: %s %v", e, found)
		}
		if strings.Contains(read.Messages[0].Content, secret) != raw || strings.Contains(found.Hits[0].Snippet, "sk-proj-Zq8") != raw {
			t.Fatalf("raw %v: read %q, snippet %q", raw, read.Messages[0].Content, found.Hits[0].Snippet)
		}
	}
}

// TestToolErrors: bad arguments are tool errors that say what is wrong.
func TestToolErrors(t *testing.T) {
	cs, _ := setup(t, mcpserver.Options{Thread: "t", ReadTokens: 300})
	var out mcpserver.ReadOutput
	for _, c := range []struct {
		tool string
		args map[string]any
		want string
	}{
		{"memory_read", map[string]any{"thread": "other", "from_seq": 1, "to_seq": 2}, `serves thread "t" only`},
		{"memory_read", map[string]any{"from_seq": 5, "to_seq": 2}, "from_seq 5, to_seq 2"},
		{"memory_read", map[string]any{"from_seq": 100, "to_seq": 200}, "messages 1..62"},
		{"memory_pin", map[string]any{"seq": 99}, "not 99"},
		{"memory_unpin", map[string]any{"seq": 3}, "not pinned"},
	} {
		if e := call(t, cs, c.tool, c.args, &out); !strings.Contains(e, c.want) {
			t.Errorf("%s %v: error %q, want it to say %q", c.tool, c.args, e, c.want)
		}
	}
	// The token bound: a range of large messages is cut, saying where to read on.
	if e := call(t, cs, "memory_read", map[string]any{"from_seq": 13, "to_seq": 20}, &out); e != "" {
		t.Fatal(e)
	}
	if !out.Truncated || out.NextSeq != out.Messages[len(out.Messages)-1].Seq+1 || len(out.Messages) == 8 {
		t.Fatalf("read of 8 messages with a bound of 300 tokens: %d messages, truncated %v, next %d", len(out.Messages), out.Truncated, out.NextSeq)
	}
}

// TestSearchMaskedIsNotInContext: a tool result a compaction masked is in the active context
// as a placeholder only: memory_search says it is not there, so the model reads it back.
func TestSearchMaskedIsNotInContext(t *testing.T) {
	cs, s := setup(t, mcpserver.Options{Thread: "t"})
	ctx := context.Background()
	if _, err := s.Revert(ctx, "", 1); err != nil {
		t.Fatal(err)
	}
	c := compact.New(s, nil, compact.Settings{TokenLimit: 7000, Strategy: compact.StrategyMask})
	if rep, err := c.Compact(ctx, "t", compact.Options{Force: true}); err != nil || rep.View == nil || !slices.Contains(rep.View.Masked, 16) {
		t.Fatalf("mask: %+v %v", rep.View, err)
	}
	var found mcpserver.SearchOutput
	if e := call(t, cs, "memory_search", map[string]any{"query": "LQ940Q"}, &found); e != "" {
		t.Fatal(e)
	}
	for _, h := range found.Hits {
		if h.Seq == 16 && h.InActiveContext {
			t.Fatalf("the masked result 16 is said to be in the active context: %+v", h)
		}
		if h.Seq == 15 && !h.InActiveContext {
			t.Fatalf("the call 15, kept whole, is said not to be in the active context: %+v", h)
		}
	}
}
