package responses_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/internal/fakeupstream"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
)

// withoutNote is the request without serve's note, its last input item when it has one.
func withoutNote(r fakeupstream.Request) fakeupstream.Request {
	var body map[string]json.RawMessage
	var input []json.RawMessage
	if json.Unmarshal(r.Body, &body) != nil || json.Unmarshal(body["input"], &input) != nil || len(input) == 0 ||
		!bytes.Contains(input[len(input)-1], []byte(serve.NoticePrefix)) {
		return r
	}
	body["input"], _ = json.Marshal(input[:len(input)-1])
	r.Body, _ = json.Marshal(body)
	return r
}

var noteRange = regexp.MustCompile(`messages (\d+) to (\d+) of its history`)

// TestServeNotice: serve.notice through the Responses dialect, 30 turns of a Codex-like
// agent (tool calls, parallel ones, streams) at a limit it outgrows: the notes come as the
// request's last input item, a developer message, each in one request only (the soon note
// once per crossing at most, a compaction's once per compaction applied, naming its range);
// the upstream takes every request, no turn is refused, nothing of them is stored.
func TestServeNotice(t *testing.T) {
	t.Parallel()
	const window = 4000
	e := newEnv(t, 2400, fakeupstream.Options{Window: window, Reply: func(n int, r fakeupstream.Request) fakeupstream.Reply {
		return codexReply(n, withoutNote(r))
	}}, func(s *serve.Server) { s.Notice = serve.Notice{Enabled: true} })
	a := newAgent(e, "notice")
	for turn := 1; turn <= 30; turn++ {
		a.stream = turn%2 == 0
		switch {
		case turn%7 == 0:
			a.input = append(a.input, userItem(fmt.Sprintf("run both builds, turn %d", turn)))
			if n := a.answerCalls(a.send()); n != 2 {
				t.Fatalf("turn %d: %d calls", turn, n)
			}
			a.send()
		case turn%3 == 0:
			a.input = append(a.input, userItem(fmt.Sprintf("please run make test-%d", turn)))
			if n := a.answerCalls(a.send()); n != 1 {
				t.Fatalf("turn %d: %d calls", turn, n)
			}
			a.send()
		default:
			a.input = append(a.input, userItem(fmt.Sprintf("Question %d: %s", turn, strings.Repeat("why does the build fail on port 8080? ", 8))))
			a.send()
		}
	}
	soon, ranges := 0, map[string]int{}
	prev := ""
	for i, r := range e.fake.ModelRequests() {
		if r.Status != http.StatusOK {
			t.Errorf("request %d: %d", i+1, r.Status)
		}
		last := lastInput(r)
		c, _ := last["content"].([]any)
		text := ""
		if len(c) == 1 {
			text, _ = c[0].(map[string]any)["text"].(string)
		}
		if !strings.HasPrefix(text, serve.NoticePrefix) {
			if bytes.Contains(r.Body, []byte("memctl notice")) {
				t.Errorf("request %d: a note that is not its last item", i+1)
			}
			prev = ""
			continue
		}
		if last["type"] != "message" || last["role"] != "developer" || text == prev {
			t.Errorf("request %d: the note is %v (the one before %q)", i+1, last, prev)
		}
		prev = text
		if strings.Contains(text, "will soon be replaced") {
			soon++
		}
		if m := noteRange.FindStringSubmatch(text); m != nil {
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
	t.Logf("%d requests: %d soon notes, %d of %d compactions noted", len(e.fake.ModelRequests()), soon, len(ranges), applied)
}
