package serve

// WaitBackground waits until no background compaction runs, without cancelling any.
func (s *Server) WaitBackground() { s.bg.Wait() }

// Tracked returns the threads the server keeps state for and the bytes of the histories it
// caches.
func (s *Server) Tracked() (threads int, cached int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.threads), s.cached
}
