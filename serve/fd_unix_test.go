//go:build unix

package serve_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/memcascade/memcascade/internal/testdb"
)

// fdChildEnv makes the test binary the server of TestSlowClientsLowFileLimit.
const fdChildEnv = "MEMCASCADE_SERVE_FD_CHILD"

// Many slow clients do not make a normal request fail when the server has few file
// descriptors: the server runs in a child process whose limit of open files is 256, and 300
// clients in this process hold connections to it, half sending their headers a line every
// 200 ms, half their body a byte at a time, each dialling again as soon as it is closed. Its
// read timeouts are the defaults (10 s for headers, 30 s for a body), longer than the normal
// requests wait (5 s each): what lets them through is the connection bound, which at 256
// files is 96 connections, a new one closing the one that waited longest once it has waited
// a second. Without the bound, the first normal request times out; with it, each is answered
// in about 2 s (its wait in the queue of connections to accept, behind the slow ones).
func TestSlowClientsLowFileLimit(t *testing.T) {
	if os.Getenv(fdChildEnv) != "" {
		fdChild(t)
		return
	}
	cmd := exec.Command(os.Args[0], "-test.run=^TestSlowClientsLowFileLimit$", "-test.count=1")
	cmd.Env = append(testdb.Environ(), fdChildEnv+"=1")
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var childErr strings.Builder
	cmd.Stderr = &childErr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		stdin.Close() // the child stops serving
		if err := cmd.Wait(); err != nil {
			t.Errorf("the server's process: %v\n%s", err, childErr.String())
		}
	}()
	out := bufio.NewReader(stdout)
	var url string
	for url == "" {
		line, err := out.ReadString('\n')
		if err != nil {
			t.Fatalf("the server's process printed no URL: %v\n%s", err, childErr.String())
		}
		url, _ = strings.CutPrefix(strings.TrimSpace(line), "URL ")
		if url == strings.TrimSpace(line) {
			url = ""
		}
	}
	go io.Copy(io.Discard, out)
	addr := strings.TrimPrefix(url, "http://")

	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
	post := func(thread string, i int) (*http.Response, error) {
		return client.Post(url+"/t/"+thread+"/v1/chat/completions", "application/json",
			strings.NewReader(fmt.Sprintf(`{"model":"gpt-4o","messages":[{"role":"user","content":"turn %d"}]}`, i)))
	}
	// A first request before the slow clients loads the tokenizer and opens the store, so that
	// the requests measured among them wait for the connections only.
	resp, err := post("warm", 0)
	if err != nil {
		t.Fatalf("the first request, alone: %v", err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 {
		t.Fatalf("the first request, alone: %s", resp.Status)
	}

	stop := make(chan struct{})
	var slow sync.WaitGroup
	for i := 0; i < 300; i++ {
		slow.Add(1)
		go func() {
			defer slow.Done()
			slowClient(addr, i%2 == 0, stop)
		}()
	}
	defer func() { close(stop); slow.Wait() }()
	time.Sleep(time.Second) // the slow clients hold their connections

	for i := 0; i < 3; i++ {
		start := time.Now()
		resp, err := post("normal", i)
		if err != nil {
			time.Sleep(100 * time.Millisecond)
			t.Logf("%s", childErr.String()[max(0, len(childErr.String())-3000):])
			t.Fatalf("normal request %d among 300 slow clients, 256 files: %v after %v", i, err, time.Since(start))
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Fatalf("normal request %d: %d %s", i, resp.StatusCode, b)
		}
		t.Logf("normal request %d answered in %v", i, time.Since(start))
	}
}

// slowClient holds a connection to addr sending a request slowly (its headers, or its body
// when body), dialling again whenever the server closes it, until stop.
func slowClient(addr string, body bool, stop chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		conn, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			time.Sleep(50 * time.Millisecond)
			continue
		}
		head := "POST /t/slow/v1/chat/completions HTTP/1.1\r\nHost: 127.0.0.1\r\n"
		if body {
			head += "Content-Type: application/json\r\nContent-Length: 100000\r\n\r\n"
		}
		_, err = io.WriteString(conn, head)
		for err == nil {
			select {
			case <-stop:
				conn.Close()
				return
			case <-time.After(200 * time.Millisecond):
			}
			if body {
				_, err = io.WriteString(conn, " ")
			} else {
				_, err = io.WriteString(conn, "X-Slow: 1\r\n")
			}
		}
		conn.Close()
		time.Sleep(50 * time.Millisecond)
	}
}

// fdChild serves, with a limit of 256 open files, until its stdin is closed; it prints the
// server's URL first.
func fdChild(t *testing.T) {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		t.Fatal(err)
	}
	l.Cur = 256
	if err := syscall.Setrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		t.Fatal(err)
	}
	e := newEnv(t, envOptions{})
	fmt.Printf("URL %s\n", e.url)
	io.Copy(io.Discard, os.Stdin)
}
