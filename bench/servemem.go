package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// serveMemRows: memctl serve's peak resident memory (VmHWM) under what its bound on bytes
// held (MaxInFlightBytes, 128 MiB by default) is for: four concurrent requests of about 30 MB
// each, whose one user message is over the model's window (each is answered 400
// context_length_exceeded, nothing stored), then four concurrent clients each relayed a
// stream of 64 MiB (its events carry logprobs, as an upstream asked for them sends: 1/16 of
// each event is the reply's text, stored). The peak is read side by side with the bound: the
// target is the bound plus 150 MB.
func (b *bench) serveMemRows([]conversation) error {
	if b.memctl == "" {
		b.add("serve: peak memory under four 30 MB requests and four 64 MiB streams", "not run (needs -memctl)", "", nil)
		return nil
	}
	const (
		bound     = 128 << 20 // serve's default MaxInFlightBytes
		requestMB = 30
		streamLen = 64 << 20
		clients   = 4
	)
	up, err := startStreamUpstream(streamLen)
	if err != nil {
		return err
	}
	defer up.Close()
	upURL := "http://" + up.Addr().String() + "/v1"

	// The streams alone, in a server of their own.
	p, err := b.startServe("servemem-streams.db", upURL)
	if err != nil {
		return err
	}
	var wg sync.WaitGroup
	ends := streams(p, clients)
	peakStreams, afterStreams := hwm(p.cmd.Process.Pid), vmRSS(p.cmd.Process.Pid)
	p.stop()
	b.add(fmt.Sprintf("serve: %d concurrent streams of 64 MiB relayed (ends: %s): peak RSS (VmHWM), RSS after",
		clients, strings.Join(ends, ", ")), fmt.Sprintf("%d MB, %d MB after", peakStreams>>20, afterStreams>>20), "", nil)

	p, err = b.startServe("servemem.db", upURL)
	if err != nil {
		return err
	}
	defer p.stop()
	pid := p.cmd.Process.Pid
	idle := vmRSS(pid)

	// Four concurrent 30 MB requests, each a different conversation over the window.
	statuses := make([]int, clients)
	for i := range clients {
		wg.Go(func() {
			body := bigRequest(i, requestMB<<20)
			resp, err := http.Post(fmt.Sprintf("%s/t/big-%d/v1/chat/completions", p.url, i), "application/json", bytes.NewReader(body))
			if err != nil {
				statuses[i] = -1
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			statuses[i] = resp.StatusCode
		})
	}
	wg.Wait()
	peakReq, afterReq := hwm(pid), vmRSS(pid)

	// Then four concurrent streams of 64 MiB.
	ends = streams(p, clients)
	peak, after := hwm(pid), vmRSS(pid)
	b.add(fmt.Sprintf("serve: %d concurrent %d MB requests, each over the window (answered %v): peak RSS (VmHWM), RSS after; idle %d MB",
		clients, requestMB, statuses, idle>>20), fmt.Sprintf("%d MB, %d MB after", peakReq>>20, afterReq>>20), "", nil)
	b.add(fmt.Sprintf("serve: then %d concurrent streams of 64 MiB relayed (ends: %s): peak RSS (VmHWM), RSS after, against the bound on bytes held (%d MiB)",
		clients, strings.Join(ends, ", "), bound>>20), fmt.Sprintf("%d MB, %d MB after", peak>>20, after>>20),
		fmt.Sprintf("< %d MiB + 150 MB", bound>>20), ptr(peak < bound+150<<20))
	return nil
}

// streams has n clients at once each ask p for a stream, and returns how each ended.
func streams(p *serveProc, n int) []string {
	ends := make([]string, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "stream": true, "messages": []map[string]string{
				{"role": "user", "content": fmt.Sprintf("stream %d: write the longest answer you can", i)}}})
			resp, err := http.Post(fmt.Sprintf("%s/t/stream-%d/v1/chat/completions", p.url, i), "application/json", bytes.NewReader(body))
			if err != nil {
				ends[i] = err.Error()
				return
			}
			defer resp.Body.Close()
			ends[i] = streamEnd(resp)
		})
	}
	wg.Wait()
	return ends
}

// bigRequest is a Chat Completions request of about size bytes: a system prompt, then one user
// message of distinct words (so that it is no one token repeated).
func bigRequest(n, size int) []byte {
	var text strings.Builder
	text.Grow(size + 64)
	for i := 0; text.Len() < size; i++ {
		fmt.Fprintf(&text, "client %d line %d: the build log says step %d failed at offset %x. ", n, i, i%997, i*7919)
	}
	body, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": []map[string]string{
		{"role": "system", "content": "You are a coding agent."},
		{"role": "user", "content": text.String()}}})
	return body
}

// streamEnd reads a relayed stream to its end and names how it ended: "[DONE]", the code of
// an error event, or "cut".
func streamEnd(resp *http.Response) string {
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		return fmt.Sprintf("%d %.80s", resp.StatusCode, b)
	}
	sc := bufio.NewScanner(resp.Body)
	sc.Buffer(make([]byte, 1<<20), 8<<20)
	end := "cut"
	for sc.Scan() {
		line := sc.Bytes()
		switch {
		case bytes.Equal(line, []byte("data: [DONE]")):
			end = "[DONE]"
		case bytes.HasPrefix(line, []byte(`data: {"error"`)):
			var e struct {
				Error struct{ Code string } `json:"error"`
			}
			json.Unmarshal(line[len("data: "):], &e)
			end = "error " + e.Error.Code
		}
	}
	return end
}

// startStreamUpstream is an OpenAI-compatible model whose window is 1,000,000 tokens and that
// answers every request with a stream of about size bytes: chunks of 16 KiB, each a delta of
// 1 KiB of text with its logprobs (the rest), then a finish_reason and data: [DONE].
func startStreamUpstream(size int) (net.Listener, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-4o","object":"model","max_model_len":1000000}]}`)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		bw := bufio.NewWriterSize(w, 64<<10)
		text := strings.Repeat("word ", 1<<10/5)
		var lp strings.Builder
		for lp.Len() < 15<<10 {
			fmt.Fprintf(&lp, `{"token":"word","logprob":-0.%04d,"bytes":[119,111,114,100],"top_logprobs":[]},`, lp.Len()%9973)
		}
		chunk := fmt.Sprintf(`data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"content":%q},"logprobs":{"content":[%s]},"finish_reason":null}]}`+"\n\n",
			text, strings.TrimSuffix(lp.String(), ","))
		last := `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{},"finish_reason":"stop"}]}` + "\n\ndata: [DONE]\n\n"
		io.WriteString(bw, `data: {"id":"c","object":"chat.completion.chunk","created":1,"model":"gpt-4o","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`+"\n\n")
		for sent := 0; sent+len(chunk)+len(last)+1024 < size; sent += len(chunk) {
			if _, err := io.WriteString(bw, chunk); err != nil {
				return
			}
		}
		io.WriteString(bw, last)
		bw.Flush()
	})
	go (&http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}).Serve(ln)
	return ln, nil
}
