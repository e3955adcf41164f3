package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/memcascade/memcascade/chat"
)

// turncostModel is the model of the turncost step: the fake upstream reports it a window of
// 100 million tokens, so that serve fits a 50,000-message thread (about 2.3 million tokens)
// without compacting it and sends each turn's request on as the client sent it, whole.
const turncostModel = "gpt-turncost"

// turnCostRows: the cost serve adds to a turn of a thread the client resends whole, at 200,
// 10,000 and 50,000 messages (Chat Completions), beside its floor, the cost of reading the
// same request body. Each size is one thread, seeded by a first request of its whole history
// (not timed), then turns turns each resending it whole plus a new user message, each turn
// sent through the proxy, straight to the upstream and to the floor, in an order that rotates
// (the first of the three is always another). The floor is a child process (this binary,
// -copy-server) whose only handler io.Copy's the request body to io.Discard and answers 204:
// what reading the request body costs a server, over the same HTTP round trip. Per size: the
// p50 serve adds (p50 through the proxy minus p50 straight), serve's CPU per turn, the
// request's bytes, and the floor's p50 round trip and CPU per request. The target (issue 36):
// added(n) <= 2 × floor(n) + added(200) at 10,000 and at 50,000 messages, on the p50s (the
// CPU of each side is shown beside it). serve reads the body and writes it to the upstream:
// two passes over the bytes, hence 2 × the floor.
//
// No size compacts (the model's window is 100 million tokens), so every size costs what the
// client's request costs, which is what the target is about: a thread left to compact would
// be forwarded smaller than it was sent and its cost would no longer be that of the request.
func (b *bench) turnCostRows([]conversation) error {
	if b.memctl == "" {
		b.add("turncost: added cost per turn at 200, 10,000 and 50,000 messages", "not run (needs -memctl)", "", nil)
		return nil
	}
	type size struct{ messages, turns int }
	// 50 turns at 200 messages, so that its thread stays near its size (300 at the end).
	sizes := []size{{200, 50}, {10000, 50}, {50000, 20}}
	if b.quick {
		sizes = []size{{200, 20}, {10000, 5}, {50000, 3}}
	}
	up, err := startUpstream()
	if err != nil {
		return err
	}
	defer up.close()
	fl, err := startCopyServer()
	if err != nil {
		return err
	}
	defer fl.stop()
	p, err := b.startServe("turncost.db", up.url)
	if err != nil {
		return err
	}
	defer p.stop()
	var base turnCost
	for i, s := range sizes {
		r, err := b.turnCost(p, up, fl, fmt.Sprintf("turncost-%d", s.messages), s.messages, s.turns)
		if err != nil {
			return err
		}
		b.add(fmt.Sprintf("turncost, Chat Completions: one thread of %d messages resent whole + 1, %d turns (%d messages at the end; %s a request on average, forwarded whole): serve adds", s.messages, s.turns, s.messages+2*s.turns, kb(r.bytes)),
			fmt.Sprintf("p50 %s (proxied %s, straight %s; server CPU %s a turn)", ms2(r.added), ms2(r.proxied), ms2(r.straight), ms2(r.cpu)), "", nil)
		b.add(fmt.Sprintf("turncost: floor at %d messages, the same bodies POSTed to a server that only io.Copy's them to io.Discard", s.messages),
			fmt.Sprintf("p50 %s (server CPU %s a request)", ms2(r.floor), ms2(r.floorCPU)), "", nil)
		if i == 0 {
			base = r
			continue
		}
		bound := 2*r.floor + base.added
		cpuBound := 2*r.floorCPU + base.cpu
		b.add(fmt.Sprintf("turncost: added(%d) <= 2 × floor(%d) + added(%d)", s.messages, s.messages, base.messages),
			fmt.Sprintf("%s against %s = 2 × %s + %s (%.1f×); CPU %s against %s = 2 × %s + %s", ms2(r.added), ms2(bound), ms2(r.floor), ms2(base.added), float64(r.added)/float64(bound), ms2(r.cpu), ms2(cpuBound), ms2(r.floorCPU), ms2(base.cpu)),
			"added <= 2 × floor + added(200)", ptr(r.added <= bound))
	}
	return nil
}

// turnCost is what turnCost measured for one size.
type turnCost struct {
	messages, bytes          int // the thread's size, the mean bytes of a turn's request
	proxied, straight, added time.Duration
	cpu                      time.Duration // serve's, a turn
	floor, floorCPU          time.Duration // the copy server's p50 round trip and CPU a request
}

