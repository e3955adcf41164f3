package serve_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"runtime"
	"runtime/metrics"
	"slices"
	"strings"
	"testing"
	"time"

	openai "github.com/sashabaranov/go-openai"

	"github.com/memcascade/memcascade/serve"
)

// sse writes each chunk as one server-sent event and flushes it.
func sse(w http.ResponseWriter, chunks ...string) {
	if w.Header().Get("Content-Type") == "" {
		w.Header().Set("Content-Type", "text/event-stream")
	}
	for _, c := range chunks {
		fmt.Fprintf(w, "data: %s\n\n", c)
	}
	w.(http.Flusher).Flush()
}

const (
	chunkRole   = `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	chunkText   = `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"Hello"},"finish_reason":null}]}`
	chunkFinish = `{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}`
)

func chunkCall(index int, id string) string {
	return fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"tool_calls":[{"index":%d,"id":%q,"type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":null}]}`, index, id)
}

const streamRequest = `{"model":"gpt-4o","stream":true,"messages":[{"role":"user","content":"hi"}]}`

// errorEvent returns error.code of the stream's error event, "" when it has none.
func errorEvent(t *testing.T, body string) string {
	t.Helper()
	_, ev, ok := strings.Cut(body, `data: {"error":`)
	if !ok {
		return ""
	}
	ev, _, _ = strings.Cut(`{"error":`+ev, "\n")
	return errorCode(t, ev)
}

// A stream that is not stored never ends as if it were: the client gets an error event in
// OpenAI's shape and no [DONE], and nothing of the reply is stored. The hostile upstreams:
// a tool call without an id (not storable), a stream cut or ended early, a tool-call index
// of 5,000,000 or -1, a line over the line limit, a stream over the reply limit.
func TestStreamNotStoredEndsWithError(t *testing.T) {
	t.Parallel()
	cases := []struct {
		name string
		raw  func(w http.ResponseWriter, body []byte)
		code string
	}{
		{"tool call without id", func(w http.ResponseWriter, body []byte) {
			sse(w, chunkRole, chunkCall(0, ""), `{"choices":[{"index":0,"delta":{},"finish_reason":"tool_calls"}]}`, "[DONE]")
		}, "reply_not_stored"},
		{"cut", func(w http.ResponseWriter, body []byte) {
			sse(w, chunkRole, chunkText)
			conn, buf, err := http.NewResponseController(w).Hijack()
			if err == nil {
				buf.Flush()
				conn.Close() // mid-body: the chunked encoding never ends
			}
		}, "upstream_stream_broken"},
		{"ended before its last chunk", func(w http.ResponseWriter, body []byte) {
			sse(w, chunkRole, chunkText)
		}, "upstream_stream_broken"},
		{"huge tool-call index", func(w http.ResponseWriter, body []byte) {
			sse(w, chunkRole, chunkCall(5000000, "call_1"), chunkFinish, "[DONE]")
		}, "bad_upstream_stream"},
		{"negative tool-call index", func(w http.ResponseWriter, body []byte) {
			sse(w, chunkRole, chunkCall(-1, "call_1"), chunkFinish, "[DONE]")
		}, "bad_upstream_stream"},
		{"line over the limit", func(w http.ResponseWriter, body []byte) {
			sse(w, chunkRole, `{"choices":[{"index":0,"delta":{"content":"`+strings.Repeat("x", serve.MaxSSELineBytes)+`"}}]}`, chunkFinish, "[DONE]")
		}, "upstream_stream_broken"},
		{"stream over the reply limit", func(w http.ResponseWriter, body []byte) {
			sse(w, chunkRole)
			for i := 0; i < 200; i++ {
				sse(w, chunkText)
			}
			sse(w, chunkFinish, "[DONE]")
		}, "upstream_stream_broken"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := newEnv(t, envOptions{server: func(s *serve.Server) { s.MaxReplyBytes = 16 << 10 }})
			e.up.set(func(u *upstream) { u.raw = tc.raw })
			code, body, _ := e.post("/t/s/v1/chat/completions", streamRequest)
			if code != 200 || strings.Contains(body, "[DONE]") || errorEvent(t, body) != tc.code {
				t.Fatalf("%d, error event %q, want code %s and no [DONE]:\n%.400s", code, errorEvent(t, body), tc.code, body)
			}
			if got, want := e.history("s"), []string{"user: hi"}; !slices.Equal(got, want) {
				t.Fatalf("history %q, want %q", got, want)
			}
		})
	}
}

