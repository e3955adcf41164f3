package serve

import (
	"context"
	"net"
	"net/http"
	"sync"
	"time"
)

// connCap bounds the client connections open at once, so that slow clients cannot take every
// file descriptor of the process (after which nothing is accepted, the normal requests
// included, until the clients' read timeouts end). At the bound, a new connection closes the
// one that has waited longest without a request in progress, if it has waited connGrace at
// least: one that has not sent its request's headers yet or is idle between requests, else
// one whose request is still sending its body. When none has, the new connection waits to be
// accepted (in the kernel's queue, or held unread, one at a time) until one has, or one
// closes. A connection is then given connGrace to send its request whatever many slow ones
// come after it, and one whose request has been read is never closed.
type connCap struct {
	max    int
	mu     sync.Mutex
	conns  map[net.Conn]*connInfo
	closed chan struct{} // closed with the listener
	once   sync.Once
}

// connGrace is how long a new connection, or one between requests, is kept at the bound.
const connGrace = time.Second

// connInfo is what the cap knows of an open connection: whether it waits (no request in
// progress: not yet sent, or idle), whether its request is reading its body, and since when.
type connInfo struct {
	waiting, reading bool
	since            time.Time
}

// capListener applies a connCap to the connections it accepts.
type capListener struct {
	net.Listener
	c *connCap
}

func (l capListener) Accept() (net.Conn, error) {
	conn, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	if !l.c.admit(conn) {
		conn.Close()
		return nil, net.ErrClosed
	}
	return conn, nil
}

func (l capListener) Close() error {
	l.c.once.Do(func() { close(l.c.closed) })
	return l.Listener.Close()
}

// admit records a new connection, closing first, at the bound, the one that waited longest
// (see connCap), or waiting until one can be closed. It reports false when the listener was
// closed meanwhile.
func (c *connCap) admit(conn net.Conn) bool {
	for {
		c.mu.Lock()
		victim, wait := c.victim()
		if victim != nil || len(c.conns) < c.max {
			if victim != nil {
				delete(c.conns, victim)
			}
			c.conns[conn] = &connInfo{waiting: true, since: time.Now()}
			c.mu.Unlock()
			if victim != nil {
				victim.Close()
			}
			return true
		}
		c.mu.Unlock()
		select {
		case <-c.closed:
			return false
		case <-time.After(min(wait, 20*time.Millisecond)): // a connection may close meanwhile
		}
	}
}

// victim returns, at the bound, the connection to close for a new one (nil: none), else how
// long until one can be.
func (c *connCap) victim() (net.Conn, time.Duration) {
	if len(c.conns) < c.max {
		return nil, 0
	}
	var victim net.Conn
	var best *connInfo
	wait := connGrace
	now := time.Now()
	for vc, info := range c.conns {
		if !info.waiting && !info.reading {
			continue
		}
		if age := now.Sub(info.since); age < connGrace {
			wait = min(wait, connGrace-age)
			continue
		}
		if best == nil || info.waiting && !best.waiting || info.waiting == best.waiting && info.since.Before(best.since) {
			victim, best = vc, info
		}
	}
	if victim == nil {
		return nil, wait
	}
	return victim, 0
}

// state follows the connection's state (http.Server.ConnState).
func (c *connCap) state(conn net.Conn, st http.ConnState) {
	c.mu.Lock()
	defer c.mu.Unlock()
	info := c.conns[conn]
	switch {
	case info == nil:
	case st == http.StateClosed || st == http.StateHijacked:
		delete(c.conns, conn)
	case st == http.StateActive:
		info.waiting, info.reading = false, false
	case st == http.StateIdle:
		info.waiting, info.since = true, time.Now()
	}
}

// readingBody marks the request's connection as reading the request's body (on) or done with
// it: a connection reading its body may be closed at the bound once no waiting one is left.
func (c *connCap) readingBody(ctx context.Context, on bool) {
	conn, _ := ctx.Value(connKey{}).(net.Conn)
	if c == nil || conn == nil {
		return
	}
	c.mu.Lock()
	if info := c.conns[conn]; info != nil {
		info.reading, info.since = on, time.Now()
	}
	c.mu.Unlock()
}

// connKey is the context key of a request's connection (http.Server.ConnContext).
type connKey struct{}

// newConnCap returns the cap of max connections (nil: no cap).
func newConnCap(max int) *connCap {
	if max <= 0 {
		return nil
	}
	return &connCap{max: max, conns: map[net.Conn]*connInfo{}, closed: make(chan struct{})}
}

// defaultMaxConns is the connection bound that leaves room within the process's limit of
// open files (RLIMIT_NOFILE) for the store's files and a connection to the upstream per
// request: half of what is left after 64, at least 16 (0: no limit known).
func defaultMaxConns() int {
	n := openFileLimit()
	if n <= 0 {
		return 0
	}
	return max(16, int(min(n-64, 1<<30)/2))
}
