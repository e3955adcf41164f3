package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve"
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

// BenchmarkProxyTurns measures the turns of one thread through the proxy, in front of an
// upstream that reads the request and answers at once: the thread has 200 messages when the
// timing starts, and each turn resends it whole plus a new user message (b.N turns: the thread
// grows by 2 messages a turn). Reported: p50 and p99 of a turn, in ms. The profile of this
// benchmark is the proxy's work per turn (bench's serve step measures the same against a
// direct call, with the server in its own process).
//
//	go test ./serve -run '^$' -bench ProxyTurns -benchtime 300x -cpuprofile cpu.out
func BenchmarkProxyTurns(b *testing.B) {
	n := 0
	bare := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n++
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"c","object":"chat.completion","model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"reply %d: the tests pass."},"finish_reason":"stop"}]}`, n)
	}))
	defer bare.Close()
	e := newEnv(b, envOptions{server: func(s *serve.Server) { s.Upstream = bare.URL + "/v1" }})
	client := &http.Client{}
	url := e.url + "/t/turns/v1/chat/completions"
	post := func(msgs []chat.Message) (time.Duration, chat.Message) {
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
			b.Fatalf("%d %s", resp.StatusCode, out)
		}
		var r struct {
			Choices []struct {
				Message chat.Message `json:"message"`
			} `json:"choices"`
		}
		json.Unmarshal(out, &r)
		return d, r.Choices[0].Message
	}
	msgs := []chat.Message{chat.TextMessage("system", "You are a coding agent.")}
	for i := 1; len(msgs) < 199; i++ {
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("Step %d: run the tests in package %d and tell me what failed. %s", i, i, strings.Repeat("context ", 20))),
			chat.TextMessage("assistant", fmt.Sprintf("Step %d: 3 tests failed in package %d; the fix is in handler.go line %d.", i, i, 40+i)))
	}
	msgs = msgs[:199]
	_, reply := post(msgs)
	msgs = append(msgs, reply)
	var lat []time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		msgs = append(msgs, chat.TextMessage("user", fmt.Sprintf("turn %d: and now?", i)))
		d, reply := post(msgs)
		lat = append(lat, d)
		msgs = append(msgs, reply)
	}
	b.StopTimer()
	if got := len(e.history("turns")); got != len(msgs) {
		b.Fatalf("%d messages stored, want %d", got, len(msgs))
	}
	p50, p99 := percentiles(lat)
	b.ReportMetric(ms(p50), "p50-ms")
	b.ReportMetric(ms(p99), "p99-ms")
}
