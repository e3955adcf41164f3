package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/compact"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
)

// turnBody is a chat completions request of msgs.
func turnBody(t *testing.T, msgs []chat.Message) string {
	t.Helper()
	b, err := json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs})
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// replyOf returns choices[0].message of a chat completion.
func replyOf(t *testing.T, body string) chat.Message {
	t.Helper()
	var r struct {
		Choices []struct {
			Message chat.Message `json:"message"`
		} `json:"choices"`
	}
	if err := json.Unmarshal([]byte(body), &r); err != nil || len(r.Choices) == 0 {
		t.Fatalf("not a chat completion: %s", body)
	}
	return r.Choices[0].Message
}

func encoded(t *testing.T, msgs []chat.Message) string {
	t.Helper()
	b, err := json.Marshal(msgs)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// The proxy keeps each thread's history and active context between turns and sends the model
// the active context it keeps: what another process does to the thread between two turns (a
// compaction, a pin, an append) is seen at the next turn, as a Store on the same database that
// the proxy does not know of does it.
func TestKeptThreadSeesOtherProcess(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	other, err := memory.Open(ctx, e.dbName)
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	path := "/t/kept/v1/chat/completions"
	msgs := []chat.Message{chat.TextMessage("system", "You are terse.")}
	turn := func(i int) (int, string) {
		t.Helper()
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("question %d about order W%06d %s", i, i, strings.Repeat("detail ", 30))))
		code, body, _ := e.post(path, turnBody(t, msgs))
		if code == http.StatusOK {
			msgs = append(msgs, replyOf(t, body))
		}
		return code, body
	}
	// What the upstream got at the latest turn must be the thread's active context as the
	// other Store reads it, less the reply stored since.
	sentIsActive := func(when string) {
		t.Helper()
		a, err := other.Active(ctx, "kept")
		if err != nil {
			t.Fatal(err)
		}
		want := a.Messages()
		want = want[:len(want)-1]
		e.up.mu.Lock()
		got := e.up.lastMsgs
		e.up.mu.Unlock()
		if g, w := encoded(t, got), encoded(t, want); g != w {
			t.Fatalf("%s: the upstream got\n%s\nwant the active context\n%s", when, g, w)
		}
	}
	for i := 1; i <= 6; i++ {
		if code, body := turn(i); code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", i, code, body)
		}
	}
	sentIsActive("before any other process")

	// A compaction by another process.
	limit := 400
	oc := compact.New(other, e.srv.Compactor.Summarizer, e.srv.Compactor.Settings)
	rep, err := oc.Compact(ctx, "kept", compact.Options{Force: true, Override: compact.ThreadSettings{TokenLimit: &limit}})
	if err != nil || rep.Status != memory.StatusApplied {
		t.Fatalf("compaction by another store: %+v, %v", rep, err)
	}
	if code, body := turn(7); code != http.StatusOK {
		t.Fatalf("turn 7: %d %s", code, body)
	}
	sentIsActive("after a compaction by another store")
	if !strings.Contains(encoded(t, e.up.lastMsgs), "Summary") && len(e.up.lastMsgs) >= len(msgs)-1 {
		t.Fatalf("the upstream got the whole history (%d messages) after the compaction", len(e.up.lastMsgs))
	}

	// A pin by another process: message 3 (a summarized one) comes back in the context.
	if _, err := other.Pin(ctx, "kept", 3, compact.PinBudget(compact.Settings{})); err != nil {
		t.Fatal(err)
	}
	if code, body := turn(8); code != http.StatusOK {
		t.Fatalf("turn 8: %d %s", code, body)
	}
	sentIsActive("after a pin by another store")

	// An append by another process: the agent's resent history lacks it, so the agent's
	// conversation is no longer the thread's: a new segment starts with the agent's, and the
	// thread as it was (the other message with it) is kept under the archive's name.
	if _, err := other.Append(ctx, "kept", []chat.Message{chat.TextMessage("user", "from elsewhere")}, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	n := len(msgs)
	code, body := turn(9)
	if code != http.StatusOK {
		t.Fatalf("after an append by another store: %d %s, want a new segment", code, body)
	}
	if h := e.history("kept"); len(h) != len(msgs) || h[len(h)-1] != "assistant: reply 9" || slices.Contains(h, "user: from elsewhere") {
		t.Fatalf("the new segment: %d messages, last %q, want the agent's %d", len(h), h[len(h)-1], len(msgs))
	}
	threads, err := e.store.Threads(ctx)
	if err != nil {
		t.Fatal(err)
	}
	archived := false
	for _, th := range threads {
		if strings.HasPrefix(th.ID, "kept.segment-") {
			h := e.history(th.ID)
			archived = len(h) == n+1 && h[n] == "user: from elsewhere"
		}
	}
	if !archived {
		t.Fatalf("no archive of the thread as it was, with the other store's message: %+v", threads)
	}
}

// Turn after turn, with compactions in the background, the upstream gets exactly the active
// context the store reads, and each message is stored once.
func TestKeptContextIsTheStoredOne(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{limit: 700})
	ctx := context.Background()
	path := "/t/follow/v1/chat/completions"
	msgs := []chat.Message{chat.TextMessage("system", "You are terse.")}
	compacted := 0
	for i := 1; i <= 30; i++ {
		e.srv.WaitBackground()
		a, err := e.store.Active(ctx, "follow")
		if err != nil && i > 1 {
			t.Fatal(err)
		}
		if a.Summary != 0 {
			compacted++
		}
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("question %d about flight HAT%03d %s", i, i, strings.Repeat("words ", 20))))
		code, body, h := e.post(path, turnBody(t, msgs))
		if code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", i, code, body)
		}
		if h.Get(serve.CompactionHeader) == "" && i > 1 {
			want := append(a.Messages(), msgs[len(msgs)-1])
			if g, w := encoded(t, e.up.lastMsgs), encoded(t, want); g != w {
				t.Fatalf("turn %d: the upstream got\n%s\nwant\n%s", i, g, w)
			}
		}
		msgs = append(msgs, replyOf(t, body))
	}
	if compacted == 0 {
		t.Fatal("no compaction ran: the test did not test the kept context after one")
	}
	if got := len(e.history("follow")); got != len(msgs) {
		t.Fatalf("%d messages stored, want %d", got, len(msgs))
	}
}

type wordCounter struct{}

func (wordCounter) Encoding() string                  { return "words-v1" }
func (wordCounter) CountText(s string) int            { return len(strings.Fields(s)) }
func (w wordCounter) CountMessage(m chat.Message) int { return 2 + w.CountText(m.Text()) }
func (w wordCounter) CountMessages(ms []chat.Message) int {
	n := 0
	for _, m := range ms {
		n += w.CountMessage(m)
	}
	return n
}
func (wordCounter) CountTools([]chat.Tool) int { return 0 }

// A turn whose thread the server cannot count (its tokenizer is another host's) is answered
// with an error naming it, as any error reading the thread is: the server keeps nothing of it.
func TestUncountableThreadAnswered(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	ctx := context.Background()
	other, err := memory.Open(ctx, e.dbName, memory.OpenOptions{Options: memory.Options{Counter: wordCounter{}}})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	hi := []chat.Message{chat.TextMessage("user", "hello there")}
	if _, err := other.Append(ctx, "words", hi, memory.AppendOptions{}); err != nil {
		t.Fatal(err)
	}
	code, body, _ := e.post("/t/words/v1/chat/completions", turnBody(t, hi)) // nothing new to append
	if code != http.StatusInternalServerError || !strings.Contains(body, "words-v1") {
		t.Fatalf("%d %s: want 500 naming the encoding", code, body)
	}
}
