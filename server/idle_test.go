package server

import (
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// The sweep closes the connections that wait for a command and sent none
// since the time given, and leaves the others.
func TestSweepIdle(t *testing.T) {
	s := startServer(t)
	quiet, chatty := s.dial(t), s.dial(t)
	quiet.expect("+PONG\r\n", "PING")
	poll.Until(t, ioTimeout, "two connections", func() (bool, error) { return s.clientCount() == 2, nil })
	s.sweepIdle(time.Now().Add(-time.Hour).UnixMilli()) // nobody is an hour idle
	chatty.expect("+PONG\r\n", "PING")
	quiet.expect("+PONG\r\n", "PING")

	cut := time.Now().UnixMilli() + 1
	poll.Until(t, ioTimeout, "the clock to pass the cut", func() (bool, error) { return time.Now().UnixMilli() > cut, nil })
	chatty.expect("+PONG\r\n", "PING") // answered after the cut: not idle
	s.sweepIdle(cut)
	quiet.expectClosed()
	chatty.expect("+PONG\r\n", "PING")
}

// With an idle timeout, a connection that says nothing is closed once the
// timeout has passed, and one that keeps sending commands is not; CONFIG
// GET timeout reports it in seconds.
func TestIdleTimeout(t *testing.T) {
	const timeout = 300 * time.Millisecond
	s := startServer(t, withConfig(func(c *Config) { c.IdleTimeout = timeout }))
	quiet, chatty := s.dial(t), s.dial(t)
	start := time.Now()
	quiet.expect("+PONG\r\n", "PING")
	tick := time.NewTicker(timeout / 4)
	defer tick.Stop()
	closed := make(chan time.Duration, 1)
	go func() {
		buf := make([]byte, 1)
		quiet.conn.Read(buf) // returns when the server closes it
		closed <- time.Since(start)
	}()
	for {
		select {
		case took := <-closed:
			if took < timeout {
				t.Fatalf("closed after %v, before the %v timeout", took, timeout)
			}
			chatty.expect("+PONG\r\n", "PING")
			chatty.expect(arrayReply(bulkReply("timeout"), bulkReply("0")), "CONFIG", "GET", "timeout")
			return
		case <-tick.C:
			chatty.expect("+PONG\r\n", "PING")
		case <-time.After(ioTimeout):
			t.Fatal("the idle connection was never closed")
		}
	}
}

// CONFIG GET timeout is --timeout, in seconds.
func TestConfigGetTimeout(t *testing.T) {
	s := startServer(t, withConfig(func(c *Config) { c.IdleTimeout = 300 * time.Second }))
	s.dial(t).expect(arrayReply(bulkReply("timeout"), bulkReply("300")), "CONFIG", "GET", "timeout")
}
