package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/mcpserver"
	"github.com/memcascade/memcascade/memory"
)

// TestSearchOneRanking: the same query gives the same hits in the same order from the store
// (what memctl search prints), the REST API and MCP's memory_search, on a thread compacted
// three times (so that superseded summaries match too): the original messages come first,
// and a superseded summary is left out behind the newer one that folded it in.
func TestSearchOneRanking(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	importAirline(t, e)
	ctx := context.Background()
	for round := range 2 {
		var turns []chat.Message
		for i := range 12 {
			turns = append(turns, chat.TextMessage(chat.RoleUser, fmt.Sprintf("round %d: what about reservation R%dX%d and its flight?", round, round, i)),
				chat.TextMessage(chat.RoleAssistant, strings.Repeat("The reservation is confirmed and the flight is on time. ", 8)))
		}
		if _, err := e.store.Append(ctx, "t", turns, memory.AppendOptions{}); err != nil {
			t.Fatal(err)
		}
		limit := 4000
		if rep, err := e.srv.Compactor.Compact(ctx, "t", compact.Options{Force: true, Override: compact.ThreadSettings{TokenLimit: &limit}}); err != nil || rep.Status != memory.StatusApplied {
			t.Fatalf("compaction %d: %s %v", round+2, rep.Status, err)
		}
	}
	// Three summaries hold LQ940Q, each folding the one before it.
	reps, err := e.store.Reports(ctx, "t", 0)
	if err != nil {
		t.Fatal(err)
	}
	holding := 0
	for _, r := range reps {
		if full, err := e.store.Report(ctx, r.ID); err == nil && full.Summary != nil && strings.Contains(*full.Summary, "LQ940Q") {
			holding++
		}
	}
	if holding != 3 {
		t.Fatalf("%d summaries hold LQ940Q, want 3", holding)
	}
	key := func(h memory.SearchHit) [3]int64 {
		return [3]int64{h.Seq, h.CompactionID, map[bool]int64{true: 1}[h.InActiveContext]}
	}
	for _, q := range []string{"reservation", "LQ940Q", "flight"} {
		store, err := e.store.Search(ctx, q, memory.SearchOptions{Thread: "t", Limit: 40, Redact: e.srv.Compactor.Redact})
		if err != nil || len(store) == 0 {
			t.Fatalf("%s: store search: %d hits, %v", q, len(store), err)
		}
		code, body, _ := e.get("/api/search?thread=t&limit=40&q=" + q)
		var api mcpserver.SearchOutput
		if code != http.StatusOK || json.Unmarshal([]byte(body), &api) != nil {
			t.Fatalf("%s: /api/search: %d %s", q, code, body)
		}
		cs, err := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil).Connect(ctx,
			&mcp.StreamableClientTransport{Endpoint: e.url + "/mcp?thread=t"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolSearch, Arguments: map[string]any{"query": q, "limit": 40}})
		cs.Close()
		if err != nil || res.IsError {
			t.Fatalf("%s: memory_search: %v %+v", q, err, res)
		}
		var tool mcpserver.SearchOutput
		b, _ := json.Marshal(res.StructuredContent)
		if err := json.Unmarshal(b, &tool); err != nil {
			t.Fatal(err)
		}
		want := make([][3]int64, len(store))
		for i, h := range store {
			want[i] = key(h)
		}
		for name, hits := range map[string][]memory.SearchHit{"api": api.Hits, "mcp": tool.Hits} {
			got := make([][3]int64, len(hits))
			for i, h := range hits {
				got[i] = key(h)
			}
			if !slices.Equal(got, want) {
				t.Errorf("%s: %s hits %v, the store's %v", q, name, got, want)
			}
		}
		summaries := 0
		for i, h := range store {
			if h.CompactionID == 0 && i > 0 && store[i-1].CompactionID != 0 {
				t.Errorf("%s: message %d ranked after a summary", q, h.Seq)
			}
			if h.CompactionID != 0 {
				summaries++
			}
		}
		if q == "LQ940Q" && summaries != 1 {
			t.Errorf("%s: %d summaries among the hits, want the newest alone (the older two are folded into it)", q, summaries)
		}
	}
}
