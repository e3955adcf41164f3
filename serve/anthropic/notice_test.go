package anthropic_test

import (
	"context"
	"encoding/json"
	"fmt"
	"regexp"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
)

var noteRange = regexp.MustCompile(`messages (\d+) to (\d+) of its history`)

// TestServeNotice: serve.notice through the Messages dialect, 30 turns of a Claude Code-like
// agent (tool rounds, streams) at a limit it outgrows: each note is a text block at the end of
// the request's last user message, after the agent's block with its cache_control (the API's
// checks of the fake pass: roles alternating, tool results first), in one request only (the
// soon note once per crossing at most, a compaction's once per compaction applied, naming
// its range); no turn is refused, nothing of them is stored.
func TestServeNotice(t *testing.T) {
	t.Parallel()
	const limit = 3000
	e := newEnv(t, limit, func(s *serve.Server) { s.Notice = serve.Notice{Enabled: true} })
	e.fake.set(func(f *fake) {
		f.window = limit
		f.reply = func(n int, last lastUser) []map[string]any {
			last.text, _, _ = strings.Cut(last.text, serve.NoticePrefix)
			r := toolReply(n, last)
			if len(r) == 1 {
				r[0]["text"] = r[0]["text"].(string) + ": " + strings.Repeat("the cache keeps warm entries; ", 10)
			}
			return r
		}
	})
	a := &agent{e: e, session: "notice"}
	for turn := 1; turn <= 30; turn++ {
		a.stream = turn%2 == 0
		if turn%3 == 0 {
			a.user(text(fmt.Sprintf("please run make test-%d", turn)))
			reply := a.send()
			a.user(map[string]any{"type": "tool_result", "tool_use_id": reply[2]["id"], "content": strings.Repeat("ok  pkg/cache 0.2s\n", 20)})
			a.send()
		} else {
			a.user(text(fmt.Sprintf("Question %d: %s", turn, strings.Repeat("why does the build fail on port 8080? ", 8))))
			a.send()
		}
	}
	e.fake.mu.Lock()
	reqs, invalid, refused := e.fake.requests, e.fake.invalid, e.fake.refused
	e.fake.mu.Unlock()
	if invalid != nil || refused != 0 || len(reqs) != 40 {
		t.Fatalf("%d requests answered, %d refused, invalid: %v", len(reqs), refused, invalid)
	}
	soon, ranges, prev := 0, map[string]int{}, ""
	for i, r := range reqs {
		var body struct {
			Messages []struct {
				Role    string
				Content json.RawMessage
			}
		}
		if err := json.Unmarshal(r.body, &body); err != nil {
			t.Fatal(err)
		}
		lastMsg := body.Messages[len(body.Messages)-1]
		var blocks []map[string]any
		json.Unmarshal(lastMsg.Content, &blocks)
		note := ""
		if len(blocks) > 1 {
			note, _ = blocks[len(blocks)-1]["text"].(string)
		}
		if !strings.HasPrefix(note, serve.NoticePrefix) {
			if strings.Contains(string(r.body), "memctl notice") {
				t.Errorf("request %d: a note that is not the last block of the last message", i+1)
			}
			prev = ""
			continue
		}
		if lastMsg.Role != "user" || blocks[len(blocks)-2]["cache_control"] == nil || note == prev {
			t.Errorf("request %d: the note in a %s message after %v (the one before %q)", i+1, lastMsg.Role, blocks[len(blocks)-2], prev)
		}
		prev = note
		if strings.Contains(note, "will soon be replaced") {
			soon++
		}
		if m := noteRange.FindStringSubmatch(note); m != nil {
			ranges[m[1]+"-"+m[2]]++
		}
	}
	reps, err := e.store.Reports(context.Background(), "notice", 0)
	if err != nil {
		t.Fatal(err)
	}
	applied := 0
	for _, r := range reps {
		if r.Status == memory.StatusApplied {
			applied++
		}
	}
	for k, n := range ranges {
		if n != 1 {
			t.Errorf("the note of the compaction of %s came %d times", k, n)
		}
	}
	if applied < 2 || len(ranges) < 1 || len(ranges) > applied || soon < 1 || soon > applied+1 {
		t.Errorf("%d compactions applied, %d noted (%v), %d soon notes", applied, len(ranges), ranges, soon)
	}
	for _, m := range e.history("notice") {
		if strings.Contains(m, "memctl notice") {
			t.Fatalf("a note is stored: %.120s", m)
		}
	}
	t.Logf("%d requests: %d soon notes, %d of %d compactions noted", len(reqs), soon, len(ranges), applied)
}
