package mcpserver_test

import (
	"context"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/internal/storetest"
	"github.com/memcascade/memcascade/mcpserver"
	"github.com/memcascade/memcascade/memory"
)

// TestCompactionsSaysHeld: memory_compactions says why the breaker holds a thread after
// compaction.max_failures failed compactions in a row, and says nothing before.
func TestCompactionsSaysHeld(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	s, err := memory.Open(ctx, freshDB.Name(t, "held.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { s.Close() })
	storetest.LongThread(t, s, "t", 20, 400)
	set := compact.Settings{TokenLimit: 2000}
	st, ct := mcp.NewInMemoryTransports()
	if _, err := mcpserver.New(mcpserver.Options{Thread: "t", Compactor: compact.New(s, nil, set)}).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cs.Close() })
	held := func() string {
		var out mcpserver.CompactionsOutput
		if e := call(t, cs, "memory_compactions", map[string]any{}, &out); e != "" {
			t.Fatal(e)
		}
		return out.Held
	}
	failing := compact.New(s, storetest.FailingCascade(s), set)
	for i := range compact.DefaultMaxFailures {
		if why := held(); why != "" {
			t.Fatalf("held after %d failures: %s", i, why)
		}
		if rep, _ := failing.Compact(ctx, "t", compact.Options{Force: true}); rep.Status != memory.StatusFailed {
			t.Fatalf("compaction %d: %s, want failed", i+1, rep.Status)
		}
	}
	if why := held(); !strings.Contains(why, "--force") {
		t.Fatalf("after %d failures: held %q, want why and how to release it", compact.DefaultMaxFailures, why)
	}
}