// go-openai raises on the error event that ends a cut stream, where it used to see io.EOF.
func TestGoClientRaisesOnCutStream(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.up.set(func(u *upstream) {
		u.raw = func(w http.ResponseWriter, body []byte) { sse(w, chunkRole, chunkText) }
	})
	stream, err := e.client("cut", "k").CreateChatCompletionStream(context.Background(), openai.ChatCompletionRequest{
		Model: "gpt-4o", Stream: true, Messages: []openai.ChatCompletionMessage{{Role: "user", Content: "hi"}}})
	if err != nil {
		t.Fatal(err)
	}
	defer stream.Close()
	for {
		_, err = stream.Recv()
		if err != nil {
			break
		}
	}
	var apiErr *openai.APIError
	if !errors.As(err, &apiErr) || !strings.Contains(apiErr.Message, "broke off") && !strings.Contains(apiErr.Message, "ended before") {
		t.Fatalf("Recv ended with %v, want the proxy's error event", err)
	}
}

// What the upstream sends after [DONE] is not read nor passed on: the reply is stored and the
// client gets [DONE] at once, however much follows.
func TestStreamBytesAfterDone(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.up.set(func(u *upstream) {
		u.raw = func(w http.ResponseWriter, body []byte) {
			sse(w, chunkRole, chunkText, chunkFinish, "[DONE]")
			junk := []byte("data: " + strings.Repeat("j", 1<<20) + "\n\n")
			for i := 0; i < 256; i++ { // 256 MiB, until the proxy stops reading
				if _, err := w.Write(junk); err != nil {
					return
				}
			}
		}
	})
	start := time.Now()
	code, body, _ := e.post("/t/after/v1/chat/completions", streamRequest)
	if code != 200 || !strings.HasSuffix(body, "data: [DONE]\n\n") || len(body) > 4096 {
		t.Fatalf("%d, %d bytes ending %q, want the stream ending at [DONE]", code, len(body), body[max(0, len(body)-40):])
	}
	if got, want := e.history("after"), []string{"user: hi", "assistant: Hello"}; !slices.Equal(got, want) {
		t.Fatalf("history %q, want %q", got, want)
	}
	t.Logf("answered in %v", time.Since(start))
}

