package cluster

import (
	"crypto/tls"
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

// Every Raft group, the forwarding of requests between nodes and the
// control plane's calls share one listener, the node's bus port. Each
// connection opens with a header that says what it carries:
//
//	magic        2 bytes  "rl"
//	kind         1 byte   streamRaft, streamControl, streamForwardMux or
//	                      streamJoin
//	shard        uint16   big endian (streamRaft only, catalogueGroup for
//	                      the catalogue's group; 0 otherwise)
//	fingerprint  8 bytes  the cluster's id: its initial members and shard
//	                      count
//
// The header must arrive within headerTimeout, so an idle or foreign
// connection cannot hold a slot; a connection from a node of another
// cluster is refused. A joining connection (joining.go), opened by a node
// that does not know the cluster's id yet, is let through without it: it
// can only ask to join, or what the cluster thinks of a node. With BusTLS
// the connection is TLS, mutually authenticated (bustls.go), and the
// header follows the handshake, which must also end within headerTimeout.
// A node closes a stream of a kind it does not know.

const (
	streamRaft byte = 'R'
	// streamControl carries the control plane's calls: status and
	// catalogue changes (controlstream.go).
	streamControl byte = 'F'
	// streamForwardMux is multiplexed forwarding (forward.go).
	streamForwardMux byte = 'M'
	headerTimeout         = 5 * time.Second
)

// catalogueGroup is the catalogue group's id on the bus, beyond the shard
// numbers.
const catalogueGroup = 0xFFFF

// bus accepts connections on the node's bus listener and hands each to the
// Raft group or the server of the stream it is for.
type bus struct {
	ln net.Listener
	// self is the node's bus address, as the others dial it: every Raft
	// group gives it as its own (groupStream.Addr), whatever address the
	// listener is bound to.
	self   busAddr
	dialer busDialer
	tls    *tls.Config // the accepting end of BusTLS; nil for plain TCP
	log    *slog.Logger
	warned atomic.Int64 // unix seconds of the last refusal logged
	// serve serves one connection of each stream kind but Raft's; a kind
	// it has no server for is closed.
	serve map[byte]func(net.Conn)

	mu     sync.Mutex
	closed bool
	groups map[int]*groupStream // the Raft groups this node runs, by shard
}

func newBus(ln net.Listener, self string, dialer busDialer, sec *BusTLS, log *slog.Logger, serve map[byte]func(net.Conn)) *bus {
	b := &bus{ln: ln, self: busAddr(self), dialer: dialer, log: log, groups: make(map[int]*groupStream), serve: serve}
	if sec != nil {
		b.tls = sec.server()
	}
	return b
}

// stream returns a new Raft stream layer for shard (catalogueGroup for the
// catalogue's group); connections for it go to it until it is closed.
func (b *bus) stream(shard int) *groupStream {
	s := &groupStream{shard: shard, addr: b.self, dialer: b.dialer, accept: make(chan net.Conn, 16), closed: make(chan struct{})}
	s.detach = func() {
		b.mu.Lock()
		if b.groups[shard] == s {
			delete(b.groups, shard)
		}
		b.mu.Unlock()
	}
	b.mu.Lock()
	b.groups[shard] = s
	b.mu.Unlock()
	return s
}

// group is shard's stream, or nil.
func (b *bus) group(shard int) *groupStream {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.groups[shard]
}

// accept accepts connections until the listener closes.
func (b *bus) accept() {
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
	setUserTimeout(conn, busUserTimeout)
	conn.SetDeadline(time.Now().Add(headerTimeout))
	if b.tls != nil {
		tc := tls.Server(conn, b.tls)
		if err := tc.Handshake(); err != nil {
			b.refused("refused a bus connection that failed mutual TLS", conn, err)
			conn.Close()
			return
		}
		conn = tc
	}
	var h [headerSize]byte
	if _, err := io.ReadFull(conn, h[:]); err != nil || string(h[:2]) != "rl" {
		conn.Close()
		return
	}
	if h[2] != streamJoin && ClusterID(h[5:]) != b.dialer.fp {
		b.refused("refused a node of another cluster (configured with other members or another shard count)", conn, nil)
		conn.Close()
		return
	}
	conn.SetDeadline(time.Time{})
	if h[2] != streamRaft {
		if serve := b.serve[h[2]]; serve != nil {
			serve(conn)
		} else {
			conn.Close()
		}
		return
	}
	g := b.group(int(binary.BigEndian.Uint16(h[3:])))
	if g == nil {
		conn.Close()
		return
	}
	select {
	case g.accept <- conn:
	case <-g.closed:
		conn.Close()
	}
}

// refused logs a refused connection, at most once a second: a
// misconfigured peer, or an intruder, retries all the time.
func (b *bus) refused(msg string, conn net.Conn, err error) {
	if now := time.Now().Unix(); b.warned.Swap(now) != now {
		args := []any{"from", conn.RemoteAddr().String()}
		if err != nil {
			args = append(args, "err", err)
		}
		b.log.Error(msg, args...)
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
	conn, err := net.DialTimeout("tcp", addr, timeout)
	if err == nil {
		setUserTimeout(conn, busUserTimeout)
	}
	return conn, err
}

// busUserTimeout is how long data sent on a bus connection may go
// unacknowledged before the connection is given up (setUserTimeout). A peer
// that is up acknowledges within milliseconds, whatever its load; 2 s is
// two request timeouts, so a connection into a partition is replaced
// before the next request waits on it for long, and a brief loss of
// packets, which TCP's retransmissions mend, does not break connections.
const busUserTimeout = 2 * time.Second

const headerSize = 13

// busDialer opens connections to the peers' buses.
type busDialer struct {
	dial Dialer
	fp   ClusterID   // this cluster's id
	tls  *tls.Config // the dialling end of BusTLS; nil for plain TCP
}

// newBusDialer returns the dialer of a cluster fp identifies, secured by
// sec when it is not nil.
func newBusDialer(dial Dialer, fp ClusterID, sec *BusTLS) busDialer {
	d := busDialer{dial: dial, fp: fp}
	if sec != nil {
		d.tls = sec.client()
	}
	return d
}

// connectTimeout bounds the TCP connect of a bus connection, whatever
// longer timeout its caller gives for the whole exchange (Raft's transport
// gives 10 s). A peer that answers connects in milliseconds on the networks
// a cluster runs on; one that does not is usually gone: a pod replaced under
// the same name, whose old address the DNS still gives for a while. Waiting
// the whole 10 s for it kept a replaced pod unready that long after it
// started (the StatefulSet emulation measured 2-10 s), since the leader's
// replication to it waited in the dial; capped, the leader dials again,
// resolving the name afresh. 3 s lets a SYN be sent again once (Linux
// retries it after 1 s).
const connectTimeout = 3 * time.Second

// open opens a connection to a peer's bus for kind (and shard).
func (d busDialer) open(addr string, kind byte, shard int, timeout time.Duration) (net.Conn, error) {
	conn, err := d.dial(addr, min(timeout, connectTimeout))
	if err != nil {
		return nil, err
	}
	if d.tls != nil {
		tc := tls.Client(conn, d.tls)
		tc.SetDeadline(time.Now().Add(timeout))
		if err := tc.Handshake(); err != nil {
			conn.Close()
			return nil, fmt.Errorf("bus TLS handshake with %s: %w", addr, err)
		}
		tc.SetDeadline(time.Time{})
		conn = tc
	}
	fp := d.fp
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
	addr      busAddr
	dialer    busDialer
	accept    chan net.Conn
	closed    chan struct{}
	closeOnce sync.Once
	detach    func() // takes it off the bus
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

// Close stops this group's Accept and takes it off the bus; the shared
// listener stays open.
func (s *groupStream) Close() error {
	s.closeOnce.Do(func() {
		close(s.closed)
		if s.detach != nil {
			s.detach()
		}
	})
	return nil
}

// Addr is the node's bus address as the other nodes dial it, which Raft
// gives as this node's address in every request it sends (as a vote's
// candidate, an append's leader). It is never the listener's own address:
// nodes that listen on the same wildcard address and port (0.0.0.0:16380,
// each in a container of its own) would all give the same one, and a voter
// that had voted for one of them in a term would take another's request in
// that term for the same candidate's, and vote twice.
func (s *groupStream) Addr() net.Addr { return s.addr }

// busAddr is a node's bus address, host:port, as a net.Addr.
type busAddr string

// Network is "tcp".
func (busAddr) Network() string { return "tcp" }

// String is the address.
func (a busAddr) String() string { return string(a) }

// Dial opens a connection to this group on the peer at address.
func (s *groupStream) Dial(address raft.ServerAddress, timeout time.Duration) (net.Conn, error) {
	return s.dialer.open(string(address), streamRaft, s.shard, timeout)
}