func (b *bench) turnCost(p *serveProc, up *fakeUpstream, fl *copyServer, thread string, n, turns int) (turnCost, error) {
	c := chatClient{http: &http.Client{}}
	proxy := p.url + "/t/" + thread + "/v1/chat/completions"
	direct := up.url + "/chat/completions"
	body := func(msgs []chat.Message) []byte {
		b, _ := json.Marshal(map[string]any{"model": turncostModel, "messages": msgs})
		return b
	}
	msgs := agentHistory(thread, n)
	_, reply, err := c.post(proxy, body(msgs))
	if err != nil {
		return turnCost{}, err
	}
	msgs = append(msgs, reply)
	// The thread's n messages are indexed for search before the turns are measured, as the
	// append that stored them did before schema version 12: serve's indexer would otherwise
	// index them during the first turns, and their CPU would count as the turns'.
	if err := indexStored(p.db); err != nil {
		return turnCost{}, err
	}
	var proxied, straight, floor []time.Duration
	r := turnCost{messages: n}
	cpu0, fcpu0 := threadsCPU(p.cmd.Process.Pid), threadsCPU(fl.cmd.Process.Pid)
	for t := range turns {
		msgs = append(msgs, chat.TextMessage(chat.RoleUser, fmt.Sprintf("[%s] turn %d: and now? %s", thread, t, strings.Repeat("more ", 10))))
		req := body(msgs)
		r.bytes += len(req)
		var dp, dd, df time.Duration
		for k := range 3 {
			switch (t + k) % 3 {
			case 0:
				if dp, reply, err = c.post(proxy, req); err == nil && up.chatBytes.Load() < int64(len(req))*9/10 {
					err = fmt.Errorf("%s, turn %d: serve sent the upstream %d bytes of a request of %d: it compacted the thread", thread, t, up.chatBytes.Load(), len(req))
				}
			case 1:
				dd, _, err = c.post(direct, req)
			case 2:
				df, err = fl.post(req)
			}
			if err != nil {
				return turnCost{}, err
			}
		}
		proxied, straight, floor = append(proxied, dp), append(straight, dd), append(floor, df)
		msgs = append(msgs, reply)
	}
	r.bytes /= turns
	r.cpu = (threadsCPU(p.cmd.Process.Pid) - cpu0) / time.Duration(turns)
	r.floorCPU = (threadsCPU(fl.cmd.Process.Pid) - fcpu0) / time.Duration(turns)
	r.proxied, r.straight, r.floor = pct(proxied, 50), pct(straight, 50), pct(floor, 50)
	r.added = r.proxied - r.straight
	if err := checkStored(p.db, map[string][]chat.Message{thread: msgs}); err != nil {
		return turnCost{}, err
	}
	return r, nil
}

// copyServer is the floor of the turncost step: this binary in a child process (-copy-server),
// serving one handler that reads the request body with io.Copy to io.Discard and answers 204.
// A process of its own, so that its CPU time is the server's alone, as serve's is.
type copyServer struct {
	cmd    *exec.Cmd
	url    string
	client *http.Client
}

func startCopyServer() (*copyServer, error) {
	self, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(self, "-copy-server")
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	addr, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("the copy server did not say its address: %w", err)
	}
	return &copyServer{cmd: cmd, url: "http://" + strings.TrimSpace(addr) + "/", client: &http.Client{}}, nil
}

func (s *copyServer) post(body []byte) (time.Duration, error) {
	start := time.Now()
	resp, err := s.client.Post(s.url, "application/json", bytes.NewReader(body))
	if err != nil {
		return 0, err
	}
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	d := time.Since(start)
	if resp.StatusCode != http.StatusNoContent {
		return 0, fmt.Errorf("copy server: %s", resp.Status)
	}
	return d, nil
}

func (s *copyServer) stop() {
	s.cmd.Process.Kill()
	s.cmd.Wait()
}

// copyServe is the child process of startCopyServer: it listens on a loopback port, prints
// the address on its standard output, and serves until killed.
func copyServe() error {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	fmt.Println(ln.Addr().String())
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusNoContent)
	}))
}

// threadsCPU is the CPU time a running process's threads have used, in nanoseconds: the sum
// of the first field of /proc/PID/task/TID/schedstat (time on a CPU), which is exact where
// /proc/PID/stat counts clock ticks of 10 ms, too coarse for a request of a millisecond. A
// thread that exited is no longer counted (Go keeps its threads); procCPU when schedstat is
// not readable.
func threadsCPU(pid int) time.Duration {
	tasks, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil {
		return procCPU(pid)
	}
	var sum int64
	for _, t := range tasks {
		data, err := os.ReadFile(fmt.Sprintf("/proc/%d/task/%s/schedstat", pid, t.Name()))
		if err != nil {
			return procCPU(pid)
		}
		var ns int64
		if _, err := fmt.Sscan(string(data), &ns); err != nil {
			return procCPU(pid)
		}
		sum += ns
	}
	return time.Duration(sum)
}

// kb is a size in KB, or from 1 MB on in MB with one decimal.
func kb(n int) string {
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d KB", n>>10)
}
