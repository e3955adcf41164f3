package serve

import "github.com/memcascade/memcascade/serve/dialect"

// WaitBackground waits until no background compaction runs, without cancelling any.
func (s *Server) WaitBackground() { s.bg.Wait() }

// Tracked returns the threads the server keeps state for and the bytes of the histories it
// caches.
func (s *Server) Tracked() (threads int, cached int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.threads), s.cached
}

// PrevSent is the thread's latest request that the next request of dialect d is parsed
// against (nil: none).
func (s *Server) PrevSent(thread string, d dialect.Dialect) *dialect.Sent {
	return s.prevSent(thread, d)
}
