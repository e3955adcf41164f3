package testdb

import (
	"encoding/binary"
	"net"
	"net/url"
	"sync"
	"testing"
)

// Proxy is a TCP proxy in front of a PostgreSQL server, for tests of what a lost connection
// does: it forwards every connection it accepts to the server, and cuts them all on demand
// (Cut), once the clients sent a number of bytes more (CutAfter), or refuses new ones (Refuse).
//
// A cut is what a client sees when the network fails: its connection ends at once, and
// nothing the server answers after the cut reaches it. The server receives every byte sent
// before the cut, then the end of the connection (so a COMMIT sent just before a cut is
// committed, and its client never learns it).
type Proxy struct {
	ln     net.Listener
	target string // host:port of the server

	mu      sync.Mutex
	pairs   map[*pair]struct{} // the open connections
	budget  int64              // bytes clients may still send before every connection is cut; <0: no limit
	cuts    int                // times the connections were cut
	sent    int64              // bytes the clients sent through the proxy
	recv    int64              // bytes the server sent to the clients
	refuse  bool
	stopped bool
	wg      sync.WaitGroup
	msgs    map[byte]int64 // the clients' protocol messages, by type (see Messages)
}

// pair is a client's connection and the proxy's to the server.
type pair struct {
	client, server net.Conn
	cut            bool // the client's side is closed; what the server sends is dropped
	from           frontend
}

// frontend reads the messages of a client's side of the protocol as they pass: a startup
// message (untyped: its length and a code, then its body; an SSL or GSS encryption request is
// one too, and another follows it), then messages of a type byte, a length and a body.
type frontend struct {
	started bool
	head    [8]byte
	n       int   // the bytes of head read
	skip    int64 // the bytes of the current message still to pass
}

// read counts the messages that start in b by their type (into counts).
func (f *frontend) read(b []byte, counts map[byte]int64) {
	for len(b) > 0 {
		if f.skip > 0 {
			k := min(int64(len(b)), f.skip)
			b, f.skip = b[k:], f.skip-k
			continue
		}
		size := 5
		if !f.started {
			size = 8
		}
		k := copy(f.head[f.n:size], b)
		f.n += k
		b = b[k:]
		if f.n < size {
			continue
		}
		f.n = 0
		if f.started {
			counts[f.head[0]]++
			f.skip = int64(binary.BigEndian.Uint32(f.head[1:5])) - 4
			continue
		}
		f.skip = int64(binary.BigEndian.Uint32(f.head[0:4])) - 8
		code := binary.BigEndian.Uint32(f.head[4:8])
		f.started = code != 80877103 && code != 80877104
	}
}

// NewProxy starts a proxy on a free local port in front of the server of base (a PostgreSQL
// URL) and stops it when t ends.
func NewProxy(t testing.TB, base string) *Proxy {
	t.Helper()
	u, err := url.Parse(base)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	target := u.Host
	if u.Port() == "" {
		target = net.JoinHostPort(u.Hostname(), "5432")
	}
	p := &Proxy{ln: ln, target: target, pairs: map[*pair]struct{}{}, budget: -1, msgs: map[byte]int64{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.stop)
	return p
}

// URL returns rawURL (a PostgreSQL URL, as Schema returns) with its host and port the proxy's.
func (p *Proxy) URL(t testing.TB, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	if err != nil {
		t.Fatalf("proxy: %v", err)
	}
	u.Host = p.ln.Addr().String()
	return u.String()
}

// Addr is the proxy's host:port.
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Cut cuts every open connection at once.
func (p *Proxy) Cut() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.cutLocked()
}

func (p *Proxy) cutLocked() {
	for c := range p.pairs {
		if !c.cut {
			c.cut = true
			c.client.Close()
			// The server reads what it was sent, then the end of the connection.
			if tc, ok := c.server.(*net.TCPConn); ok {
				tc.CloseWrite()
			} else {
				c.server.Close()
			}
		}
	}
	p.cuts++
	p.budget = -1
}

