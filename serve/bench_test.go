package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/internal/cputime"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
	"github.com/memcascade/memcascade/serve/anthropic"
	"github.com/memcascade/memcascade/serve/chatcompletions"
	"github.com/memcascade/memcascade/serve/dialect"
	"github.com/memcascade/memcascade/serve/responses"
)

// BenchmarkProxyOverhead measures the latency the proxy adds to one chat completion of a
// 200-message thread, with an upstream that answers at once: each request resends the whole
// 200-message history plus a new user message (what OpenAI's SDKs do), through the proxy and
// straight to the upstream. Reported: p50 and p99 of each, in ms, and their ratio. Each
// iteration uses a fresh thread of 198 stored messages and one untimed turn through the proxy
// (the server has seen the thread, as in a conversation), which makes it 200.
//
//	go test ./serve -run '^$' -bench ProxyOverhead -benchtime 300x
func BenchmarkProxyOverhead(b *testing.B) {
	e := newEnv(b, envOptions{})
	hist := make([]chat.Message, 0, 201)
	hist = append(hist, chat.TextMessage("system", "You are a coding agent."))
	for i := 1; len(hist) < 197; i++ {
		hist = append(hist, chat.TextMessage("user", fmt.Sprintf("Step %d: run the tests in package %d and tell me what failed. %s", i, i, strings.Repeat("context ", 20))),
			chat.TextMessage("assistant", fmt.Sprintf("Step %d: 3 tests failed in package %d; the fix is in handler.go line %d.", i, i, 40+i)))
	}
	hist = append(hist, chat.TextMessage("user", "Note: the CI runner was restarted."))
	client := &http.Client{}
	call := func(url string, msgs []chat.Message) (time.Duration, chat.Message) {
		body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs})
		start := time.Now()
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != 200 {
			b.Fatalf("%s: %d %s", url, resp.StatusCode, out)
		}
		var r struct {
			Choices []struct {
				Message chat.Message `json:"message"`
			} `json:"choices"`
		}
		json.Unmarshal(out, &r)
		return d, r.Choices[0].Message
	}
	var proxied, direct []time.Duration
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		b.StopTimer()
		thread := fmt.Sprintf("bench-%d", i)
		if _, err := e.store.Append(ctx, thread, hist, memory.AppendOptions{Model: "gpt-4o"}); err != nil {
			b.Fatal(err)
		}
		msgs := append(slices.Clone(hist), chat.TextMessage("user", "what else?"))
		_, reply := call(e.url+"/t/"+thread+"/v1/chat/completions", msgs)
		msgs = append(msgs, reply, chat.TextMessage("user", "and now?"))
		if len(msgs) != 201 {
			b.Fatalf("%d messages", len(msgs))
		}
		d, _ := call(e.up.URL()+"/chat/completions", msgs)
		direct = append(direct, d)
		b.StartTimer()
		d, _ = call(e.url+"/t/"+thread+"/v1/chat/completions", msgs)
		proxied = append(proxied, d)
	}
	b.StopTimer()
	pp50, pp99 := percentiles(proxied)
	dp50, dp99 := percentiles(direct)
	b.ReportMetric(ms(pp50), "proxy-p50-ms")
	b.ReportMetric(ms(pp99), "proxy-p99-ms")
	b.ReportMetric(ms(dp50), "direct-p50-ms")
	b.ReportMetric(ms(dp99), "direct-p99-ms")
	b.ReportMetric(ms(pp50-dp50), "added-p50-ms")
	b.ReportMetric(ms(pp99-dp99), "added-p99-ms")
	b.ReportMetric(float64(pp50)/float64(dp50), "ratio-p50")
}

