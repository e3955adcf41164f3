package serve_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/serve"
)

// A request whose body would take the bytes in flight over the server's budget is answered
// 503 with Retry-After, whether its length is given or not, and goes through once the bytes
// are given back. A request holds its body and its parse, as much again: 12 KB of 16 KiB.
func TestInFlightBudget(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.MaxInFlightBytes = 16 << 10 }})
	hold, got := make(chan struct{}), make(chan struct{}, 4)
	e.up.set(func(u *upstream) { u.hold, u.got = hold, got })
	answer := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(answer) // before the server's shutdown, which waits for the held request
	big := func(thread string) string {
		return `{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("x", 6000) + `"}]}`
	}
	first := make(chan int, 1)
	go func() {
		code, _, _ := e.post("/t/a/v1/chat/completions", big("a"))
		first <- code
	}()
	<-got // the first request's 6 KB and their parse are held while the upstream answers
	client := &http.Client{Timeout: 5 * time.Second}
	for _, chunked := range []bool{false, true} {
		var body io.Reader = strings.NewReader(big("b"))
		if chunked {
			body = io.MultiReader(body) // no length known
		}
		req, _ := http.NewRequest(http.MethodPost, e.url+"/t/b/v1/chat/completions", body)
		req.Header.Set("Content-Type", "application/json")
		resp, err := client.Do(req)
		if err != nil {
			t.Fatalf("chunked %v: %v", chunked, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 503 || resp.Header.Get("Retry-After") != "1" || errorCode(t, string(b)) != "server_busy" {
			t.Fatalf("chunked %v: %d (Retry-After %q) %s, want 503 server_busy", chunked, resp.StatusCode, resp.Header.Get("Retry-After"), b)
		}
	}
	answer()
	if code := <-first; code != 200 {
		t.Fatalf("first request: %d", code)
	}
	if code, body, _ := e.post("/t/b/v1/chat/completions", big("b")); code != 200 {
		t.Fatalf("the refused request, retried: %d %s", code, body)
	}
	if n, _ := e.up.stats(); n != 2 {
		t.Fatalf("the upstream got %d requests, want 2", n)
	}
}

// A client that sends its body a byte at a time is answered 408 once ReadBodyTimeout is
// over, and its connection closed: it holds no connection for longer.
func TestSlowBodyDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.ReadBodyTimeout = 300 * time.Millisecond }})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	start := time.Now()
	io.WriteString(conn, "POST /t/slow/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n")
	go func() {
		for i := 0; i < 1000; i++ {
			if _, err := conn.Write([]byte(" ")); err != nil {
				return
			}
			time.Sleep(50 * time.Millisecond)
		}
	}()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
	if err != nil {
		t.Fatalf("no answer after %v: %v", time.Since(start), err)
	}
	b, _ := io.ReadAll(resp.Body)
	if resp.StatusCode != 408 || errorCode(t, string(b)) != "request_timeout" || !resp.Close {
		t.Fatalf("%d (close %v) %s, want 408 request_timeout and the connection closed", resp.StatusCode, resp.Close, b)
	}
	if d := time.Since(start); d > 3*time.Second {
		t.Fatalf("answered after %v", d)
	}
	if _, err := conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
		t.Fatalf("the connection is still open after the answer (%v): the client may trickle on", err)
	}
	if logs := e.logs.String(); strings.Count(logs, "request body cut") != 1 || !strings.Contains(logs, "remote="+conn.LocalAddr().String()) ||
		!strings.Contains(logs, "cut=too_slow") {
		t.Fatalf("the cut is not logged once with the client's address:\n%s", logs)
	}
}

