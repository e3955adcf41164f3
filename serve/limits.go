package serve

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sync"
	"time"

	"github.com/memcascade/memcascade/memory"
	"github.com/memcascade/memcascade/serve/dialect"
)

// budget bounds the bytes held at once over all requests: request bodies and the upstream's
// replies being read. A request that would go over it is answered 503 with Retry-After.
type budget struct {
	mu        sync.Mutex
	max, used int64
}

// take reserves n bytes, or reports that they do not fit.
func (b *budget) take(n int64) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.used+n > b.max {
		return false
	}
	b.used += n
	return true
}

func (b *budget) give(n int64) {
	b.mu.Lock()
	b.used -= n
	b.mu.Unlock()
}

// errBusy is a read that would take the bytes in flight over the server's budget.
var errBusy = errors.New("the server holds its limit of bytes in flight")

// budgetReader reserves in its budget every byte it reads; held says how many. The caller
// gives them back.
type budgetReader struct {
	r    io.Reader
	b    *budget
	held int64
}

func (br *budgetReader) Read(p []byte) (int, error) {
	n, err := br.r.Read(p)
	if n > 0 {
		if !br.b.take(int64(n)) {
			return 0, errBusy
		}
		br.held += int64(n)
	}
	return n, err
}

// readAll reads r whole within the budget: it returns what it read and the function that gives
// its bytes back (to call once they are no longer held). size, when known (>= 0), sizes the
// buffer; a size that cannot fit the budget is errBusy before anything is read.
func (s *Server) readAll(r io.Reader, size int64) ([]byte, func(), error) {
	br := &budgetReader{r: r, b: &s.inflight}
	free := func() { s.inflight.give(br.held) }
	if size > s.inflight.max {
		return nil, free, errBusy
	}
	var buf bytes.Buffer
	if size > 0 {
		buf.Grow(int(size) + bytes.MinRead)
	}
	_, err := buf.ReadFrom(br)
	return buf.Bytes(), free, err
}

// holdParse reserves in the budget of bytes in flight what parsing body holds, its size again,
// and returns the function that gives back both the body's bytes (free) and those; ok false:
// over the budget, with the body's bytes given back. The memory a large body took is left to
// the runtime, bounded by the soft memory limit memctl serve sets (Server.MemoryLimit): a
// collection forced after each such body cost a thread of 50,000 messages (8.5 MB a request)
// about 12 ms of CPU a turn.
func (s *Server) holdParse(body []byte, free func()) (func(), bool) {
	n := int64(len(body))
	if !s.inflight.take(n) {
		free()
		return nil, false
	}
	return func() {
		free()
		s.inflight.give(n)
	}, true
}

// stallReader reads a request body within its deadlines: before each read it sets the
// connection's read deadline to the earlier of the body's deadline (end) and stall from now,
// so a client that sends nothing for stall is cut as one too slow overall is. stalled says
// which of the two a deadline error met.
type stallReader struct {
	r       io.Reader
	rc      *http.ResponseController
	end     time.Time
	stall   time.Duration
	stalled bool
	n       int64 // bytes read
}

func (sr *stallReader) Read(p []byte) (int, error) {
	d := time.Now().Add(sr.stall)
	sr.stalled = d.Before(sr.end)
	if !sr.stalled {
		d = sr.end
	}
	sr.rc.SetReadDeadline(d)
	n, err := sr.r.Read(p)
	sr.n += int64(n)
	return n, err
}

// readBody reads a request's body, at most limit bytes, within ReadBodyTimeout of its start,
// with no pause of ReadBodyStall, and within the budget of bytes in flight. It writes the error
// itself, in d's shape (413 over the limit, 408 too slow or stalled, with the connection closed and one log
// line naming the client's address, 503 with Retry-After over the budget, 400 unreadable) and
// then returns ok false. free gives the body's bytes back to the budget.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request, d dialect.Dialect, limit int64) (body []byte, free func(), ok bool) {
	rc := http.NewResponseController(w)
	start := time.Now()
	sr := &stallReader{r: r.Body, rc: rc, end: start.Add(s.ReadBodyTimeout), stall: s.ReadBodyStall}
	s.conns.readingBody(r.Context(), true)
	defer s.conns.readingBody(r.Context(), false)
	cut := false
	defer func() {
		if cut {
			// A deadline past: what the server reads of the body after the answer (to reuse
			// the connection) fails at once, and the connection is closed, not held by a
			// client that sends no more.
			rc.SetReadDeadline(time.Unix(1, 0))
			return
		}
		rc.SetReadDeadline(time.Time{}) // a deadline left would end a long reply: the server reads ahead to see a client leave
	}()
	if r.ContentLength > limit {
		writeCodeIn(w, d, CodeTooLarge, "request_too_large",
			fmt.Sprintf("the request body is over %d bytes", limit), "")
		return nil, nil, false
	}
	body, free, err := s.readAll(http.MaxBytesReader(w, io.NopCloser(sr), limit), r.ContentLength)
	if err == nil {
		return body, free, true
	}
	free()
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		writeCodeIn(w, d, CodeTooLarge, "request_too_large",
			fmt.Sprintf("the request body is over %d bytes", tooBig.Limit), "")
	case errors.Is(err, errBusy):
		busy(w, d)
	case errors.Is(err, os.ErrDeadlineExceeded):
		cut = true
		msg, why := fmt.Sprintf("the request body did not arrive within %s", s.ReadBodyTimeout), "too_slow"
		if sr.stalled {
			msg, why = fmt.Sprintf("the request body stalled: no byte of it for %s", s.ReadBodyStall), "stalled"
		}
		s.Logger.Warn("request body cut: answered 408, connection closed", "remote", r.RemoteAddr, "cut", why,
			"received_bytes", sr.n, "ms", time.Since(start).Milliseconds())
		w.Header().Set("Connection", "close")
		writeCodeIn(w, d, CodeTimeout, "request_timeout", fmt.Sprintf("%s (%d bytes received)", msg, sr.n), "")
	default:
		writeCodeIn(w, d, memory.CodeInvalid, "unreadable_body", "cannot read the request body: "+err.Error(), "")
	}
	return nil, nil, false
}

// busy answers 503 with Retry-After: the bytes in flight are at the server's budget.
func busy(w http.ResponseWriter, d dialect.Dialect) {
	w.Header().Set("Retry-After", "1")
	writeCodeIn(w, d, memory.CodeUnavailable, "server_busy",
		"the server holds its limit of bytes in flight (MaxInFlightBytes): retry after a second", "")
}
