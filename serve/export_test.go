package serve

// WaitBackground waits until no background compaction runs, without cancelling any.
func (s *Server) WaitBackground() { s.bg.Wait() }