// A client that stops after the first byte of its body, or sends none of it, is answered 408
// once ReadBodyStall passes without a byte, long before ReadBodyTimeout, its connection
// closed, and each cut logged once with the client's address. Before, it held its connection
// until ReadBodyTimeout (30 s by default): here 800 ms, against a stall of 50 ms.
func TestStalledBodyCut(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{server: func(s *serve.Server) {
		s.ReadBodyTimeout, s.ReadBodyStall = 800*time.Millisecond, 50*time.Millisecond
	}})
	var addrs []string
	for _, sent := range []string{"{", ""} {
		conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		addrs = append(addrs, conn.LocalAddr().String())
		start := time.Now()
		io.WriteString(conn, "POST /t/stall/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n"+sent)
		conn.SetReadDeadline(time.Now().Add(time.Second)) // a network deadline on the test's side
		resp, err := http.ReadResponse(bufio.NewReader(conn), nil)
		if err != nil {
			t.Fatalf("%q sent: no answer after %v: %v", sent, time.Since(start), err)
		}
		b, _ := io.ReadAll(resp.Body)
		d := time.Since(start)
		if resp.StatusCode != 408 || errorCode(t, string(b)) != "request_timeout" || !strings.Contains(string(b), "stalled: no byte of it for 50ms") || !resp.Close {
			t.Fatalf("%q sent: %d (close %v) %s, want 408 request_timeout, stalled, and the connection closed", sent, resp.StatusCode, resp.Close, b)
		}
		if d >= 600*time.Millisecond {
			t.Fatalf("%q sent: answered after %v, want soon after the stall of 50ms (the body's time is 800ms)", sent, d)
		}
		if _, err := conn.Read(make([]byte, 1)); err == nil || isTimeout(err) {
			t.Fatalf("%q sent: the connection is still open after the answer (%v)", sent, err)
		}
	}
	logs := e.logs.String()
	if n := strings.Count(logs, "request body cut"); n != 2 || strings.Count(logs, "cut=stalled") != 2 {
		t.Fatalf("%d cuts logged, want 2, stalled:\n%s", n, logs)
	}
	for _, a := range addrs {
		if !strings.Contains(logs, "remote="+a) {
			t.Fatalf("no cut logged for %s:\n%s", a, logs)
		}
	}
}

// A client that sends its headers a byte at a time has its connection closed once
// ReadHeaderTimeout is over, whatever it still sends.
func TestSlowHeadersDropped(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.ReadHeaderTimeout = 300 * time.Millisecond }})
	conn, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	io.WriteString(conn, "POST /t/slow/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n")
	stop := make(chan struct{})
	defer close(stop)
	go func() {
		for {
			select {
			case <-stop:
				return
			case <-time.After(50 * time.Millisecond):
			}
			if _, err := io.WriteString(conn, "X-Slow: 1\r\n"); err != nil {
				return
			}
		}
	}()
	conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	_, err = io.ReadAll(conn)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("the connection was still open after 5 s of slow headers")
	}
}

// A non-streamed reply over MaxReplyBytes is refused with 502 and not stored, and the proxy
// reads no more of it than the limit.
func TestJSONReplyOverLimit(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.MaxReplyBytes = 16 << 10 }})
	e.up.set(func(u *upstream) {
		u.raw = func(w http.ResponseWriter, body []byte) {
			w.Header().Set("Content-Type", "application/json")
			io.WriteString(w, `{"id":"c","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"`+strings.Repeat("x", 100<<10)+`"},"finish_reason":"stop"}]}`)
		}
	})
	code, body, _ := e.post("/t/big/v1/chat/completions", `{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`)
	if code != 502 || errorCode(t, body) != "bad_upstream_reply" || !strings.Contains(body, "over 16384 bytes") {
		t.Fatalf("%d %.300s, want 502 bad_upstream_reply", code, body)
	}
	if got, want := e.history("big"), []string{"user: hi"}; !slices.Equal(got, want) {
		t.Fatalf("history %q, want %q", got, want)
	}
}

// At the connection bound (MaxConns 2 here), a connection whose request is being answered is
// never closed: a new connection waits to be served until a connection is free, and then is.
// A connection that has sent nothing is closed for a new one once it has waited a second,
// the oldest first.
func TestConnectionBound(t *testing.T) {
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.MaxConns = 2 }})
	hold, got := make(chan struct{}), make(chan struct{}, 4)
	e.up.set(func(u *upstream) { u.hold, u.got = hold, got })
	answer := sync.OnceFunc(func() { close(hold) })
	t.Cleanup(answer)
	post := func(thread string, codes chan<- int) {
		client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
		resp, err := client.Post(e.url+"/t/"+thread+"/v1/chat/completions", "application/json",
			strings.NewReader(`{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}`))
		if err != nil {
			t.Errorf("%s: %v", thread, err)
			codes <- 0
			return
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		codes <- resp.StatusCode
	}
	codes := make(chan int, 3)
	go post("a", codes)
	go post("b", codes)
	<-got
	<-got // two requests held by the upstream: the bound is reached
	go post("c", codes)
	select {
	case code := <-codes:
		t.Fatalf("a request answered (%d) while both held ones were held", code)
	case <-got:
		t.Fatalf("a third request reached the upstream at the bound of 2 connections")
	case <-time.After(1500 * time.Millisecond): // c waits: no connection may be closed for it
	}
	answer()
	for i := 0; i < 3; i++ {
		if code := <-codes; code != 200 {
			t.Fatalf("request %d of 3: %d, want 200", i, code)
		}
	}

	// Two idle connections that sent nothing, the first one older: a new request closes it.
	dial := func() net.Conn {
		c, err := net.Dial("tcp", strings.TrimPrefix(e.url, "http://"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { c.Close() })
		return c
	}
	first := dial()
	time.Sleep(200 * time.Millisecond)
	second := dial()
	time.Sleep(1200 * time.Millisecond) // both waited over a second
	start := time.Now()
	go post("d", codes)
	if code := <-codes; code != 200 {
		t.Fatalf("a request at the bound of idle connections: %d", code)
	}
	t.Logf("answered in %v", time.Since(start))
	closed := func(c net.Conn) bool {
		c.SetReadDeadline(time.Now().Add(200 * time.Millisecond))
		_, err := c.Read(make([]byte, 1))
		return err == io.EOF
	}
	if !closed(first) || closed(second) {
		t.Fatalf("first closed %v, second closed %v: want the older one closed alone", closed(first), closed(second))
	}
}

func TestWindowLimit(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		window int
		ratio  float64
		want   int
	}{
		{128000, 1.1, 116363},
		{128000, 1, 128000},
		// An upstream that reports half the local count: the limit stays at its window.
		{128000, serve.MinTokenRatio, 128000},
		{300, 0.9, 300},
	} {
		if got := serve.WindowLimit(tc.window, tc.ratio); got != tc.want {
			t.Errorf("WindowLimit(%d, %v) = %d, want %d", tc.window, tc.ratio, got, tc.want)
		}
	}
}

