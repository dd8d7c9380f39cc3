package a2a

// Running is how many tasks run on this host now (their sandbox call, or
// the write of their outcome): for tests that check a call stopped.
func (s *Service) Running() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.running)
}
