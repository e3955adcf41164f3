package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
)

// TestServeChangingPromptLife: an agent of the Messages API whose system prompt says the date,
// a new one each request (the billing header too, as Claude Code's), with a tool round every
// third turn, through 80 turns at a limit that forces compactions. Every request the upstream
// gets has the day's prompt in its system field, alone (beside the billing header and the
// summary), and no other day's anywhere; the thread compacts once per quarter of the limit
// appended at most, never ineffectively.
func TestServeChangingPromptLife(t *testing.T) {
	t.Parallel()
	const limit, turns = 1500, 80
	e := newEnv(t, limit)
	e.fake.set(func(f *fake) { f.reply = toolReply })
	a := &agent{e: e, session: "days"}
	day := 0
	current, requests, compacted := 0, 0, 0
	first := ""
	send := func() []map[string]any {
		t.Helper()
		system, _ := json.Marshal([]map[string]any{
			text(fmt.Sprintf("x-anthropic-billing-header: cc_version=2.0.%d; cc_entrypoint=cli", day)),
			{"type": "text", "text": fmt.Sprintf("Today is day %d.", day), "cache_control": map[string]string{"type": "ephemeral"}},
		})
		body, _ := json.Marshal(map[string]any{"model": "claude-sonnet-4-5", "max_tokens": 4096, "system": json.RawMessage(system), "messages": a.msgs})
		resp, b := a.post("/v1/messages", body)
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("day %d: %d %s", day, resp.StatusCode, b)
		}
		if resp.Header.Get(serve.CompactionHeader) != "" {
			compacted++
		}
		var msg struct {
			Content []map[string]any `json:"content"`
		}
		if err := json.Unmarshal(b, &msg); err != nil {
			t.Fatalf("%v: %s", err, b)
		}
		m, _ := json.Marshal(map[string]any{"role": "assistant", "content": msg.Content})
		a.msgs = append(a.msgs, m)
		e.fake.mu.Lock()
		up := e.fake.requests[len(e.fake.requests)-1].body
		e.fake.mu.Unlock()
		requests++
		var req struct {
			System   []struct{ Text string } `json:"system"`
			Messages json.RawMessage         `json:"messages"`
		}
		if err := json.Unmarshal(up, &req); err != nil {
			t.Fatalf("day %d: the upstream's request: %v", day, err)
		}
		var prompts []string
		for _, bl := range req.System {
			if !strings.HasPrefix(bl.Text, "x-anthropic-billing-header:") && !strings.HasPrefix(bl.Text, "Summary of the earlier conversation") {
				prompts = append(prompts, bl.Text)
			}
		}
		switch {
		case len(prompts) == 1 && prompts[0] == fmt.Sprintf("Today is day %d.", day) && !strings.Contains(string(req.Messages), "Today is day"):
			current++
		case first == "":
			first = fmt.Sprintf("day %d: the upstream's system prompt %q", day, prompts)
		}
		day++
		return msg.Content
	}
	for turn := 1; turn <= turns; turn++ {
		if turn%3 == 0 {
			a.user(text(fmt.Sprintf("please run make test-%d", turn)))
			reply := send()
			a.user(map[string]any{"type": "tool_result", "tool_use_id": reply[2]["id"], "content": "ok  pkg/cache 0.2s"}, text("and now?"))
			send()
		} else {
			a.user(text("What should I do next? " + strings.Repeat("Tell me in plain words, please. ", 5)))
			send()
		}
	}
	e.fake.mu.Lock()
	invalid := e.fake.invalid
	e.fake.mu.Unlock()
	ctx := context.Background()
	reps, err := e.store.Reports(ctx, "days", 100000)
	if err != nil {
		t.Fatal(err)
	}
	applied, ineffective := 0, 0
	for _, r := range reps {
		switch r.Status {
		case memory.StatusApplied:
			applied++
		case memory.StatusIneffective:
			ineffective++
		}
	}
	h, err := e.store.History(ctx, "days")
	if err != nil {
		t.Fatal(err)
	}
	appended := 0
	for _, m := range h {
		appended += m.Tokens
	}
	bound := (appended+limit/4-1)/(limit/4) + 2
	t.Logf("the day's prompt alone the system prompt at %d/%d requests; %d compactions (%d applied, %d ineffective; %d in a turn) for %d appended tokens (bound %d); first failure: %s",
		current, requests, len(reps), applied, ineffective, compacted, appended, bound, first)
	if current != requests || invalid != nil {
		t.Errorf("the day's prompt alone at %d/%d requests, invalid %v: %s", current, requests, invalid, first)
	}
	if len(reps) > bound || ineffective > 0 || applied == 0 {
		t.Errorf("%d compactions (%d applied, %d ineffective), want some, within %d and none ineffective", len(reps), applied, ineffective, bound)
	}
}
