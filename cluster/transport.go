package cluster

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hashicorp/raft"
)

// Every shard's Raft group and the forwarding of requests between nodes share
// one listener, the node's bus port. Each connection opens with a header that
// says what it carries:
//
//	magic        2 bytes  "rl"
//	kind         1 byte   streamRaft or streamForward
//	shard        uint16   big endian (streamRaft only; 0 otherwise)
//	fingerprint  8 bytes  the cluster's members and shard count
//
// The header must arrive within headerTimeout, so an idle or foreign
// connection cannot hold a slot; a connection from a node configured with
// other members or another shard count is refused.

const (
	streamRaft    byte = 'R'
	streamForward byte = 'F'
	headerTimeout      = 5 * time.Second
)

// bus accepts connections on the node's bus listener and hands each to the
// Raft group or the forwarding server it is for.
type bus struct {
	ln      net.Listener
	dial    Dialer
	fp      [8]byte // this cluster's fingerprint
	log     *slog.Logger
	warned  atomic.Int64 // unix seconds of the last refusal logged
	groups  map[int]*groupStream
	forward func(net.Conn) // serves one forwarding connection

	mu     sync.Mutex
	closed bool
}

func newBus(ln net.Listener, dial Dialer, fp [8]byte, log *slog.Logger, forward func(net.Conn)) *bus {
	return &bus{ln: ln, dial: dial, fp: fp, log: log, groups: make(map[int]*groupStream), forward: forward}
}

// stream returns the Raft stream layer of shard, to be set up before serve.
func (b *bus) stream(shard int) *groupStream {
	s := &groupStream{shard: shard, addr: b.ln.Addr(), dial: b.dial, fp: b.fp, accept: make(chan net.Conn, 16), closed: make(chan struct{})}
	b.groups[shard] = s
	return s
}

// serve accepts connections until the listener closes.
func (b *bus) serve() {
	for {
		conn, err := b.ln.Accept()
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return
			}
			continue
		}
		go b.route(conn)
	}
}

// route reads a connection's header and hands it over.
func (b *bus) route(conn net.Conn) {
	conn.SetReadDeadline(time.Now().Add(headerTimeout))
	var h [headerSize]byte
	if _, err := io.ReadFull(conn, h[:]); err != nil || string(h[:2]) != "rl" {
		conn.Close()
		return
	}
	if [8]byte(h[5:]) != b.fp {
		// Rate-limited: a misconfigured peer retries all the time.
		if now := time.Now().Unix(); b.warned.Swap(now) != now {
			b.log.Error("refused a node configured with other members or another --shards", "from", conn.RemoteAddr().String())
		}
		conn.Close()
		return
	}
	conn.SetReadDeadline(time.Time{})
	switch h[2] {
	case streamForward:
		b.forward(conn)
	case streamRaft:
		g, ok := b.groups[int(binary.BigEndian.Uint16(h[3:]))]
		if !ok {
			conn.Close()
			return
		}
		select {
		case g.accept <- conn:
		case <-g.closed:
			conn.Close()
		}
	default:
		conn.Close()
	}
}

func (b *bus) close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return nil
	}
	b.closed = true
	return b.ln.Close()
}

// Dialer opens a TCP connection; tests replace it to cut links.
type Dialer func(addr string, timeout time.Duration) (net.Conn, error)

func tcpDial(addr string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, timeout)
}

const headerSize = 13

// dialBus opens a connection to a peer's bus for kind (and shard), in the
// cluster fp identifies.
func dialBus(dial Dialer, fp [8]byte, addr string, kind byte, shard int, timeout time.Duration) (net.Conn, error) {
	conn, err := dial(addr, timeout)
	if err != nil {
		return nil, err
	}
	h := make([]byte, headerSize)
	h[0], h[1], h[2] = 'r', 'l', kind
	binary.BigEndian.PutUint16(h[3:], uint16(shard))
	copy(h[5:], fp[:])
	conn.SetWriteDeadline(time.Now().Add(timeout))
	if _, err := conn.Write(h); err != nil {
		conn.Close()
		return nil, fmt.Errorf("bus header to %s: %w", addr, err)
	}
	conn.SetWriteDeadline(time.Time{})
	return conn, nil
}

// groupStream is one Raft group's view of the bus: a raft.StreamLayer whose
// Accept yields that group's connections and whose Dial opens them.
type groupStream struct {
	shard     int
	addr      net.Addr
	dial      Dialer
	fp        [8]byte
	accept    chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
}

// Accept waits for the next connection to this group.
func (s *groupStream) Accept() (net.Conn, error) {
	select {
	case c := <-s.accept:
		return c, nil
	case <-s.closed:
		return nil, net.ErrClosed
	}
}

// Close stops this group's Accept; the shared listener stays open.
func (s *groupStream) Close() error {
	s.closeOnce.Do(func() { close(s.closed) })
	return nil
}

// Addr is the bus address.
func (s *groupStream) Addr() net.Addr { return s.addr }

// Dial opens a connection to this group on the peer at address.
func (s *groupStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return dialBus(s.dial, s.fp, string(address), streamRaft, s.shard, timeout)
}
