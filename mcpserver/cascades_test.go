package mcpserver_test

import (
	"context"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/mcpserver"
	"github.com/memcascade/memcascade/memory"
)

// TestCompactThreadCascade: memory_compact of a thread set to a named cascade is summarized by
// that cascade's provider; the compactor's own is not asked.
func TestCompactThreadCascade(t *testing.T) {
	ctx := context.Background()
	s := airlineStore(t)
	if err := compact.SaveThreadSettings(ctx, s, "t", compact.ThreadSettings{Cascade: "named"}); err != nil {
		t.Fatal(err)
	}
	provider := func(name string) (*cascade.Fake, *cascade.Cascade) {
		fake := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) {
			return llm.Response{Text: "## Work done\nThe flights were changed.", FinishReason: "stop", Model: "m"}, nil
		}}
		return fake, cascade.New(s.DB(), cascade.Entry{Name: name, Type: "fake", Model: "m", Provider: fake, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
	}
	def, defCasc := provider("def")
	named, namedCasc := provider("named")
	c := compact.NewWith(s, defCasc, compact.Settings{TokenLimit: 100000}, compact.Config{Summarizers: map[string]compact.Summarizer{"named": namedCasc}})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := mcpserver.New(mcpserver.Options{Compactor: c}).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	var comp mcpserver.CompactOutput
	if e := call(t, cs, "memory_compact", map[string]any{"thread": "t"}, &comp); e != "" || comp.Status != string(memory.StatusApplied) {
		t.Fatalf("compact: %s %+v", e, comp)
	}
	if len(def.Calls()) != 0 || len(named.Calls()) == 0 {
		t.Fatalf("requests: the compactor's own provider %d, the thread's cascade's %d; want 0 and at least 1", len(def.Calls()), len(named.Calls()))
	}
}
