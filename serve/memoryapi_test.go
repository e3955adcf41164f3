package serve_test

import (
	"context"
	"encoding/json"
	"net/http"
	"os"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/mcpserver"
	"github.com/memcascade/memcascade/memory"
)

// importAirline imports the recorded airline conversation into thread t and compacts it at
// 4,000 tokens.
func importAirline(t *testing.T, e *env) {
	t.Helper()
	ctx := context.Background()
	f, err := os.Open("../testdata/conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := e.store.Import(ctx, "t", f, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
		t.Fatal(err)
	}
	limit := 4000
	if rep, err := e.srv.Compactor.Compact(ctx, "t", compact.Options{Force: true, Override: compact.ThreadSettings{TokenLimit: &limit}}); err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compact: %s %v", rep.Status, err)
	}
}

// TestMemoryRoutes: search, a range of original messages, pin and unpin over the inspection
// API; the routes that change state refuse what a browser could send from another site.
func TestMemoryRoutes(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	importAirline(t, e)

	code, body, _ := e.get("/api/search?q=LQ940Q&thread=t")
	var found mcpserver.SearchOutput
	if code != http.StatusOK || json.Unmarshal([]byte(body), &found) != nil || len(found.Hits) == 0 {
		t.Fatalf("search: %d %s", code, body)
	}
	// The backends rank differently (FTS5's bm25 against PostgreSQL's ts_rank), so the test looks
	// for the tool result that carries the reservation, not for the first hit.
	archived := false
	for _, h := range found.Hits {
		if h.Seq == 16 {
			archived = h.CompactionID == 0 && !h.InActiveContext && h.Archived && h.Role == "tool"
		}
	}
	if !archived {
		t.Fatalf("the tool result of LQ940Q (seq 16) is not an archived hit (%s)", body)
	}
	code, body, _ = e.get("/api/threads/t/messages?from=15&to=16")
	var msgs []struct {
		Seq     int64        `json:"seq"`
		Message chat.Message `json:"message"`
	}
	if code != http.StatusOK || json.Unmarshal([]byte(body), &msgs) != nil || len(msgs) != 2 || !strings.Contains(msgs[1].Message.Text(), "LQ940Q") {
		t.Fatalf("messages 15..16: %d %s", code, body)
	}
	for path, want := range map[string]string{
		"/api/threads/t/messages?from=0":   "invalid_from",
		"/api/threads/t/messages?from=100": "message_not_found",
		"/api/threads/x/messages":          "thread_not_found",
		"/api/search":                      "invalid_q",
		"/api/search?q=a&limit=x":          "invalid_limit",
	} {
		if code, body, _ := e.get(path); code < 400 || errorCode(t, body) != want {
			t.Errorf("GET %s: %d %s, want %s", path, code, body, want)
		}
	}

	// Cross-site: a form post (no JSON), and JSON from another origin.
	req, _ := http.NewRequest(http.MethodPost, e.url+"/api/threads/t/pins/16", strings.NewReader("a=b"))
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if code, body, _ := e.do(req); code != http.StatusUnsupportedMediaType {
		t.Fatalf("form post: %d %s", code, body)
	}
	if code, body, _ := e.post("/api/threads/t/pins/16", "", "Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); code != http.StatusForbidden {
		t.Fatalf("cross-origin pin: %d %s", code, body)
	}
	if pins, _ := e.store.Pins(context.Background(), "t"); len(pins) != 0 {
		t.Fatalf("a refused request pinned %v", pins)
	}
	code, body, _ = e.post("/api/threads/t/pins/16", "")
	var pin mcpserver.PinOutput
	if code != http.StatusOK || json.Unmarshal([]byte(body), &pin) != nil || !pin.Pinned || pin.FromSeq != 15 {
		t.Fatalf("pin: %d %s", code, body)
	}
	a, _ := e.store.Active(context.Background(), "t")
	if a.Entries[1].Seq != 15 || !a.Entries[2].Pinned {
		t.Fatalf("the active context does not hold the pinned unit after the system message")
	}
	del, _ := http.NewRequest(http.MethodDelete, e.url+"/api/threads/t/pins/15", nil)
	del.Header.Set("Content-Type", "application/json")
	if code, body, _ := e.do(del); code != http.StatusOK {
		t.Fatalf("unpin: %d %s", code, body)
	}
	if code, body, _ := e.do(del); code != http.StatusNotFound || errorCode(t, body) != "not_pinned" {
		t.Fatalf("unpin again: %d %s", code, body)
	}
}

// TestMCPOverHTTP: /mcp serves the memory tools behind the server's token; a client without
// it is refused.
func TestMCPOverHTTP(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{token: "tok"})
	importAirline(t, e)
	ctx := context.Background()
	if code, _, _ := e.post("/mcp?thread=t", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`); code != http.StatusUnauthorized {
		t.Fatalf("/mcp without the token: %d", code)
	}
	// A browser's request from another site, token or not, is refused.
	if code, _, _ := e.post("/mcp?thread=t", `{"jsonrpc":"2.0","id":1,"method":"tools/list"}`, "Authorization", "Bearer tok",
		"Origin", "https://evil.example", "Sec-Fetch-Site", "cross-site"); code != http.StatusForbidden {
		t.Fatalf("/mcp from another site: %d", code)
	}
	client := mcp.NewClient(&mcp.Implementation{Name: "test", Version: "1"}, nil)
	cs, err := client.Connect(ctx, &mcp.StreamableClientTransport{Endpoint: e.url + "/mcp?thread=t",
		HTTPClient: &http.Client{Transport: bearer{"tok"}}}, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer cs.Close()
	res, err := cs.CallTool(ctx, &mcp.CallToolParams{Name: mcpserver.ToolSearch, Arguments: map[string]any{"query": "LQ940Q"}})
	if err != nil || res.IsError {
		t.Fatalf("memory_search: %v %+v", err, res)
	}
	b, _ := json.Marshal(res.StructuredContent)
	if !strings.Contains(string(b), `"seq":16`) {
		t.Fatalf("memory_search over HTTP: %s", b)
	}
}

// bearer adds a bearer token to each request.
type bearer struct{ token string }

func (b bearer) RoundTrip(r *http.Request) (*http.Response, error) {
	r = r.Clone(r.Context())
	r.Header.Set("Authorization", "Bearer "+b.token)
	return http.DefaultTransport.RoundTrip(r)
}
