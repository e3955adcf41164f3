package serve_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"net/http/httptest"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
)

// noticeSeen is what the fake upstream got in one request: the messages without serve's note,
// and the note (nil: none).
type noticeSeen struct {
	msgs []chat.Message
	note *chat.Message
}

// noticeRun runs an agent of 40 turns (its whole conversation resent each turn, a tool call
// every fifth turn) through serve with notice, at a limit the conversation outgrows several
// times, each background compaction waited for; it returns what the upstream got.
func noticeRun(t *testing.T, notice serve.Notice) (e *env, seen []noticeSeen, conv []chat.Message, all func() []noticeSeen) {
	t.Helper()
	e = newEnv(t, envOptions{limit: 3000, server: func(s *serve.Server) { s.Notice = notice }})
	var mu sync.Mutex
	all = func() []noticeSeen {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(seen)
	}
	e.up.set(func(u *upstream) {
		u.reply = func(n int, msgs []chat.Message) chat.Message {
			s := noticeSeen{msgs: msgs}
			if last := msgs[len(msgs)-1]; strings.Contains(last.Text(), serve.NoticePrefix) {
				s.msgs, s.note = msgs[:len(msgs)-1], &last
			}
			mu.Lock()
			seen = append(seen, s)
			mu.Unlock()
			if strings.HasPrefix(msgs[len(msgs)-1].Text(), "please run") || s.note != nil && strings.HasPrefix(msgs[len(msgs)-2].Text(), "please run") {
				m := chat.TextMessage("assistant", "")
				m.ToolCalls = []chat.ToolCall{{ID: fmt.Sprintf("call_%d", n), Type: "function", Function: chat.FunctionCall{Name: "sh", Arguments: `{"cmd":"make"}`}}}
				return m
			}
			return chat.TextMessage("assistant", fmt.Sprintf("reply %d: %s", n, strings.Repeat("the cache keeps warm entries; ", 6)))
		}
	})
	conv = []chat.Message{chat.TextMessage("system", "You are a coding agent.")}
	send := func(turn int) {
		t.Helper()
		body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": conv})
		status, b, _ := e.post("/t/notice/v1/chat/completions", string(body))
		if status != 200 {
			t.Fatalf("turn %d: %d %s", turn, status, b)
		}
		var resp struct {
			Choices []struct{ Message chat.Message } `json:"choices"`
		}
		if err := json.Unmarshal([]byte(b), &resp); err != nil || len(resp.Choices) == 0 {
			t.Fatalf("turn %d: %v %s", turn, err, b)
		}
		conv = append(conv, resp.Choices[0].Message)
		e.srv.WaitBackground()
	}
	for turn := 1; turn <= 40; turn++ {
		if turn%5 == 0 {
			conv = append(conv, chat.TextMessage("user", fmt.Sprintf("please run make test-%d", turn)))
			send(turn)
			call := conv[len(conv)-1].ToolCalls
			if len(call) != 1 {
				t.Fatalf("turn %d: the reply holds %d calls", turn, len(call))
			}
			res := chat.TextMessage("tool", strings.Repeat("ok  pkg/cache 0.2s\n", 15))
			res.ToolCallID = call[0].ID
			conv = append(conv, res)
			send(turn)
			continue
		}
		conv = append(conv, chat.TextMessage("user", fmt.Sprintf("Question %d: %s", turn, strings.Repeat("why does the build fail on port 8080? ", 8))))
		send(turn)
	}
	return e, all(), conv, all
}

var noticeRange = regexp.MustCompile(`messages (\d+) to (\d+) of its history`)