// CutAfter cuts every open connection once the clients sent n bytes more (n = 0: when a
// client sends its next byte, which the server never receives). Connections opened after the
// cut are forwarded whole.
func (p *Proxy) CutAfter(n int64) {
	p.mu.Lock()
	p.budget = n
	p.mu.Unlock()
}

// Cuts returns how many times the connections were cut.
func (p *Proxy) Cuts() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.cuts
}

// Sent returns how many bytes the clients sent through the proxy so far.
func (p *Proxy) Sent() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent
}

// Received returns how many bytes the server sent to the clients so far.
func (p *Proxy) Received() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.recv
}

// Messages returns how many messages of each of types the clients sent so far, summed: of
// the protocol's frontend messages after the startup ('Q' a simple query, 'E' an execute of
// the extended protocol, 'S' a sync). A round trip ends with a sync or a simple query; a
// statement is run by an execute or a simple query.
func (p *Proxy) Messages(types ...byte) int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	n := int64(0)
	for _, t := range types {
		n += p.msgs[t]
	}
	return n
}

// Refuse makes the proxy close every connection it accepts from now on (on) at once, before a
// byte reaches the server, or forward them again (off).
func (p *Proxy) Refuse(on bool) {
	p.mu.Lock()
	p.refuse = on
	p.mu.Unlock()
}

func (p *Proxy) stop() {
	p.mu.Lock()
	p.stopped = true
	for c := range p.pairs {
		c.client.Close()
		c.server.Close()
	}
	p.mu.Unlock()
	p.ln.Close()
	p.wg.Wait()
}

func (p *Proxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		refuse := p.refuse || p.stopped
		p.mu.Unlock()
		if refuse {
			c.Close()
			continue
		}
		s, err := net.Dial("tcp", p.target)
		if err != nil {
			c.Close()
			continue
		}
		pr := &pair{client: c, server: s}
		p.mu.Lock()
		p.pairs[pr] = struct{}{}
		p.mu.Unlock()
		p.wg.Add(2)
		go p.toServer(pr)
		go p.toClient(pr)
	}
}

// toServer forwards what the client sends, counting it against the budget of CutAfter.
func (p *Proxy) toServer(c *pair) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.client.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if c.cut {
				p.mu.Unlock()
				return
			}
			data := buf[:n]
			cut := false
			if p.budget >= 0 && int64(n) >= p.budget {
				data, cut = buf[:p.budget], true
			} else if p.budget >= 0 {
				p.budget -= int64(n)
			}
			p.sent += int64(len(data))
			c.from.read(data, p.msgs)
			// Written under the lock: a cut right after it keeps the server's answer from the
			// client (toClient forwards under the lock too).
			_, werr := c.server.Write(data)
			if cut {
				p.cutLocked()
			}
			p.mu.Unlock()
			if werr != nil || cut {
				return
			}
		}
		if err != nil {
			p.mu.Lock()
			if !c.cut {
				if tc, ok := c.server.(*net.TCPConn); ok {
					tc.CloseWrite()
				}
			}
			p.mu.Unlock()
			return
		}
	}
}

// toClient forwards what the server sends until the connection is cut, then drains it until
// the server ends it.
func (p *Proxy) toClient(c *pair) {
	defer p.wg.Done()
	defer func() {
		p.mu.Lock()
		delete(p.pairs, c)
		p.mu.Unlock()
		c.client.Close()
		c.server.Close()
	}()
	buf := make([]byte, 32<<10)
	for {
		n, err := c.server.Read(buf)
		if n > 0 {
			p.mu.Lock()
			if !c.cut {
				p.recv += int64(n)
				if _, werr := c.client.Write(buf[:n]); werr != nil {
					c.cut = true
				}
			}
			p.mu.Unlock()
		}
		if err != nil {
			return
		}
	}
}
