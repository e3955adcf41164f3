package mcpserver_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/llm"
	"github.com/memcascade/memcascade/mcpserver"
	"github.com/memcascade/memcascade/memory"
)

// TestCompactInstructions: memory_compact's instructions reach the provider's request.
func TestCompactInstructions(t *testing.T) {
	ctx := context.Background()
	s := airlineStore(t)
	fake := &cascade.Fake{Func: func(context.Context, llm.Request) (llm.Response, error) {
		return llm.Response{Text: "## Work done\nThe flights were changed.", FinishReason: "stop", Model: "m"}, nil
	}}
	casc := cascade.New(s.DB(), cascade.Entry{Name: "p", Type: "fake", Model: "m", Provider: fake, MaxAttempts: 1, Cooldown: time.Second, MaxCooldown: time.Minute})
	c := compact.New(s, casc, compact.Settings{TokenLimit: 100000})
	st, ct := mcp.NewInMemoryTransports()
	if _, err := mcpserver.New(mcpserver.Options{Compactor: c}).Connect(ctx, st, nil); err != nil {
		t.Fatal(err)
	}
	cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx, ct, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	const note = "KEEP-NOTE: keep the reservation ids"
	var comp mcpserver.CompactOutput
	if e := call(t, cs, "memory_compact", map[string]any{"thread": "t", "instructions": note}, &comp); e != "" || comp.Status != string(memory.StatusApplied) {
		t.Fatalf("compact: %s %+v", e, comp)
	}
	calls := fake.Calls()
	if len(calls) == 0 || !strings.Contains(calls[len(calls)-1].Messages[len(calls[len(calls)-1].Messages)-1].Content, note) {
		t.Fatalf("%d requests; the last lacks the instructions", len(calls))
	}
}