// TestNoticeOncePerCrossing: with serve.notice on, the upstream gets the note that the context
// will soon be compacted in exactly the requests whose context passes the mark (at_ratio of
// the trigger) after one under it, and the note of a compaction in the first request after
// each compaction applied, naming its range; the note is the request's last message, never
// in the next request, never stored (the history, which export --all prints, has none), and
// no turn is refused (the next request, without it, reconciles). Off by default: no note.
func TestNoticeOncePerCrossing(t *testing.T) {
	t.Run("off by default", func(t *testing.T) {
		t.Parallel()
		if (serve.Server{}).Notice.Enabled {
			t.Fatal("a Server's Notice is enabled by default")
		}
		_, seen, _, _ := noticeRun(t, serve.Notice{})
		for i, s := range seen {
			if s.note != nil {
				t.Fatalf("request %d has a note with notice off: %s", i+1, s.note.Text())
			}
		}
	})
	t.Run("on", func(t *testing.T) {
		t.Parallel()
		const ratio = serve.DefaultNoticeRatio // above target_ratio: a compaction brings the context back under
		e, seen, conv, all := noticeRun(t, serve.Notice{Enabled: true})
		ctx := context.Background()
		set := e.srv.Compactor.Settings.WithDefaults()
		mark := int(float64(set.Budget()) * set.TriggerRatio * ratio)
		counter, err := e.store.Counter("o200k_base")
		if err != nil {
			t.Fatal(err)
		}
		reps, err := e.store.Reports(ctx, "notice", 0)
		if err != nil {
			t.Fatal(err)
		}
		var applied []memory.Report // oldest first
		for _, r := range slices.Backward(reps) {
			if r.Status == memory.StatusApplied {
				applied = append(applied, r)
			}
		}
		if len(applied) < 2 {
			t.Fatalf("%d compactions applied, want several", len(applied))
		}
		// The crossings, from what the upstream got: a request over the mark after one under it
		// (or the first).
		armed, soon, compacted := true, 0, 0
		var ranges []string
		for i, s := range seen {
			tokens := counter.CountMessages(s.msgs)
			over := tokens > mark
			text := ""
			if s.note != nil {
				text = s.note.Text()
				if s.note.Role != "system" || !strings.HasPrefix(text, serve.NoticePrefix) {
					t.Errorf("request %d: the note is %s %q", i+1, s.note.Role, text)
				}
			}
			gotSoon := strings.Contains(text, "will soon be replaced by a summary")
			if gotSoon != (over && armed) {
				t.Errorf("request %d (%d tokens, mark %d, armed %v): soon note %v", i+1, tokens, mark, armed, gotSoon)
			}
			armed = !over
			if gotSoon {
				soon++
			}
			if m := noticeRange.FindStringSubmatch(text); m != nil {
				compacted++
				ranges = append(ranges, m[1]+"-"+m[2])
				// The summary it names is in this request, and the note was not in the one before.
				if !strings.Contains(text, "facts") && !strings.Contains(text, "fact of them") || !strings.Contains(text, "memory_search") {
					t.Errorf("request %d: the note says neither the facts dropped nor memory_search: %q", i+1, text)
				}
				if i > 0 && seen[i-1].note != nil && noticeRange.MatchString(seen[i-1].note.Text()) {
					t.Errorf("requests %d and %d both have a compaction's note", i, i+1)
				}
			}
		}
		var want []string
		for _, r := range applied {
			want = append(want, fmt.Sprintf("%d-%d", r.FromSeq, r.ToSeq))
		}
		if strings.Join(ranges, " ") != strings.Join(want, " ") {
			t.Errorf("the compactions' notes name %v, want one per compaction applied: %v", ranges, want)
		}
		if soon < 2 {
			t.Errorf("%d soon notes, want one per crossing, several", soon)
		}
		h, err := e.store.History(ctx, "notice")
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range h {
			if strings.Contains(m.Message.Text(), "memctl notice") {
				t.Fatalf("a note is stored: seq %d %q", m.Seq, m.Message.Text())
			}
		}
		if len(h) != 1+2*48 {
			t.Errorf("%d messages stored, want %d", len(h), 1+2*48)
		}
		// What the thread's model was told is in its metadata: the newest compaction.
		raw, err := e.store.ThreadMeta(ctx, "notice", serve.NoticeKey)
		if err != nil || !strings.Contains(string(raw), fmt.Sprintf(`"compaction":%d`, applied[len(applied)-1].ID)) {
			t.Errorf("the thread's notice state: %s %v", raw, err)
		}

		// A restart: another server on the store, with nothing kept, reads what the thread's
		// model was told from its metadata and does not tell it again.
		var told struct {
			Warned     bool
			Compaction int64
		}
		json.Unmarshal(raw, &told)
		v, err := e.store.Version(ctx, "notice")
		if err != nil || v.Compaction != told.Compaction {
			t.Fatalf("the thread's compaction %d, told %d (%v): the restart would show nothing", v.Compaction, told.Compaction, err)
		}
		again := &serve.Server{Store: e.store, Compactor: e.srv.Compactor, Upstream: e.up.URL(), Notice: serve.Notice{Enabled: true}}
		hs := httptest.NewServer(again.Handler())
		defer hs.Close()
		defer again.Shutdown(ctx)
		conv = append(conv, chat.TextMessage("user", "one more question"))
		body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": conv})
		resp, err := http.Post(hs.URL+"/t/notice/v1/chat/completions", "application/json", strings.NewReader(string(body)))
		if err != nil || resp.StatusCode != 200 {
			t.Fatalf("after the restart: %v %v", resp, err)
		}
		resp.Body.Close()
		after := all()[len(seen):]
		if len(after) != 1 {
			t.Fatalf("%d requests after the restart", len(after))
		}
		tokens := counter.CountMessages(after[0].msgs)
		if wantSoon := tokens > mark && !told.Warned; after[0].note != nil && !wantSoon || after[0].note == nil && wantSoon {
			t.Errorf("after the restart (%d tokens, mark %d, told %+v): want a note %v, got %q", tokens, mark, told, wantSoon, noteText(after[0].note))
		}

		t.Logf("%d requests, mark %d tokens: %d soon notes, %d compactions noted (%v)", len(seen), mark, soon, compacted, ranges)
	})
}

// noteText is a note's text, "" for none.
func noteText(m *chat.Message) string {
	if m == nil {
		return ""
	}
	return m.Text()
}
