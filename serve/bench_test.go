package serve_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/memcascade/memcascade/memory"
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
	hist := make([]memory.Message, 0, 201)
	hist = append(hist, memory.TextMessage("system", "You are a coding agent."))
	for i := 1; len(hist) < 197; i++ {
		hist = append(hist, memory.TextMessage("user", fmt.Sprintf("Step %d: run the tests in package %d and tell me what failed. %s", i, i, strings.Repeat("context ", 20))),
			memory.TextMessage("assistant", fmt.Sprintf("Step %d: 3 tests failed in package %d; the fix is in handler.go line %d.", i, i, 40+i)))
	}
	hist = append(hist, memory.TextMessage("user", "Note: the CI runner was restarted."))
	client := &http.Client{}
	call := func(url string, msgs []memory.Message) (time.Duration, memory.Message) {
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
				Message memory.Message `json:"message"`
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
		msgs := append(slices.Clone(hist), memory.TextMessage("user", "what else?"))
		_, reply := call(e.url+"/t/"+thread+"/v1/chat/completions", msgs)
		msgs = append(msgs, reply, memory.TextMessage("user", "and now?"))
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
