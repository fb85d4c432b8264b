package server

import "time"

// Redis's timeout: a connection that has sent no command for that long is
// closed, so that clients which vanished without closing (and connections
// opened only to hold a slot of --maxclients) give their resources back. A
// command must also arrive whole within that time: a client dribbling one
// byte at a time counts as idle.
//
// Nothing is done per command: the connection's loop already records when
// its last pipeline was answered (for CLIENT LIST's idle=), and one sweep
// over the connections, a few times per timeout, closes those that are
// waiting for a command and have been for too long. A connection whose
// commands are still being answered (a commit waiting for an election) is
// never closed by it.

// closeIdle sweeps the connections until Close, closing the idle ones.
func (s *Server) closeIdle(timeout time.Duration) {
	t := time.NewTicker(min(max(timeout/10, 100*time.Millisecond), time.Second))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case now := <-t.C:
			s.sweepIdle(now.Add(-timeout).UnixMilli())
		}
	}
}

// sweepIdle closes the connections waiting for a command whose last one
// was answered before the Unix ms since.
func (s *Server) sweepIdle(since int64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, c := range s.clients {
		if c.drain != nil && c.lastCmd.Load() < since {
			c.drain.closeIfIdle()
		}
	}
}
