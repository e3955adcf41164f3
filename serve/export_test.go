package serve

import (
	"github.com/memcascade/memcascade/serve/dialect"
	"github.com/memcascade/memcascade/tokencount"
)

// WaitBackground waits until no background compaction runs, without cancelling any.
func (s *Server) WaitBackground() { s.bg.Wait() }

// Tracked returns the threads the server keeps state for and the bytes of the histories it
// caches.
func (s *Server) Tracked() (threads int, cached int64) {
	s.init() // a test may ask before Serve has begun: init is what makes the threads
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.threads), s.cached
}

// PrevSent is the thread's latest request that the next request of dialect d is parsed
// against (nil: none).
func (s *Server) PrevSent(thread string, d dialect.Dialect) *dialect.Sent {
	s.init()
	return s.prevSent(thread, d)
}

// Measured returns the bytes the server counts for what it keeps of the threads and the same
// measured anew from what it keeps (liveBytes, and keepSent's measure of each latest request).
func (s *Server) Measured() (counted, measured int64) {
	s.init()
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.threads {
		if st.lv != nil {
			measured += liveBytes(st.lv)
		}
		if sent := st.sent; sent != nil {
			measured += histBytes(sent.Msgs) + int64(len(sent.Hashes))*16 + int64(len(sent.Tools))*256 + sent.Spare()
			if sent.Scan != nil {
				measured += sent.Scan.Bytes()
			}
			measured += int64(len(sent.Elem))*8 + int64(len(sent.Params))*32
		}
	}
	return s.cached, measured
}

// CountTools is countTools: the tokens turn t's tools add, as c counts them.
func (s *Server) CountTools(c tokencount.Counter, t dialect.Turn) int { return s.countTools(c, t) }
