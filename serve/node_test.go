package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/nodetest"
	"github.com/memcascade/memcascade/memory"
)

// The official Node client (testdata/node, pinned with its lockfile) holds a conversation
// through the proxy, resending its whole history each turn, the last turn streamed. The
// conversation is stored exactly once, in order; the thread is compacted when it passes its
// limit; no upstream request exceeds the limit; the streamed reply reaches the client whole
// and is stored.
func TestNodeOpenAIClient(t *testing.T) {
	node, dir := nodetest.Require(t, filepath.Join("testdata", "node"), "openai")
	const limit, turns = 1500, 14
	e := newEnv(t, envOptions{limit: limit, token: "node-token"})
	e.up.set(func(u *upstream) {
		u.reply = func(n int, _ []chat.Message) chat.Message {
			return chat.TextMessage("assistant", fmt.Sprintf("Reply %d: clear the cache of the runner and retry; %s", n, strings.Repeat("then check the layer digests. ", 4)))
		}
	})
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute) // bounds a hung node only
	defer cancel()
	cmd := exec.CommandContext(ctx, node, "conversation.mjs")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "MEMCTL_BASE_URL="+e.url+"/t/node-agent/v1", "MEMCTL_TOKEN=node-token", fmt.Sprintf("TURNS=%d", turns))
	var stderr strings.Builder
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("node conversation.mjs: %v\n%s", err, stderr.String())
	}
	var res struct {
		Messages []chat.Message `json:"messages"`
		Streamed string         `json:"streamed"`
		Chunks   int            `json:"chunks"`
		Finish   string         `json:"finish"`
	}
	if err := json.Unmarshal(out, &res); err != nil {
		t.Fatalf("the script's output: %v\n%s", err, out)
	}
	e.srv.WaitBackground()

	// Stored exactly once, in order: the client's own conversation.
	var want []string
	for _, m := range res.Messages {
		want = append(want, m.Role+": "+m.Text())
	}
	if got := e.history("node-agent"); !slices.Equal(got, want) {
		t.Fatalf("stored history (%d messages):\n%s\nthe client's (%d):\n%s", len(got), strings.Join(got, "\n"), len(want), strings.Join(want, "\n"))
	}
	if len(want) != 1+2*turns {
		t.Fatalf("the client's conversation has %d messages, want %d", len(want), 1+2*turns)
	}
	// The streamed reply reached the client whole, in several chunks, and is stored.
	wantLast := fmt.Sprintf("Reply %d: clear the cache", turns)
	if !strings.HasPrefix(res.Streamed, wantLast) || res.Chunks < 4 || res.Finish != "stop" {
		t.Fatalf("streamed %q in %d chunks (finish %q)", res.Streamed, res.Chunks, res.Finish)
	}
	// Compacted past the limit, and no upstream request over it.
	n, maxTokens := e.up.stats()
	if n != turns || maxTokens > limit {
		t.Fatalf("%d upstream requests, the largest %d tokens (limit %d)", n, maxTokens, limit)
	}
	reps, err := e.store.Reports(context.Background(), "node-agent", 0)
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, r := range reps {
		if r.Status == memory.StatusApplied {
			applied++
		}
	}
	if applied == 0 {
		t.Fatalf("the thread was never compacted (%d reports)", len(reps))
	}
	t.Logf("%d turns, %d compactions applied, largest upstream request %d tokens (limit %d)", turns, applied, maxTokens, limit)
}
