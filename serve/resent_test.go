package serve_test

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/http"
	"testing"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/serve"
	"github.com/memcascade/memcascade/serve/anthropic"
	"github.com/memcascade/memcascade/serve/chatcompletions"
)

// An agent resends its whole history each turn: the proxy parses each request against the
// thread's latest one, in every dialect, taking what it resends with the same bytes from it
// rather than reading it again, turn after turn (the turns that append what the thread already
// ends with keep the request as the latest too); the bytes it keeps are counted without
// measuring the thread again.
func TestResentParsedAgainstLatest(t *testing.T) {
	t.Parallel()
	for _, sh := range turnShapes {
		t.Run(sh.name, func(t *testing.T) {
			t.Parallel()
			up := answering(t)
			e := newEnv(t, envOptions{server: func(s *serve.Server) { s.Upstream = up.URL + "/v1" }})
			path := "/t/resent/v1" + sh.route
			var elems [][]byte
			add := func(role, text string) {
				el, _ := json.Marshal(map[string]string{"role": role, "content": text})
				elems = append(elems, el)
			}
			for turn := range 4 {
				add("user", fmt.Sprintf("question %d", turn))
				body := sh.body(elems)
				prev := e.srv.PrevSent("resent", sh.dialect)
				if turn > 0 {
					if prev == nil {
						t.Fatalf("turn %d: no request of the thread kept to parse it against", turn)
					}
					got, err := sh.dialect.Parse(body, prev)
					if err != nil {
						t.Fatal(err)
					}
					if got.Same != len(prev.Msgs) || got.Same == 0 {
						t.Errorf("turn %d: %d messages taken from the latest request, want all %d it sent", turn, got.Same, len(prev.Msgs))
					}
				}
				code, out, _ := e.post(path, string(body))
				if code != http.StatusOK {
					t.Fatalf("turn %d: %d %s", turn, code, out)
				}
				reply, ok := sh.reply([]byte(out))
				if !ok {
					t.Fatalf("turn %d: not a reply: %s", turn, out)
				}
				add("assistant", reply)
			}
			if got, want := len(e.history("resent")), 9; got != want {
				t.Errorf("%d messages stored, want %d", got, want)
			}
			// What the server keeps of the thread is counted as it grows, turn by turn: the
			// count is what measuring it all again gives.
			if counted, measured := e.srv.Measured(); counted != measured || counted == 0 {
				t.Errorf("the server counts %d bytes kept, %d measured", counted, measured)
			}
		})
	}
}

// Claude Code puts cache_control on its newest message and takes it off when it sends the
// message again: the messages the proxy keeps of its latest request, which the next request
// takes for the messages it resends with the same bytes (and the upstream body is written
// from), are that request's own, not the history's equal ones stored with an earlier
// cache_control.
func TestResentKeepsTheRequestsOwn(t *testing.T) {
	t.Parallel()
	up := answering(t)
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.Upstream = up.URL + "/v1" }})
	sh := turnShapes[1]
	if sh.name != "anthropic" {
		t.Fatalf("shape %q, want anthropic", sh.name)
	}
	var elems [][]byte
	for turn := range 4 {
		// The newest message alone has cache_control: the one before is sent again without it.
		if n := len(elems); n > 1 {
			elems[n-2] = bytes.Replace(elems[n-2], []byte(`,"cache_control":{"type":"ephemeral"}`), nil, 1)
		}
		elems = append(elems, fmt.Appendf(nil, `{"role":"user","content":[{"type":"text","text":"question %d","cache_control":{"type":"ephemeral"}}]}`, turn))
		code, out, _ := e.post("/t/cached/v1/messages", string(sh.body(elems)))
		if code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", turn, code, out)
		}
		reply, _ := sh.reply([]byte(out))
		el, _ := json.Marshal(map[string]string{"role": "assistant", "content": reply})
		elems = append(elems, el)
	}
	prev := e.srv.PrevSent("cached", anthropic.Dialect{})
	if prev == nil {
		t.Fatal("no request kept")
	}
	cached := 0
	for _, m := range prev.Msgs {
		if bytes.Contains(m.Extra[anthropic.Key], []byte("cache_control")) {
			cached++
		}
	}
	if cached != 1 {
		t.Errorf("%d of the kept request's messages have cache_control, want its newest one alone", cached)
	}
}

// A Chat Completions agent that resends its whole history each turn: each request's messages
// extend the previous request's in place (dialect.NewSent), turn after turn, rather than
// copying what it resends, and the history and the bytes counted are as before.
func TestResentExtendedInPlace(t *testing.T) {
	t.Parallel()
	up := answering(t)
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.Upstream = up.URL + "/v1" }})
	sh := turnShapes[0]
	if sh.name != "chat" {
		t.Fatalf("shape %q, want chat", sh.name)
	}
	var elems [][]byte
	add := func(role, text string) {
		el, _ := json.Marshal(map[string]string{"role": role, "content": text})
		elems = append(elems, el)
	}
	for i := range 20 {
		add("user", fmt.Sprintf("step %d", i))
		add("assistant", fmt.Sprintf("done %d", i))
	}
	var first *chat.Message
	for turn := range 5 {
		add("user", fmt.Sprintf("question %d", turn))
		code, out, _ := e.post("/t/inplace/v1/chat/completions", string(sh.body(elems)))
		if code != http.StatusOK {
			t.Fatalf("turn %d: %d %s", turn, code, out)
		}
		reply, _ := sh.reply([]byte(out))
		add("assistant", reply)
		prev := e.srv.PrevSent("inplace", chatcompletions.Dialect{})
		if prev == nil || len(prev.Msgs) != len(elems) { // the system prompt, and elems less the reply
			t.Fatalf("turn %d: kept request of %d messages, want %d", turn, len(prev.MsgsOrNil()), len(elems))
		}
		if turn == 0 {
			first = &prev.Msgs[0]
		} else if &prev.Msgs[0] != first {
			t.Errorf("turn %d: the request's messages are a copy, not the first request's extended", turn)
		}
	}
	if got, want := len(e.history("inplace")), len(elems)+1; got != want {
		t.Errorf("%d messages stored, want %d", got, want)
	}
	if counted, measured := e.srv.Measured(); counted != measured || counted == 0 {
		t.Errorf("the server counts %d bytes kept, %d measured", counted, measured)
	}
}