// A refusal is stored as the model gave it, streamed or not: content null and the refusal
// text, not an empty assistant message.
func TestRefusalStored(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{})
	e.up.set(func(u *upstream) {
		u.raw = func(w http.ResponseWriter, body []byte) {
			var req struct{ Stream bool }
			json.Unmarshal(body, &req)
			if !req.Stream {
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":null,"refusal":"No, not that."},"finish_reason":"stop"}]}`)
				return
			}
			w.Header().Set("Content-Type", "text/event-stream")
			sse(w, `{"choices":[{"index":0,"delta":{"role":"assistant","content":null,"refusal":""},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{"refusal":"I can't "},"finish_reason":null}]}`,
				`{"choices":[{"index":0,"delta":{"refusal":"help with that."},"finish_reason":null}]}`,
				chunkFinish, "[DONE]")
		}
	})
	if code, body, _ := e.post("/t/no/v1/chat/completions", streamRequest); code != 200 || !strings.HasSuffix(body, "[DONE]\n\n") {
		t.Fatalf("streamed: %d %s", code, body)
	}
	if code, body, _ := e.post("/t/no/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":null,"refusal":"I can't help with that."},{"role":"user","content":"please"}]}`); code != 200 {
		t.Fatalf("not streamed: %d %s", code, body)
	}
	h, err := e.store.History(context.Background(), "no")
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, m := range h {
		got = append(got, fmt.Sprintf("%s content=%s refusal=%s", m.Message.Role, m.Message.Content, m.Message.Extra["refusal"]))
	}
	want := []string{
		`user content="hi" refusal=`,
		`assistant content=null refusal="I can't help with that."`,
		`user content="please" refusal=`,
		`assistant content=null refusal="No, not that."`,
	}
	if !slices.Equal(got, want) {
		t.Fatalf("stored:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

// One event of many data lines is bounded as a whole, apart from the line bound: an event of
// 48 MiB in lines of 4 KB, each a chunk whose text the reply would hold, ends at
// MaxSSEEventBytes (1 MiB here) with an error event and no [DONE], nothing stored, and the
// process's heap grows by far less than the event (the relay holds a line at a time, the
// reply what the bound lets through). Events that add up to more than the bound, each under
// it, are relayed and stored.
func TestStreamEventBound(t *testing.T) {
	const bound = 1 << 20
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.MaxSSEEventBytes = bound }})
	// A first request loads what the server loads once (the tokenizer's ranks, some 20 MiB),
	// so that the heap measured below is the relay's, whichever test ran before this one.
	if code, body, _ := e.post("/t/warm/v1/chat/completions", streamRequest); code != 200 {
		t.Fatalf("a first request: %d %.300s", code, body)
	}
	line := []byte(`data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("y", 4000) + `"},"finish_reason":null}]}` + "\n")
	e.up.set(func(u *upstream) {
		u.raw = func(w http.ResponseWriter, body []byte) {
			sse(w, chunkRole)
			for n := 0; n < 48<<20; n += len(line) { // one event: no blank line
				if _, err := w.Write(line); err != nil {
					return // the proxy stopped reading
				}
			}
			io.WriteString(w, "\n")
			sse(w, chunkFinish, "[DONE]")
		}
	})
	peak := heapPeak(t)
	code, body, _ := e.post("/t/ev/v1/chat/completions", streamRequest)
	grew := peak()
	if code != 200 || strings.Contains(body, "[DONE]") || errorEvent(t, body) != "upstream_stream_broken" ||
		!strings.Contains(body, fmt.Sprintf("an event of the stream is over %d bytes", bound)) {
		t.Fatalf("%d, error event %q, want code upstream_stream_broken naming the event bound and no [DONE]:\n%.300s", code, errorEvent(t, body), body[max(0, len(body)-300):])
	}
	if len(body) > 2*bound {
		t.Fatalf("the client got %d bytes of the event, want at most about the bound (%d)", len(body), bound)
	}
	if got, want := e.history("ev"), []string{"user: hi"}; !slices.Equal(got, want) {
		t.Fatalf("history %q, want %q", got, want)
	}
	t.Logf("heap grew by at most %.1f MiB during the request", float64(grew)/(1<<20))
	if grew > 16<<20 {
		t.Fatalf("the heap grew by %d bytes during a 48 MiB event bounded to %d", grew, bound)
	}

	// Many events, together over the bound, each under it. Their text is words, not one run of
	// a letter: the reply is stored and counted whole, and 2 MiB of "y" would be one pre-token
	// the tokenizer merges at length (20 s of the race run), which this test is not about.
	words := []byte(`data: {"choices":[{"index":0,"delta":{"content":"` + strings.Repeat("y ", 2000) + `"},"finish_reason":null}]}` + "\n")
	e.up.set(func(u *upstream) {
		u.raw = func(w http.ResponseWriter, body []byte) {
			sse(w, chunkRole)
			for n := 0; n < 2*bound; n += len(words) + 1 {
				w.Write(words)
				io.WriteString(w, "\n")
			}
			sse(w, chunkFinish, "[DONE]")
		}
	})
	code, body, _ = e.post("/t/ok/v1/chat/completions", streamRequest)
	if code != 200 || !strings.HasSuffix(body, "data: [DONE]\n\n") {
		t.Fatalf("events under the bound: %d, ending %q", code, body[max(0, len(body)-200):])
	}
	if h := e.history("ok"); len(h) != 2 || len(h[1]) < 2*bound/len(words)*4000 {
		t.Fatalf("events under the bound: %d messages stored, want the user's and the whole reply", len(h))
	}
}

// heapPeak samples the bytes of live and unswept heap objects every millisecond from now; the
// function it returns stops and gives the peak over the first sample.
func heapPeak(t *testing.T) func() uint64 {
	t.Helper()
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 { metrics.Read(sample); return sample[0].Value.Uint64() }
	base := read()
	stop, done := make(chan struct{}), make(chan uint64)
	go func() {
		var top uint64
		for {
			top = max(top, read())
			select {
			case <-stop:
				done <- top
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	return func() uint64 {
		close(stop)
		top := <-done
		if top < base {
			return 0
		}
		return top - base
	}
}