func percentiles(ds []time.Duration) (p50, p99 time.Duration) {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[len(s)*50/100], s[min(len(s)*99/100, len(s)-1)]
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// BenchmarkConcurrentAgents measures 50 agents at once, each on its own thread resending its
// whole history each turn (20 turns each per iteration), through the proxy and, interleaved,
// straight to the upstream: turns per second of each, the p99 of a proxied turn, and the Go
// heap in use after the run (every thread's cache included) with the number of threads.
// Every turn is checked stored once.
//
//	go test ./serve -run '^$' -bench ConcurrentAgents -benchtime 1x
func BenchmarkConcurrentAgents(b *testing.B) {
	const agents, turns = 50, 20
	e := newEnv(b, envOptions{})
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: agents}}
	post := func(url string, msgs []chat.Message) (time.Duration, chat.Message) {
		body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs})
		start := time.Now()
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Error(err)
			return 0, chat.Message{}
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != 200 {
			b.Errorf("%s: %d %s", url, resp.StatusCode, out)
		}
		var r struct {
			Choices []struct {
				Message chat.Message `json:"message"`
			} `json:"choices"`
		}
		json.Unmarshal(out, &r)
		if len(r.Choices) == 0 {
			return d, chat.Message{}
		}
		return d, r.Choices[0].Message
	}
	run := func(iter int, direct bool) (time.Duration, []time.Duration) {
		var mu sync.Mutex
		var lat []time.Duration
		var wg sync.WaitGroup
		start := time.Now()
		for a := 0; a < agents; a++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				url := fmt.Sprintf("%s/t/agent-%d-%d/v1/chat/completions", e.url, iter, a)
				if direct {
					url = e.up.URL() + "/chat/completions"
				}
				msgs := []chat.Message{chat.TextMessage("system", "You are a coding agent.")}
				for t := 0; t < turns; t++ {
					msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("agent %d, step %d: %s", a, t, strings.Repeat("context ", 20))))
					d, reply := post(url, msgs)
					msgs = append(msgs, reply)
					mu.Lock()
					lat = append(lat, d)
					mu.Unlock()
				}
			}()
		}
		wg.Wait()
		return time.Since(start), lat
	}
	var proxied, direct time.Duration
	var lat []time.Duration
	for i := 0; i < b.N; i++ {
		d, _ := run(i, true)
		direct += d
		p, l := run(i, false)
		proxied += p
		lat = append(lat, l...)
	}
	b.StopTimer()
	e.srv.WaitBackground()
	for i := 0; i < b.N; i++ {
		if got := len(e.history(fmt.Sprintf("agent-%d-7", i))); got != 1+2*turns {
			b.Fatalf("agent 7 stored %d messages, want %d", got, 1+2*turns)
		}
	}
	total := float64(b.N * agents * turns)
	_, p99 := percentiles(lat)
	var mem runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&mem)
	threads, cached := e.srv.Tracked()
	b.ReportMetric(total/proxied.Seconds(), "proxy-turns/s")
	b.ReportMetric(total/direct.Seconds(), "direct-turns/s")
	b.ReportMetric(ms(p99), "proxy-p99-ms")
	b.ReportMetric(float64(mem.HeapInuse)/(1<<20), "heap-MiB")
	b.ReportMetric(float64(threads), "threads-kept")
	b.ReportMetric(float64(cached)/(1<<20), "cache-MiB")
}

// BenchmarkProxyTurns measures the turns of one thread in each dialect, through the proxy and,
// its floor, straight to the upstream (an upstream that reads the request and answers at once):
// the thread has 201 messages when the timing starts, and each turn resends it whole plus a new
// user message (b.N turns: the thread grows by 2 messages a turn). Reported: p50 and p99 of a
// turn, in ms, and the CPU time of the whole process a turn (client and upstream included: the
// machine's load matters less to it than to the wall time); cpu-ms/turn and allocs/op of proxy
// less those of direct are the proxy's work per turn, which the profile of this benchmark
// shows (bench's serve step measures the same with the server in its own process). The client
// writes each body from the encoding of each element it keeps, as an agent that resends its
// history does. Anthropic's runs again with the tool definitions of Claude Code
// (anthropic-tools).
//
//	go test ./serve -run '^$' -bench ProxyTurns -benchtime 300x -benchmem -cpuprofile cpu.out
func BenchmarkProxyTurns(b *testing.B) {
	bare := answering(b)
	e := newEnv(b, envOptions{server: func(s *serve.Server) { s.Upstream = bare.URL + "/v1" }})
	// Anthropic's again, with the tool definitions Claude Code sends every turn (12, 32 KB), in
	// its order: the messages first, then the system prompt and the tools.
	capture, err := os.ReadFile("testdata/agents/captures/claude/turn3.json")
	if err != nil {
		b.Fatal(err)
	}
	var req struct {
		Tools json.RawMessage `json:"tools"`
	}
	if err := json.Unmarshal(capture, &req); err != nil || len(req.Tools) == 0 {
		b.Fatalf("no tools in the capture: %v", err)
	}
	tools := turnShapes[1]
	tools.name = "anthropic-tools"
	tools.head = `{"model":"claude-bench","messages":[`
	tools.tail = `],"system":"You are a coding agent.","tools":` + string(req.Tools) + `,"max_tokens":1024}`
	runs := 0
	for _, sh := range append(slices.Clone(turnShapes), tools) {
		for _, via := range []string{"proxy", "direct"} {
			b.Run(sh.name+"/"+via, func(b *testing.B) {
				runs++ // a thread of its own for each run
				thread := fmt.Sprintf("turns-%d", runs)
				url := e.url + "/t/" + thread + "/v1" + sh.route
				if via == "direct" {
					url = bare.URL + "/v1" + sh.route
				}
				benchTurns(b, url, sh)
				if via == "proxy" {
					if got, want := len(e.history(thread)), 201+2*b.N; got != want {
						b.Fatalf("%d messages stored, want %d", got, want)
					}
				}
			})
		}
	}
}

