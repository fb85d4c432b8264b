package server

import (
	"crypto/tls"
	"errors"
	"net"
	"time"
)

// How connections come in: each listener has its accept loop, which puts
// the server's layers over every socket it accepts and hands them to the
// connection. From the socket out: TLS, when the listener speaks it; the
// drain (drain.go), which shows Close and the idle timeout where the
// connection's pipelines begin and end; the protocol guard (guard.go), which
// bounds what a command may make the server hold. The connection's loop
// reads through the guard, so all of them see the clear bytes.

// servedListener is one socket the server answers on.
type servedListener struct {
	dl  *drainingListener // the socket, and what the accept loop takes connections from
	tls *tls.Config       // ServeTLS's; nil for plain connections
}

// wrappedConn is an accepted connection with the server's layers over it.
type wrappedConn struct {
	net.Conn            // what the connection reads and writes: the outermost layer
	drain    *drainConn // nil for a connection that did not come from Serve
	tls      *tls.Conn  // nil for a plain connection
}

// wrap puts the server's layers over a socket accepted on a listener that
// speaks TLS with config (nil: plain).
func wrap(sock net.Conn, config *tls.Config, limits Limits) wrappedConn {
	var cc wrappedConn
	under := sock
	if config != nil {
		cc.tls = tls.Server(sock, config)
		under = cc.tls
	}
	cc.drain = &drainConn{Conn: under}
	cc.Conn = &guardConn{Conn: cc.drain, limits: limits}
	return cc
}

// Serve answers clients on ln until Close. It returns nil after Close, and
// closes ln when it returns. A server may serve several listeners at once
// (a plain port and a TLS one, see ServeTLS).
func (s *Server) Serve(ln net.Listener) error {
	return s.serve(ln, nil)
}

// ServeTLS answers clients over TLS on ln until Close, as Serve does. config
// is the server's side of TLS: its certificate and whether clients must
// present one (ClientAuth, ClientCAs).
func (s *Server) ServeTLS(ln net.Listener, config *tls.Config) error {
	return s.serve(ln, config)
}

// ErrServerClosed is what Serve and ServeTLS return when called after Close.
var ErrServerClosed = errors.New("server closed")

// serve is Serve, over TLS when config is not nil.
func (s *Server) serve(ln net.Listener, config *tls.Config) error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		ln.Close()
		return ErrServerClosed
	}
	dl := newDrainingListener(ln)
	s.listeners = append(s.listeners, servedListener{dl: dl, tls: config})
	s.mu.Unlock()
	s.startOnce.Do(func() {
		go s.syncMemoryLimit()
		if s.cfg.IdleTimeout > 0 {
			go s.closeIdle(s.cfg.IdleTimeout)
		}
	})
	return s.accept(dl, config)
}

// accept takes connections from ln until it closes, and serves each on an
// event loop (Config.EventLoops) or on its own goroutine.
func (s *Server) accept(ln net.Listener, config *tls.Config) error {
	var delay time.Duration
	for {
		sock, err := ln.Accept()
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			// Out of file descriptors, say: wait a little, as net/http does,
			// rather than spin.
			delay = min(max(2*delay, 5*time.Millisecond), time.Second)
			time.Sleep(delay)
			continue
		}
		delay = 0
		if c, onLoop := s.admit(sock, config); c != nil && !onLoop {
			go c.serve()
		}
	}
}

// listenerAddr is the first plain or TLS listener's address, nil if none.
func (s *Server) listenerAddr(isTLS bool) net.Addr {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, l := range s.listeners {
		if (l.tls != nil) == isTLS {
			return l.dl.Addr()
		}
	}
	return nil
}
