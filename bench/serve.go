package main

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/memcascade/memcascade/chat"
	"github.com/memcascade/memcascade/memory"
)

// serveRows: memctl serve in a child process, in front of an upstream (in this process) that
// answers at once, driven by clients in this process:
//
//   - latency: one thread of 200 messages resent whole each turn plus a new user message, for
//     300 turns (800 messages at the end), each turn sent through the proxy and straight to
//     the upstream, in turn (which first alternates): the p50 and p99 the proxy adds; five
//     rounds of it, each on a thread of its own, give the median and the range;
//   - paced agents: 50 agents at once, each on its own thread (the agents step, agents.go, runs
//     them closed-loop on each backend), each offering a turn every 100 ms on a
//     fixed schedule (500 turns/s offered in all), the agents' schedules spread evenly over
//     the 100 ms; a turn is timed from the moment it was due, not from when it was sent, so a
//     turn that waits for the one before it counts its wait (no coordinated omission): the
//     turns per second served and the p50 and p99 of a turn, straight and through the proxy;
//   - memory: a new server serves 1,000 threads of 50 messages (5 turns each, 8 clients at
//     once), then its resident memory is read (VmRSS of /proc/PID/status).
//
// Every turn is checked stored once: each thread's history is read back from the database
// and compared with the conversation the client holds.
func (b *bench) serveRows([]conversation) error {
	if b.memctl == "" {
		b.add("serve: latency added, 200-message thread resent whole, 300 turns", "not run (needs -memctl)", "p50 <= 2 ms, p99 <= 10 ms", nil)
		return nil
	}
	up, err := startUpstream()
	if err != nil {
		return err
	}
	defer up.close()
	latTurns, latRounds, agents, memThreads := 300, 5, 50, 1000
	pacedTurns, pacedRate := 50, 10.0 // per agent: 50 turns at 10 a second, 5 s
	if b.quick {
		latTurns, latRounds, agents, memThreads = 30, 3, 10, 100
		pacedTurns = 10
	}

	p, err := b.startServe("serve.db", up.url)
	if err != nil {
		return err
	}
	for _, sh := range []*shape{&chatShape, &messagesShape, &responsesShape} {
		if err := b.serveLatency(p, up, sh, latTurns, latRounds); err != nil {
			p.stop()
			return err
		}
	}
	if err := b.servePaced(p, up, agents, pacedTurns, pacedRate); err != nil {
		p.stop()
		return err
	}
	p.stop()

	p, err = b.startServe("memory.db", up.url)
	if err != nil {
		return err
	}
	defer p.stop()
	return b.serveMemory(p, memThreads)
}

// fakeUpstream is an OpenAI-compatible model that answers at once: it reads the request and
// answers "reply N". It reports a window (vLLM's max_model_len) so that memctl serve fits the
// threads in it without compacting them.
type fakeUpstream struct {
	url string
	srv *http.Server
	n   atomic.Int64
	// chatBytes is the size of the last Chat Completions request's body.
	chatBytes atomic.Int64
}