func TestUpstreamBase(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{
		"":                                 "",
		"https://api.anthropic.com":        "https://api.anthropic.com/v1",
		"http://127.0.0.1:8080/":           "http://127.0.0.1:8080/v1",
		"http://127.0.0.1:11434/v1":        "http://127.0.0.1:11434/v1",
		"https://openrouter.ai/api/v1":     "https://openrouter.ai/api/v1",
		"https://g.example/v1beta/openai/": "https://g.example/v1beta/openai",
	} {
		if got := serve.UpstreamBase(in); got != want {
			t.Errorf("UpstreamBase(%q) = %q, want %q", in, got, want)
		}
	}
}

// isTimeout reports a network timeout (a deadline of the test's side passed).
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}

// What a request's parse holds counts against the bytes in flight as its body does: a body
// that fits the budget alone but not twice is answered 503, and nothing of it is stored.
func TestInFlightBudgetCountsParse(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.MaxInFlightBytes = 16 << 10 }})
	body := `{"model":"gpt-4o","messages":[{"role":"user","content":"` + strings.Repeat("x", 10000) + `"}]}`
	code, out, h := e.post("/t/p/v1/chat/completions", body)
	if code != 503 || h.Get("Retry-After") != "1" || errorCode(t, out) != "server_busy" {
		t.Fatalf("%d %s, want 503 server_busy", code, out)
	}
	if n, _ := e.up.stats(); n != 0 {
		t.Fatalf("the upstream got %d requests", n)
	}
}

// What a stream's relay holds, the reply it assembles for storing, counts against the bytes in
// flight: a reply that goes over them ends with an error event (server_busy) and no [DONE],
// and is not stored; the events before it were relayed as they came.
func TestStreamHeldCounts(t *testing.T) {
	t.Parallel()
	e := newEnv(t, envOptions{server: func(s *serve.Server) { s.MaxInFlightBytes = 256 << 10 }})
	chunk := fmt.Sprintf(`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":%q},"finish_reason":null}]}`, strings.Repeat("word ", 2000))
	raw := func(w http.ResponseWriter, body []byte) {
		sse(w, chunkRole)
		for range 100 { // 1 MB of text
			sse(w, chunk)
		}
		sse(w, chunkFinish, "[DONE]")
	}
	e.up.set(func(u *upstream) { u.raw = raw })
	code, out, _ := e.post("/t/s/v1/chat/completions", streamRequest)
	if code != 200 || errorEvent(t, out) != "server_busy" || strings.Contains(out, "[DONE]") || !strings.Contains(out, "word word") {
		t.Fatalf("%d %.300s; want the stream relayed then ended with a server_busy error event", code, out)
	}
	if h := e.history("s"); len(h) != 1 || h[0] != "user: hi" {
		t.Fatalf("stored: %q; want the request's message alone", h)
	}
	// Within the bound, the same stream is relayed and stored whole.
	e2 := newEnv(t, envOptions{server: func(s *serve.Server) { s.MaxInFlightBytes = 4 << 20 }})
	e2.up.set(func(u *upstream) { u.raw = raw })
	code, out, _ = e2.post("/t/s/v1/chat/completions", streamRequest)
	if code != 200 || errorEvent(t, out) != "" || !strings.Contains(out, "[DONE]") {
		t.Fatalf("within the bound: %d %.300s", code, out)
	}
	if h := e2.history("s"); len(h) != 2 || len(h[1]) < 1000000 {
		t.Fatalf("within the bound: %d messages stored, want the reply too", len(h))
	}
}
