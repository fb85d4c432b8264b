package server

import (
	"context"
	"net"
	"time"
)

// Clients may speak TLS on a listener of their own (--tls-port), served
// by the same loop as plain connections: the TLS connection sits under the
// drain and the protocol guard, so both see the clear bytes (accept.go).
// Its handshake runs on the connection's own goroutine, never on the
// accept loop, and is bounded in time, so a client that connects and says
// nothing holds no more than a plain one does.

// tlsHandshakeTimeout bounds a client's TLS handshake.
const tlsHandshakeTimeout = 10 * time.Second

// refuseTimeout bounds the write of a refusal (and the TLS handshake it
// needs on a TLS connection).
const refuseTimeout = tlsHandshakeTimeout

// tlsHandshake completes a TLS connection's handshake, within
// tlsHandshakeTimeout; false if it failed (the connection is then closed by
// the caller). A plain connection has none to do.
func (c *conn) tlsHandshake() bool {
	if c.tlsConn == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(context.Background(), tlsHandshakeTimeout)
	defer cancel()
	return c.tlsConn.HandshakeContext(ctx) == nil
}

// refuse writes a refusal to a connection that will not be served, and
// closes it. The write happens on a goroutine of its own, within
// refuseTimeout: on a TLS connection it needs the handshake first, and the
// accept loop must not wait for a client.
func refuse(nc net.Conn, reply string) {
	go func() {
		nc.SetDeadline(time.Now().Add(refuseTimeout))
		nc.Write([]byte(reply))
		nc.Close()
	}()
}