// answering is an upstream that reads each request and answers at once, "reply N", in the
// shape of its route: Chat Completions, Anthropic Messages or OpenAI Responses.
func answering(t testing.TB) *httptest.Server {
	var mu sync.Mutex
	n := 0
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		mu.Lock()
		n++
		n := n
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch r.URL.Path {
		case "/v1/messages":
			fmt.Fprintf(w, `{"id":"msg_%d","type":"message","role":"assistant","model":"claude-bench","content":[{"type":"text","text":"reply %d: the tests pass."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":8}}`, n, n)
		case "/v1/responses":
			fmt.Fprintf(w, `{"id":"resp_%d","object":"response","created_at":1700000000,"status":"completed","model":"gpt-bench","output":[{"type":"message","id":"msg_%d","status":"completed","role":"assistant","content":[{"type":"output_text","text":"reply %d: the tests pass.","annotations":[]}]}],"usage":{"input_tokens":10,"output_tokens":8,"total_tokens":18}}`, n, n, n)
		default:
			fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"reply %d: the tests pass."},"finish_reason":"stop"}]}`, n)
		}
	}))
	t.Cleanup(bare.Close)
	return bare
}

// benchTurns runs the turns of BenchmarkProxyTurns against url, in shape sh.
func benchTurns(b *testing.B, url string, sh turnShape) {
	client := &http.Client{}
	var elems [][]byte // the conversation's elements, as sent, after the system prompt
	add := func(role, text string) {
		el, err := json.Marshal(map[string]string{"role": role, "content": text})
		if err != nil {
			b.Fatal(err)
		}
		elems = append(elems, el)
	}
	post := func() time.Duration {
		body := sh.body(elems)
		start := time.Now()
		resp, err := client.Post(url, "application/json", bytes.NewReader(body))
		if err != nil {
			b.Fatal(err)
		}
		out, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		d := time.Since(start)
		if resp.StatusCode != 200 {
			b.Fatalf("%d %s", resp.StatusCode, out)
		}
		reply, ok := sh.reply(out)
		if !ok {
			b.Fatalf("not a reply: %s", out)
		}
		add("assistant", reply)
		return d
	}
	for i := 1; len(elems) < 198; i++ {
		add("user", fmt.Sprintf("Step %d: run the tests in package %d and tell me what failed. %s", i, i, strings.Repeat("context ", 20)))
		add("assistant", fmt.Sprintf("Step %d: 3 tests failed in package %d; the fix is in handler.go line %d.", i, i, 40+i))
	}
	add("user", "Step 100: and the linter?")
	post() // with the system prompt and the reply: 201 messages
	var lat []time.Duration
	b.ResetTimer()
	cpu := cputime.Self()
	for i := 0; i < b.N; i++ {
		add("user", fmt.Sprintf("turn %d: and now?", i))
		lat = append(lat, post())
	}
	cpu = cputime.Self() - cpu
	b.StopTimer()
	p50, p99 := percentiles(lat)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
	b.ReportMetric(ms(cpu)/float64(b.N), "cpu-ms/turn")
}

// turnShape is a dialect's request, as BenchmarkProxyTurns writes it: head, the elements of
// its conversation (after its system prompt, a first element in head when sysElem), tail; and
// the text of its reply.
type turnShape struct {
	name, route string
	head, tail  string
	sysElem     bool
	reply       func(out []byte) (string, bool)
	dialect     dialect.Dialect
}

// body is the request of the conversation elems.
func (sh turnShape) body(elems [][]byte) []byte {
	var b bytes.Buffer
	b.WriteString(sh.head)
	for i, el := range elems {
		if i > 0 || sh.sysElem {
			b.WriteByte(',')
		}
		b.Write(el)
	}
	b.WriteString(sh.tail)
	return b.Bytes()
}

var turnShapes = []turnShape{
	{name: "chat", route: "/chat/completions", sysElem: true, dialect: chatcompletions.Dialect{},
		head: `{"model":"gpt-4o","messages":[{"role":"system","content":"You are a coding agent."}`, tail: `]}`,
		reply: func(out []byte) (string, bool) {
			var r struct {
				Choices []struct {
					Message chat.Message `json:"message"`
				} `json:"choices"`
			}
			if json.Unmarshal(out, &r) != nil || len(r.Choices) == 0 {
				return "", false
			}
			return r.Choices[0].Message.Text(), true
		}},
	{name: "anthropic", route: "/messages", dialect: anthropic.Dialect{},
		head: `{"model":"claude-bench","max_tokens":1024,"system":"You are a coding agent.","messages":[`, tail: `]}`,
		reply: func(out []byte) (string, bool) {
			var r struct{ Content []struct{ Type, Text string } }
			if json.Unmarshal(out, &r) != nil || len(r.Content) != 1 {
				return "", false
			}
			return r.Content[0].Text, true
		}},
	{name: "responses", route: "/responses", dialect: responses.Dialect{},
		head: `{"model":"gpt-bench","instructions":"You are a coding agent.","input":[`, tail: `],"store":false}`,
		reply: func(out []byte) (string, bool) {
			var r struct {
				Output []struct{ Content []struct{ Type, Text string } }
			}
			if json.Unmarshal(out, &r) != nil || len(r.Output) != 1 || len(r.Output[0].Content) != 1 {
				return "", false
			}
			return r.Output[0].Content[0].Text, true
		}},
}

// BenchmarkTurnCost measures the turns of a thread of 10,000 and of 50,000 messages that its
// client resends whole, plus a new user message, each turn (Chat Completions), within a limit
// that never compacts it: the whole request is forwarded (bench's turncost step measures the
// same against its floor, with the server in its own process). Reported as BenchmarkProxyTurns
// does; its profile is that of serve's work on a large request.
//
//	go test ./serve -run '^$' -bench TurnCost/50000 -benchtime 20x -benchmem -cpuprofile cpu.out
func BenchmarkTurnCost(b *testing.B) {
	for _, n := range []int{10000, 50000} {
		b.Run(fmt.Sprint(n), func(b *testing.B) {
			bare := answering(b)
			e := newEnv(b, envOptions{limit: 100_000_000, server: func(s *serve.Server) { s.Upstream = bare.URL + "/v1" }})
			url := e.url + "/t/turncost/v1/chat/completions"
			sh := turnShapes[0]
			client := &http.Client{}
			elems := make([][]byte, 0, n+2*b.N+2)
			add := func(role, text string) {
				el, _ := json.Marshal(map[string]string{"role": role, "content": text})
				elems = append(elems, el)
			}
			post := func() time.Duration {
				body := sh.body(elems)
				start := time.Now()
				resp, err := client.Post(url, "application/json", bytes.NewReader(body))
				if err != nil {
					b.Fatal(err)
				}
				out, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				d := time.Since(start)
				reply, ok := sh.reply(out)
				if resp.StatusCode != 200 || !ok {
					b.Fatalf("%d %.300s", resp.StatusCode, out)
				}
				add("assistant", reply)
				return d
			}
			for i := 1; len(elems) < n-2; i++ {
				add("user", fmt.Sprintf("step %d: run the tests in package p%d and tell me what failed; the last run printed %s", i, i, strings.Repeat("ok ", 20)))
				add("assistant", fmt.Sprintf("step %d: 3 tests failed in package p%d; the fix is in handler.go line %d, where the nil map is written.", i, i, 40+i))
			}
			add("user", "and the linter?")
			post()
			// The thread's n messages indexed for search before the turns are timed, as the
			// append that stored them did before schema version 12: the store's indexer would
			// otherwise index them during the first turns, counted as theirs.
			if err := e.store.DB().IndexPending(context.Background()); err != nil {
				b.Fatal(err)
			}
			var lat []time.Duration
			runtime.GC()
			b.ResetTimer()
			cpu := cputime.Self()
			for i := 0; i < b.N; i++ {
				add("user", fmt.Sprintf("turn %d: and now? %s", i, strings.Repeat("more ", 10)))
				lat = append(lat, post())
			}
			cpu = cputime.Self() - cpu
			b.StopTimer()
			p50, p99 := percentiles(lat)
			b.ReportMetric(ms(p50), "p50-ms")
			b.ReportMetric(ms(p99), "p99-ms")
			b.ReportMetric(ms(cpu)/float64(b.N), "cpu-ms/turn")
			if got, want := len(e.history("turncost")), len(elems)+1; got != want { // the system prompt, then elems
				b.Fatalf("%d messages stored, want %d", got, want)
			}
		})
	}
}
