package main

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/cascade"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/config"
	"github.com/memcascade/memcascade/internal/nodetest"
	"github.com/memcascade/memcascade/mcpserver"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
)

// TestMCPNodeClient: the official MCP TypeScript SDK client (testdata/mcp-node, pinned with
// its lockfile) lists the tools of memctl mcp over stdio and of memctl serve's /mcp over
// streamable HTTP, finds a booking id whose original messages a compaction of a recorded
// conversation moved out of the active context, reads them, pins one, asks for a compaction,
// and sees the pinned message stay in the active context.
func TestMCPNodeClient(t *testing.T) {
	node, dir := nodetest.Require(t, filepath.Join("testdata", "mcp-node"), "@modelcontextprotocol/sdk")
	m := newMemctl(t)
	m.config = filepath.Join(m.dir, "config.yaml")
	if err := os.WriteFile(m.config, []byte("compaction:\n  token_limit: 4000\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	m.must("import", "t", testdata("conversations/tau_bench_airline_gpt4o_task2_trial1.jsonl"))
	m.must("compact", "t", "--force")
	// The conversation goes on after the compaction, so that the compaction the model requests
	// has new messages to summarize (a middle that is the current summary alone is ineffective).
	var more strings.Builder
	for i := range 8 {
		more.WriteString(fmt.Sprintf(`{"role":"user","content":"Turn %d: one more question about my trip. %s"}`+"\n", i, strings.Repeat("I would like to know the baggage rules for each segment. ", 6)))
		more.WriteString(fmt.Sprintf(`{"role":"assistant","content":"Answer %d: %s"}`+"\n", i, strings.Repeat("Each passenger may bring one carry-on and one personal item. ", 6)))
	}
	m.must("import", "t", m.writeFile("more.jsonl", more.String()))

	ctx := context.Background()
	s, err := memory.Open(ctx, m.db)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	cfg, err := config.Load(m.config)
	if err != nil {
		t.Fatal(err)
	}
	c, _, err := cfg.NewCompactor(s.DB(), s, cascade.Options{}, compact.Config{})
	if err != nil {
		t.Fatal(err)
	}
	srv := &serve.Server{Store: s, Compactor: c, Token: "mcp-token"}
	web := httptest.NewServer(srv.Handler())
	defer web.Close()

	args, _ := json.Marshal([]string{"-test.run=^TestMemctlProcessHelper$", "--", "--db", m.db, "--config", m.config, "mcp", "--thread", "t"})
	runCtx, cancel := context.WithTimeout(ctx, 2*time.Minute) // bounds a hung node only
	defer cancel()
	cmd := exec.CommandContext(runCtx, node, "recall.mjs")
	cmd.Dir = dir
	cmd.Env = append(childEnv(t), helperEnv+"=memctl", "THREAD=t", "MEMCTL_CMD="+os.Args[0], "MEMCTL_ARGS="+string(args),
		"MCP_URL="+web.URL+"/mcp?thread=t", "MEMCTL_TOKEN=mcp-token")
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node recall.mjs: %v\n%s", err, stderr.String())
	}
	var res struct {
		StdioTools, HTTPTools []string
		IDs                   []string
		ID                    string
		Seq                   int64
		Read                  []mcpserver.ReadMessage
		Pin                   mcpserver.PinOutput
		Compact               mcpserver.CompactOutput
		After                 []memory.SearchHit
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("the script's output: %v\n%s", err, out)
	}
	want := []string{"memory_compact", "memory_compactions", "memory_pin", "memory_read", "memory_search", "memory_unpin"}
	if !slices.Equal(res.StdioTools, want) || !slices.Equal(res.HTTPTools, want) {
		t.Fatalf("tools over stdio %v, over HTTP %v, want %v", res.StdioTools, res.HTTPTools, want)
	}
	if len(res.Read) != 2 || res.Read[1].Seq != res.Seq || !strings.Contains(res.Read[1].Content, res.ID) || len(res.Read[0].ToolCalls) == 0 {
		t.Fatalf("read of %s (message %d): %+v", res.ID, res.Seq, res.Read)
	}
	if !res.Pin.Pinned || res.Pin.FromSeq != res.Seq-1 || res.Compact.Reason != compact.ReasonRequested || res.Compact.Status != string(memory.StatusApplied) {
		t.Fatalf("pin %+v, compact %+v", res.Pin, res.Compact)
	}
	if !slices.ContainsFunc(res.After, func(h memory.SearchHit) bool { return h.Seq == res.Seq && h.InActiveContext }) {
		t.Fatalf("after the requested compaction, message %d (%s) is not in the active context: %+v", res.Seq, res.ID, res.After)
	}
	a, err := s.Active(ctx, "t")
	if err != nil {
		t.Fatal(err)
	}
	if !slices.ContainsFunc(a.Entries, func(e memory.Entry) bool {
		return e.Seq == res.Seq && e.Pinned && strings.Contains(e.Message.Text(), res.ID)
	}) {
		t.Fatalf("the store's active context lacks the pinned message %d", res.Seq)
	}
	t.Logf("booking %s (of %v): message %d found archived, read, pinned, kept through compaction %d", res.ID, res.IDs, res.Seq, res.Compact.CompactionID)
}
