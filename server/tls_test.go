package server

import (
	"bufio"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/internal/testcert"
)

// tlsFixture is a CA, the server's TLS configuration (its certificate
// from the CA), and a client certificate from the CA.
type tlsFixture struct {
	ca     *testcert.CA
	server *tls.Config
	client tls.Certificate
}

func newTLSFixture(t *testing.T, auth tls.ClientAuthType) tlsFixture {
	ca := testcert.NewCA(t, "test CA")
	return tlsFixture{
		ca: ca,
		server: &tls.Config{
			Certificates: []tls.Certificate{ca.Issue(t, "rlserver", "127.0.0.1", "localhost").TLS(t)},
			ClientCAs:    ca.Pool(), ClientAuth: auth, MinVersion: tls.VersionTLS12,
		},
		client: ca.Issue(t, "client").TLS(t),
	}
}

// clientConfig is a client's TLS configuration trusting the fixture's CA,
// with the client certificate when cert is true.
func (f tlsFixture) clientConfig(cert bool) *tls.Config {
	c := &tls.Config{RootCAs: f.ca.Pool(), ServerName: "127.0.0.1", MinVersion: tls.VersionTLS12}
	if cert {
		c.Certificates = []tls.Certificate{f.client}
	}
	return c
}

// dialTLS opens a TLS connection to the server's TLS port.
func (s *testServer) dialTLS(t *testing.T, cfg *tls.Config) *rawConn {
	t.Helper()
	conn, err := tls.DialWithDialer(&net.Dialer{Timeout: ioTimeout}, "tcp", s.tlsAddr, cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	conn.SetDeadline(time.Now().Add(ioTimeout))
	return &rawConn{t: t, conn: conn, r: bufio.NewReader(conn)}
}

// go-redis over TLS decides as over the plain port, in RESP2 and RESP3,
// the plain port still serving beside it; CONFIG GET names both ports.
func TestTLSGoRedis(t *testing.T) {
	f := newTLSFixture(t, tls.NoClientCert)
	s := startServer(t, withTLS(f.server))
	ctx := testContext(t)
	for _, proto := range []int{2, 3} {
		rdb := s.goRedis(t, func(o *redis.Options) {
			o.Addr, o.TLSConfig, o.Protocol = s.tlsAddr, f.clientConfig(false), proto
		})
		if v, err := rdb.Do(ctx, "RL.SLIDING", "tls:ada", 10, 1000).Result(); err != nil {
			t.Fatalf("RESP%d over TLS: %v", proto, err)
		} else if proto == 2 && v.([]any)[0] != int64(1) {
			t.Fatalf("RESP2 over TLS: %v", v)
		}
	}
	plain := s.dial(t)
	plain.expect(intReply(1), "EXISTS", "tls:ada")
	_, port, _ := net.SplitHostPort(s.tlsAddr)
	_, plainPort, _ := net.SplitHostPort(s.addr)
	plain.expect(arrayReply(bulkReply("port"), bulkReply(plainPort), bulkReply("tls-port"), bulkReply(port)), "CONFIG", "GET", "port", "tls-port")
}

// With client authentication required, a client without a certificate
// from the CA is refused at the handshake, and one with it is served.
func TestTLSClientAuth(t *testing.T) {
	f := newTLSFixture(t, tls.RequireAndVerifyClientCert)
	s := startServer(t, withTLS(f.server))
	s.dialTLS(t, f.clientConfig(true)).expect("+PONG\r\n", "PING")

	other := testcert.NewCA(t, "other CA")
	for name, cfg := range map[string]*tls.Config{
		"no certificate":         f.clientConfig(false),
		"another CA certificate": {RootCAs: f.ca.Pool(), ServerName: "127.0.0.1", Certificates: []tls.Certificate{other.Issue(t, "x").TLS(t)}},
	} {
		conn, err := tls.DialWithDialer(&net.Dialer{Timeout: ioTimeout}, "tcp", s.tlsAddr, cfg)
		if err == nil {
			// TLS 1.3: the server's refusal arrives with the first read.
			conn.SetDeadline(time.Now().Add(ioTimeout))
			conn.Write([]byte(encode("PING")))
			_, err = conn.Read(make([]byte, 16))
			conn.Close()
		}
		if err == nil {
			t.Errorf("%s: served", name)
		}
	}
}

// A client that connects to the TLS port and never completes the
// handshake holds up nobody: the accept loop goes on, and the handshake is
// the connection's own business. A plain client on the TLS port fails its
// own connection only.
func TestTLSHandshakeDoesNotBlock(t *testing.T) {
	f := newTLSFixture(t, tls.NoClientCert)
	s := startServer(t, withTLS(f.server))
	silent, err := net.Dial("tcp", s.tlsAddr)
	if err != nil {
		t.Fatal(err)
	}
	defer silent.Close()
	plain := dialAddr(t, s.tlsAddr)
	plain.write(encode("PING"))
	if _, err := plain.r.ReadString('\n'); err == nil {
		t.Error("a plain client on the TLS port got a reply")
	}
	s.dialTLS(t, f.clientConfig(false)).expect("+PONG\r\n", "PING")
}

// A refusal reaches a TLS client too, after the handshake, written off the
// accept loop: --maxclients.
func TestTLSRefusals(t *testing.T) {
	f := newTLSFixture(t, tls.NoClientCert)
	s := startServer(t, withTLS(f.server), withConfig(func(c *Config) { c.MaxClients = 1 }))
	first := s.dialTLS(t, f.clientConfig(false))
	first.expect("+PONG\r\n", "PING")
	second := s.dialTLS(t, f.clientConfig(false))
	if got := second.read(); got != "-ERR max number of clients reached\r\n" {
		t.Fatalf("over maxclients: %q", got)
	}
	if _, err := second.r.ReadByte(); !errors.Is(err, io.EOF) {
		t.Errorf("after the refusal: %v, want the connection closed", err)
	}
}