func startUpstream() (*fakeUpstream, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	u := &fakeUpstream{url: "http://" + ln.Addr().String() + "/v1"}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/models", func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"object":"list","data":[{"id":"gpt-4o","object":"model","max_model_len":1000000},{"id":"claude-bench","object":"model","max_model_len":1000000},{"id":"gpt-bench","object":"model","max_model_len":1000000},{"id":"`+turncostModel+`","object":"model","max_model_len":100000000}]}`)
	})
	mux.HandleFunc("POST /v1/messages", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n := u.n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"msg_%d","type":"message","role":"assistant","model":"claude-bench","content":[{"type":"text","text":"reply %d: the tests pass now."}],"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":8}}`, n, n)
	})
	mux.HandleFunc("POST /v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		read, _ := io.Copy(io.Discard, r.Body)
		u.chatBytes.Store(read)
		n := u.n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"chatcmpl-%d","object":"chat.completion","created":1700000000,"model":"gpt-4o","choices":[{"index":0,"message":{"role":"assistant","content":"reply %d: the tests pass now."},"finish_reason":"stop"}]}`, n, n)
	})
	mux.HandleFunc("POST /v1/responses", func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		n := u.n.Add(1)
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"id":"resp_%d","object":"response","created_at":1700000000,"status":"completed","model":"gpt-bench","output":[{"type":"message","id":"msg_%d","status":"completed","role":"assistant","content":[{"type":"output_text","text":"reply %d: the tests pass now.","annotations":[]}]}],"usage":{"input_tokens":10,"input_tokens_details":{"cached_tokens":0},"output_tokens":8,"total_tokens":18}}`, n, n, n)
	})
	u.srv = &http.Server{Handler: mux}
	go u.srv.Serve(ln)
	return u, nil
}

func (u *fakeUpstream) close() { u.srv.Close() }

// serveProc is memctl serve running in a child process.
type serveProc struct {
	cmd  *exec.Cmd
	url  string // http://127.0.0.1:PORT
	db   string
	errb bytes.Buffer
}

func (b *bench) startServe(db, upstream string) (*serveProc, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	addr := ln.Addr().String()
	ln.Close()
	p := &serveProc{url: "http://" + addr, db: db}
	if !filepath.IsAbs(db) && !strings.Contains(db, "://") {
		p.db = filepath.Join(b.dir, db) // a file of the bench's directory
	}
	p.cmd = exec.Command(b.memctl, "--db", p.db, "serve", "--listen", addr, "--upstream", upstream)
	p.cmd.Dir = b.dir
	p.cmd.Stderr = &p.errb
	if err := p.cmd.Start(); err != nil {
		return nil, err
	}
	for start := time.Now(); time.Since(start) < 20*time.Second; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(p.url + "/v1/models")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return p, nil
			}
		}
	}
	p.stop()
	return nil, fmt.Errorf("memctl serve did not answer within 20 s: %s", p.errb.String())
}

func (p *serveProc) stop() {
	p.cmd.Process.Signal(os.Interrupt)
	done := make(chan struct{})
	go func() { p.cmd.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		p.cmd.Process.Kill()
		<-done
	}
}

// vmRSS is the resident memory of a running process, in bytes (0 when unknown).
func vmRSS(pid int) int64 {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for line := range strings.SplitSeq(string(data), "\n") {
		if v, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			var kb int64
			fmt.Sscan(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(v), "kB")), &kb)
			return kb << 10
		}
	}
	return 0
}

// shape is an API shape the latency rows are measured in: its route under /v1, the body of a
// conversation and the reply read from an answer.
type shape struct {
	name  string
	route string
	body  func(msgs []chat.Message) []byte
	reply func(out []byte) (chat.Message, bool)
}

var chatShape = shape{name: "Chat Completions", route: "/chat/completions", body: chatBody,
	reply: func(out []byte) (chat.Message, bool) {
		var r struct {
			Choices []struct {
				Message chat.Message `json:"message"`
			} `json:"choices"`
		}
		if json.Unmarshal(out, &r) != nil || len(r.Choices) == 0 {
			return chat.Message{}, false
		}
		return r.Choices[0].Message, true
	}}

// messagesShape is Anthropic's Messages API: the leading system message as the system member,
// each other message's text as its content.
var messagesShape = shape{name: "Anthropic Messages", route: "/messages",
	body: func(msgs []chat.Message) []byte {
		type msg struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}
		var conv []msg
		for _, m := range msgs[1:] {
			conv = append(conv, msg{m.Role, m.Text()})
		}
		b, _ := json.Marshal(map[string]any{"model": "claude-bench", "max_tokens": 1024, "system": msgs[0].Text(), "messages": conv})
		return b
	},
	reply: func(out []byte) (chat.Message, bool) {
		var r struct {
			Content []struct{ Type, Text string }
		}
		if json.Unmarshal(out, &r) != nil || len(r.Content) != 1 || r.Content[0].Type != "text" {
			return chat.Message{}, false
		}
		return chat.TextMessage(chat.RoleAssistant, r.Content[0].Text), true
	}}

// responsesShape is OpenAI's Responses API: the leading system message as instructions, each
// other message as a message item of input.
var responsesShape = shape{name: "OpenAI Responses", route: "/responses",
	body: func(msgs []chat.Message) []byte {
		type item struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		}
		var input []item
		for _, m := range msgs[1:] {
			input = append(input, item{m.Role, m.Text()})
		}
		b, _ := json.Marshal(map[string]any{"model": "gpt-bench", "instructions": msgs[0].Text(), "input": input, "store": false})
		return b
	},
	reply: func(out []byte) (chat.Message, bool) {
		var r struct {
			Output []struct {
				Type    string
				Content []struct{ Type, Text string }
			}
		}
		if json.Unmarshal(out, &r) != nil || len(r.Output) != 1 || len(r.Output[0].Content) != 1 {
			return chat.Message{}, false
		}
		return chat.TextMessage(chat.RoleAssistant, r.Output[0].Content[0].Text), true
	}}

// chatClient posts requests of a shape (Chat Completions unless set) and returns the reply,
// timing the exchange.
type chatClient struct {
	http  *http.Client
	shape *shape
}

func (c chatClient) post(url string, body []byte) (time.Duration, chat.Message, error) {
	start := time.Now()
	resp, err := c.http.Post(url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, chat.Message{}, err
	}
	out, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if err != nil {
		return 0, chat.Message{}, err
	}
	if resp.StatusCode != http.StatusOK {
		return 0, chat.Message{}, fmt.Errorf("%s: %d %s", url, resp.StatusCode, out)
	}
	sh := c.shape
	if sh == nil {
		sh = &chatShape
	}
	m, ok := sh.reply(out)
	if !ok {
		return 0, chat.Message{}, fmt.Errorf("%s: not a reply of %s: %s", url, sh.name, out)
	}
	return d, m, nil
}

func chatBody(msgs []chat.Message) []byte {
	b, _ := json.Marshal(map[string]any{"model": "gpt-4o", "messages": msgs})
	return b
}

// agentHistory is a conversation of n messages, distinct per thread: a system prompt, then
// user and assistant messages in turn.
func agentHistory(thread string, n int) []chat.Message {
	msgs := []chat.Message{chat.TextMessage(chat.RoleSystem, "You are a coding agent. Run the tests, read the failures, fix the code.")}
	for i := 1; len(msgs) < n; i++ {
		role := chat.RoleUser
		text := fmt.Sprintf("[%s] step %d: run the tests in package p%d and tell me what failed; the last run printed %s", thread, i, i, strings.Repeat("ok ", 20))
		if i%2 == 0 {
			role = chat.RoleAssistant
			text = fmt.Sprintf("[%s] step %d: 3 tests failed in package p%d; the fix is in handler.go line %d, where the nil map is written.", thread, i, i, 40+i)
		}
		msgs = append(msgs, chat.TextMessage(role, text))
	}
	return msgs
}

// checkStored reads the threads back from the database and compares each with the
// conversation its client holds: every message stored once, in order.
// indexStored indexes for search, from this process, what the database at path holds and has
// not indexed yet (db.Handle.IndexPending).
func indexStored(path string) error {
	ctx := context.Background()
	s, err := memory.Open(ctx, path, memory.OpenOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	return s.DB().IndexPending(ctx)
}

func checkStored(path string, want map[string][]chat.Message) error {
	ctx := context.Background()
	s, err := memory.Open(ctx, path, memory.OpenOptions{ReadOnly: true})
	if err != nil {
		return err
	}
	defer s.Close()
	for thread, msgs := range want {
		h, err := s.History(ctx, thread)
		if err != nil {
			return err
		}
		if len(h) != len(msgs) {
			return fmt.Errorf("thread %s: %d messages stored, the client holds %d", thread, len(h), len(msgs))
		}
		for i, e := range h {
			if e.Message.Role != msgs[i].Role || e.Message.Text() != msgs[i].Text() {
				return fmt.Errorf("thread %s: stored message %d is %s %q, the client's %s %q", thread, i+1, e.Message.Role, e.Message.Text(), msgs[i].Role, msgs[i].Text())
			}
		}
	}
	return nil
}

// latencyRound is one round of the latency measure: the p50 and p99 of the turns through the
// proxy and straight, and the server's CPU time per turn.
type latencyRound struct {
	proxied, straight [2]time.Duration // p50, p99
	cpu               time.Duration
	messages          int
}

func (r latencyRound) added() (p50, p99 time.Duration) {
	return r.proxied[0] - r.straight[0], r.proxied[1] - r.straight[1]
}

// serveLatency measures rounds rounds of turns turns, each on a thread of its own, and gives
// the median round (by the p99 added) with the range of the rounds: a p99 of 300 turns is the
// third slowest, which one stall of the machine moves.
func (b *bench) serveLatency(p *serveProc, up *fakeUpstream, sh *shape, turns, rounds int) error {
	var rs []latencyRound
	for i := range rounds {
		r, err := b.latencyRound(p, up, sh, fmt.Sprintf("latency-%s-%d", strings.Fields(sh.name)[0], i), turns)
		if err != nil {
			return err
		}
		rs = append(rs, r)
	}
	a50 := make([]time.Duration, len(rs))
	a99 := make([]time.Duration, len(rs))
	for i, r := range rs {
		a50[i], a99[i] = r.added()
	}
	med50, med99 := pct(a50, 50), pct(a99, 50)
	slices.SortFunc(rs, func(x, y latencyRound) int {
		_, px := x.added()
		_, py := y.added()
		return cmp.Compare(px, py)
	})
	m := rs[len(rs)/2]
	b.add(fmt.Sprintf("serve, %s: one thread, 200 messages resent whole + 1, %d turns (%d messages at the end): through the proxy (the median round of %d by p99 added)", sh.name, turns, m.messages, rounds),
		fmt.Sprintf("p50 %s, p99 %s (server CPU %s a turn)", ms2(m.proxied[0]), ms2(m.proxied[1]), ms2(m.cpu)), "", nil)
	b.add(fmt.Sprintf("serve, %s: the same requests straight to the upstream", sh.name), fmt.Sprintf("p50 %s, p99 %s", ms2(m.straight[0]), ms2(m.straight[1])), "", nil)
	b.add(fmt.Sprintf("serve, %s: latency the proxy adds, median of %d rounds (every turn stored once)", sh.name, rounds),
		fmt.Sprintf("p50 %s (%s to %s), p99 %s (%s to %s)", ms2(med50), ms2(slices.Min(a50)), ms2(slices.Max(a50)), ms2(med99), ms2(slices.Min(a99)), ms2(slices.Max(a99))),
		"p50 <= 2 ms, p99 <= 10 ms", ptr(med50 <= 2*time.Millisecond && med99 <= 10*time.Millisecond))
	return nil
}

// latencyRound: a thread of 200 messages, then turns turns each resending it whole plus a new
// user message, each turn sent through the proxy and straight to the upstream in turn (which
// first alternates), every turn checked stored once.
func (b *bench) latencyRound(p *serveProc, up *fakeUpstream, sh *shape, thread string, turns int) (latencyRound, error) {
	c := chatClient{http: &http.Client{}, shape: sh}
	proxy := p.url + "/t/" + thread + "/v1" + sh.route
	direct := up.url + sh.route
	msgs := agentHistory(thread, 200) // ends with a user message: two assistant messages in a row are one in the Responses API
	_, reply, err := c.post(proxy, sh.body(msgs))
	if err != nil {
		return latencyRound{}, err
	}
	msgs = append(msgs, reply) // 200 stored
	var proxied, straight []time.Duration
	cpu0 := procCPU(p.cmd.Process.Pid)
	for t := range turns {
		msgs = append(msgs, chat.TextMessage(chat.RoleUser, fmt.Sprintf("[%s] turn %d: and now? %s", thread, t, strings.Repeat("more ", 10))))
		body := sh.body(msgs)
		var dp, dd time.Duration
		if t%2 == 0 {
			if dd, _, err = c.post(direct, body); err == nil {
				dp, reply, err = c.post(proxy, body)
			}
		} else if dp, reply, err = c.post(proxy, body); err == nil {
			dd, _, err = c.post(direct, body)
		}
		if err != nil {
			return latencyRound{}, err
		}
		proxied, straight = append(proxied, dp), append(straight, dd)
		msgs = append(msgs, reply)
	}
	cpu := (procCPU(p.cmd.Process.Pid) - cpu0) / time.Duration(turns)
	if err := checkStored(p.db, map[string][]chat.Message{thread: msgs}); err != nil {
		return latencyRound{}, err
	}
	return latencyRound{
		proxied:  [2]time.Duration{pct(proxied, 50), pct(proxied, 99)},
		straight: [2]time.Duration{pct(straight, 50), pct(straight, 99)},
		cpu:      cpu, messages: len(msgs),
	}, nil
}

// servePaced runs agents open-loop: agent a's turn k is due at start + (k + a/agents) / rate,
// and is sent then, or when the agent's previous turn is answered if that comes later (an
// agent's turn carries the reply to the one before). Latency is from the due time to the end
// of the answer. The rate served is the turns over the time from the start to the last
// answer: at most the rate offered (the last turn is due at the schedule's end), at least 98%
// of it when the last answer comes within 100 ms of the schedule's 5 s end.
func (b *bench) servePaced(p *serveProc, up *fakeUpstream, agents, turns int, rate float64) error {
	period := time.Duration(float64(time.Second) / rate)
	r, err := runAgents(p, up, "paced", agents, turns, period)
	if err != nil {
		return err
	}
	offered := rate * float64(agents)
	served, p50, p99 := r.served(), pct(r.lat, 50), pct(r.lat, 99)
	b.add(fmt.Sprintf("serve: %d agents paced, each offering a turn every %s (%.0f turns/s offered), %d turns each, timed from when each turn was due: straight to the upstream", agents, period, offered, turns),
		fmt.Sprintf("%.0f turns/s, p50 %s, p99 %s", r.direct(), ms2(pct(r.directLat, 50)), ms2(pct(r.directLat, 99))), "", nil)
	b.add(fmt.Sprintf("serve: the same %d paced agents through the proxy (every turn stored once)", agents), fmt.Sprintf("%.0f turns/s, p50 %s, p99 %s (server CPU %s a turn)", served, ms2(p50), ms2(p99), ms2(r.cpu)),
		fmt.Sprintf("keeps up (>= %.0f turns/s), p99 < 50 ms", 0.98*offered), ptr(served >= 0.98*offered && p99 < 50*time.Millisecond))
	return nil
}

// agentsRun is what runAgents measured: the same agents straight to the upstream and then
// through the proxy, with the proxy's CPU time per turn.
type agentsRun struct {
	turns            int
	directTime, time time.Duration // from the start to the last answer
	directLat, lat   []time.Duration
	first, later     []time.Duration // lat: the agents' first turns, and the others
	cpu              time.Duration
}

func (r agentsRun) served() float64 { return float64(r.turns) / r.time.Seconds() }
func (r agentsRun) direct() float64 { return float64(r.turns) / r.directTime.Seconds() }

// runAgents runs agents, each on its thread of its own named prefix-N, turns turns each,
// straight to the upstream and then through the proxy, and checks that the proxy stored every
// turn once. With period 0 each agent sends its next turn when the last one is answered
// (closed loop), and a turn's latency is from its send; otherwise agent a's turn k is due at
// start + (k + a/agents) × period and is sent then, or when the agent's previous turn is
// answered if that comes later, and its latency is from the due time (queueing counts).
func runAgents(p *serveProc, up *fakeUpstream, prefix string, agents, turns int, period time.Duration) (agentsRun, error) {
	c := chatClient{http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: agents}}}
	var first []time.Duration // of the last run
	run := func(direct bool) (time.Duration, []time.Duration, map[string][]chat.Message, error) {
		var mu sync.Mutex
		var lat []time.Duration
		first = first[:0]
		var errs []error
		convs := map[string][]chat.Message{}
		var wg sync.WaitGroup
		start := time.Now()
		if period > 0 {
			start = start.Add(50 * time.Millisecond)
		}
		var last atomic.Int64
		for a := range agents {
			wg.Go(func() {
				thread := fmt.Sprintf("%s-%d", prefix, a)
				url := p.url + "/t/" + thread + "/v1/chat/completions"
				if direct {
					url = up.url + "/chat/completions"
				}
				msgs := agentHistory(thread, 1)
				offset := period * time.Duration(a) / time.Duration(agents)
				mine := make([]time.Duration, 0, turns)
				for t := range turns {
					due := time.Now()
					if period > 0 {
						due = start.Add(offset + time.Duration(t)*period)
						time.Sleep(time.Until(due))
					}
					msgs = append(msgs, chat.TextMessage(chat.RoleUser, fmt.Sprintf("[%s] turn %d: %s", thread, t, strings.Repeat("context ", 20))))
					_, reply, err := c.post(url, chatBody(msgs))
					end := time.Now()
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					msgs = append(msgs, reply)
					mine = append(mine, end.Sub(due))
					for {
						l := last.Load()
						if int64(end.Sub(start)) <= l || last.CompareAndSwap(l, int64(end.Sub(start))) {
							break
						}
					}
				}
				mu.Lock()
				if len(mine) > 0 {
					first = append(first, mine[0])
					lat = append(lat, mine[1:]...)
				}
				convs[thread] = msgs
				mu.Unlock()
			})
		}
		wg.Wait()
		lat = append(lat, first...) // all the turns, the first ones last
		return time.Duration(last.Load()), lat, convs, errors.Join(errs...)
	}
	r := agentsRun{turns: agents * turns}
	var err error
	if r.directTime, r.directLat, _, err = run(true); err != nil {
		return r, err
	}
	cpu0 := procCPU(p.cmd.Process.Pid)
	var convs map[string][]chat.Message
	if r.time, r.lat, convs, err = run(false); err != nil {
		return r, err
	}
	r.first, r.later = first, r.lat[:len(r.lat)-len(first)]
	r.cpu = (procCPU(p.cmd.Process.Pid) - cpu0) / time.Duration(r.turns)
	return r, checkStored(p.db, convs)
}

func (b *bench) serveMemory(p *serveProc, threads int) error {
	const turns, size, workers = 5, 50, 8
	c := chatClient{http: &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: workers}}}
	var mu sync.Mutex
	var errs []error
	convs := map[string][]chat.Message{}
	next := atomic.Int64{}
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1)) - 1
				if i >= threads {
					return
				}
				thread := fmt.Sprintf("memory-%04d", i)
				url := p.url + "/t/" + thread + "/v1/chat/completions"
				msgs := agentHistory(thread, size-2*turns+1)
				for t := range turns {
					if t > 0 {
						msgs = append(msgs, chat.TextMessage(chat.RoleUser, fmt.Sprintf("[%s] turn %d: and then?", thread, t)))
					}
					_, reply, err := c.post(url, chatBody(msgs))
					if err != nil {
						mu.Lock()
						errs = append(errs, err)
						mu.Unlock()
						return
					}
					msgs = append(msgs, reply)
				}
				mu.Lock()
				convs[thread] = msgs
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	rss, peak := vmRSS(p.cmd.Process.Pid), hwm(p.cmd.Process.Pid)
	if err := checkStored(p.db, convs); err != nil {
		return err
	}
	b.add(fmt.Sprintf("serve: resident memory after serving %d threads of %d messages (VmRSS of the server; peak VmHWM)", threads, size),
		fmt.Sprintf("%d MB (peak %d MB)", rss>>20, peak>>20), "< 150 MB", ptr(rss < 150<<20))
	return nil
}

// pct is the q-th percentile of ds.
func pct(ds []time.Duration, q int) time.Duration {
	s := slices.Clone(ds)
	slices.Sort(s)
	return s[min(len(s)*q/100, len(s)-1)]
}

func ms2(d time.Duration) string { return fmt.Sprintf("%.2f ms", float64(d)/float64(time.Millisecond)) }

// procCPU is the CPU time a running process has used, user and system (0 when unknown).
func procCPU(pid int) time.Duration {
	data, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0
	}
	// The fields after the command's name, which is in parentheses and may hold spaces:
	// utime and stime are the 12th and 13th, in clock ticks (USER_HZ, 100 on Linux).
	_, rest, ok := strings.Cut(string(data), ") ")
	f := strings.Fields(rest)
	if !ok || len(f) < 13 {
		return 0
	}
	var u, s int64
	fmt.Sscan(f[11], &u)
	fmt.Sscan(f[12], &s)
	return time.Duration(u+s) * (time.Second / 100)
}
