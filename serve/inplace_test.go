package serve_test

import (
	"encoding/json"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/serve"
	"github.com/memcascade/memcascade/serve/chatcompletions"
)

// inplaceBody is a Chat Completions request of the system prompt then msgs ("role: text").
func inplaceBody(msgs []string) string {
	var b strings.Builder
	b.WriteString(`{"model":"gpt-4o","messages":[{"role":"system","content":"You are a coding agent."}`)
	for _, m := range msgs {
		role, text, _ := strings.Cut(m, ": ")
		el, _ := json.Marshal(map[string]string{"role": role, "content": text})
		b.WriteString(",")
		b.Write(el)
	}
	b.WriteString(`]}`)
	return b.String()
}

// upstreamTexts is the "role: text" of each message of a Chat Completions body.
func upstreamTexts(t *testing.T, body []byte) []string {
	t.Helper()
	var r struct {
		Messages []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
	}
	if err := json.Unmarshal(body, &r); err != nil {
		t.Fatalf("upstream body: %v: %s", err, body)
	}
	out := make([]string, len(r.Messages))
	for i, m := range r.Messages {
		out[i] = m.Role + ": " + m.Content
	}
	return out
}

// Requests that extend the thread's latest one in place (dialect.NewSent) each forward their
// own messages upstream, whatever else was parsed against the same latest request: two at once
// that add different messages, a retry of the same body, one that changes the last message,
// one that rewrites an early message, each then extended again (run with -race).
func TestResentInPlaceOwnMessages(t *testing.T) {
	t.Parallel()
	up, bodies := recording(t)
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.Upstream = up.URL + "/v1" }})
	const path = "/t/inplace/v1/chat/completions"
	seen := 0
	// turn posts msgs and checks the upstream got them after the system prompt; it returns
	// msgs and the reply.
	turn := func(what string, msgs []string) []string {
		t.Helper()
		code, out, _ := e.post(path, inplaceBody(msgs))
		if code != http.StatusOK {
			t.Fatalf("%s: %d %s", what, code, out)
		}
		bs := bodies()
		if len(bs) != seen+1 {
			t.Fatalf("%s: %d upstream requests, want %d", what, len(bs), seen+1)
		}
		seen++
		got := upstreamTexts(t, bs[len(bs)-1])
		if want := append([]string{"system: You are a coding agent."}, msgs...); !slices.Equal(got, want) {
			t.Fatalf("%s: upstream got\n%q\nwant\n%q", what, got, want)
		}
		var r struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(out), &r) != nil || len(r.Choices) == 0 {
			t.Fatalf("%s: not a reply: %s", what, out)
		}
		return append(slices.Clip(msgs), "assistant: "+r.Choices[0].Message.Content)
	}
	var msgs []string
	inPlace := 0
	var first *chat.Message
	for i := range 20 {
		msgs = turn(fmt.Sprint("turn ", i), append(msgs, fmt.Sprint("user: question ", i)))
		prev := e.srv.PrevSent("inplace", chatcompletions.Dialect{})
		if prev == nil || len(prev.Msgs) == 0 {
			t.Fatalf("turn %d: no request kept", i)
		}
		if &prev.Msgs[0] == first {
			inPlace++
		}
		first = &prev.Msgs[0]
	}
	if inPlace < 10 {
		t.Fatalf("%d of 19 turns extended the previous request in place: the test does not test that", inPlace)
	}
	// The same body twice: the retry is parsed against the first, which extended the latest.
	retry := append(slices.Clip(msgs), "user: retried")
	turn("first of a retry", retry)
	msgs = turn("retry", retry)
	// One that changes the last message of the previous one, then one that extends it.
	edited := append(slices.Clone(msgs[:len(msgs)-1]), "assistant: edited")
	msgs = turn("edited last", edited)
	msgs = turn("after the edit", append(msgs, "user: after the edit"))
	// One that rewrites an early message, then one that extends that.
	rewritten := slices.Clone(msgs)
	rewritten[3] = "assistant: rewritten"
	msgs = turn("rewritten", append(rewritten, "user: after the rewrite"))
	msgs = turn("after the rewrite", append(msgs, "user: next"))

	// Requests at once, each adding its own message to the same latest one.
	const n = 6
	var wg sync.WaitGroup
	codes, replies := make([]int, n), make([]string, n)
	for k := range n {
		wg.Go(func() {
			codes[k], replies[k], _ = e.post(path, inplaceBody(append(slices.Clip(msgs), fmt.Sprint("user: concurrent ", k))))
		})
	}
	wg.Wait()
	bs := bodies()
	if len(bs) != seen+n {
		t.Fatalf("%d upstream requests, want %d (codes %v)", len(bs), seen+n, codes)
	}
	got := map[string]bool{}
	for _, b := range bs[seen:] {
		texts := upstreamTexts(t, b)
		last := texts[len(texts)-1]
		if want := append(append([]string{"system: You are a coding agent."}, msgs...), last); !slices.Equal(texts, want) {
			t.Fatalf("a concurrent request's upstream body is\n%q\nwant\n%q", texts, want)
		}
		got[last] = true
	}
	for k := range n {
		if !got[fmt.Sprint("user: concurrent ", k)] {
			t.Fatalf("concurrent request %d never reached the upstream with its message (codes %v)", k, codes)
		}
	}
	seen += n
	// What is stored of them is a request's message followed by its own reply.
	hist := e.history("inplace")
	stored := 0
	for i, h := range hist {
		var k int
		if _, err := fmt.Sscanf(h, "user: concurrent %d", &k); err != nil {
			continue
		}
		stored++
		var r struct {
			Choices []struct {
				Message struct{ Content string } `json:"message"`
			} `json:"choices"`
		}
		if json.Unmarshal([]byte(replies[k]), &r) != nil || len(r.Choices) == 0 {
			t.Fatalf("concurrent request %d: not a reply: %s", k, replies[k])
		}
		if i+1 < len(hist) && hist[i+1] != "assistant: "+r.Choices[0].Message.Content {
			t.Fatalf("stored %q then %q; request %d was answered %q", h, hist[i+1], k, r.Choices[0].Message.Content)
		}
	}
	if stored == 0 {
		t.Fatalf("no concurrent request's message stored: %q", hist[len(hist)-4:])
	}
	// Each of them, extended again: its own messages, not another's.
	for k := range n {
		own := append(slices.Clip(msgs), fmt.Sprint("user: concurrent ", k), "assistant: a reply", fmt.Sprint("user: then ", k))
		turn(fmt.Sprint("after concurrent ", k), own)
	}
}
