package server

import (
	"crypto/rand"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/federation"
	"github.com/rlserver/rlserver/internal/resp"
)

// Shards is what the server needs from the layer that owns shard state.
type Shards interface {
	// Shards is the number of shards.
	Shards() int
	// ShardOf is the shard that owns a hash slot.
	ShardOf(slot uint16) int
	// Submit queues a request on a shard; its Done is signalled when applied.
	Submit(shard int, r *cluster.Request)
	// Stats are a shard's counters.
	Stats(shard int) engine.Stats
	// Read answers a read-only shard-wide command (DBSIZE, SCAN, DEBUG
	// DIGEST) from this node's replica of a shard without going through the
	// log (through the shard's leader where the node holds no replica).
	Read(shard int, cmd engine.Command) (engine.Result, error)
	// SetWriteObserver makes o hear of the writes the shards apply on this
	// node, for client-side caching (tracking.go).
	SetWriteObserver(o cluster.WriteObserver)
	// ObservesWrites reports whether the write observer hears of every
	// write to shard: not when this node holds no replica of it.
	ObservesWrites(shard int) bool
}

// Cluster is what the server needs to answer as a node of a cluster.
type Cluster interface {
	// Self is this node, Members every node; Nodes every node with
	// whether it answers.
	Self() cluster.Member
	Members() []cluster.Member
	Nodes() []cluster.NodeView
	// Topology describes every shard: its slots, leader and replicas.
	Topology() []cluster.ShardView
	// Leader is a shard's leader as this node knows it: local when it is
	// this node, known false during an election.
	Leader(shard int) (leader cluster.Member, local, known bool)
}

// RaftInfo describes the shards' Raft groups, for INFO.
type RaftInfo interface {
	RaftStates() []cluster.RaftState
	// Registered reports whether the cluster's catalogue holds this
	// node's data directory (a cluster node only).
	Registered() bool
	// Fitness is what the node's checks found: its clock against the
	// other nodes', its logs' disk, and why it must not lead, if it must
	// not.
	Fitness() cluster.Fitness
}

// Federation is a region's part in a federation (federation.Federation),
// for INFO.
type Federation interface {
	Stats() federation.Stats
}

// Clock is the time decisions use (for TIME).
type Clock interface {
	Now() int64      // Unix ms
	NowMicro() int64 // Unix µs
}

// DebugClock is a Clock that DEBUG CLOCK can stop and move (the test's
// time, Test), and make wrong (SetOffset: the host's clock off by ms, as
// the clock check sees it; Now is Test plus it).
type DebugClock interface {
	Clock
	Set(ms int64)
	Advance(ms int64) int64
	Real()
	Test() int64
	SetOffset(ms int64)
}

// DebugDisk is the faults DEBUG DISK injects into a durable node's logs
// (persistence.DiskFaults).
type DebugDisk interface {
	Fail(errno syscall.Errno)
	Slow(d time.Duration)
	State() (syscall.Errno, time.Duration)
}

// RedisVersion is the Redis version rlserver reports (HELLO, INFO, a
// script's redis.REDIS_VERSION): clients pick their behaviour from it, and
// rlserver answers as Redis 7 does.
const RedisVersion = "7.4.0"

// Server serves the Redis protocol on its listeners (Serve, ServeTLS).
type Server struct {
	cfg    Config
	shards Shards
	// trackingTable remembers which connections read which keys, for
	// client-side caching; the shards report their writes to it.
	trackingTable *trackingTable

	// listeners are the sockets Serve and ServeTLS answer on, each with
	// what its accept loop takes connections from.
	listeners []servedListener
	started   time.Time
	startOnce sync.Once     // the background work the first Serve starts
	stop      chan struct{} // closed by Close: background work ends
	runID     string
	// loops serve plain connections when Config.EventLoops asks for them;
	// nil: every connection has a goroutine.
	loops *eventLoops

	mu      sync.Mutex
	clients map[int64]*conn
	drained chan struct{} // closed when the last client leaves after Close
	closing bool

	nextID atomic.Int64
	stats  struct {
		connections atomic.Int64 // accepted since start
		rejected    atomic.Int64 // refused for maxclients
		commands    atomic.Int64 // commands processed
	}
}

// New returns a server over shards, configured by cfg, or the error that
// Validate finds in cfg. The server installs itself as the shards' write
// observer, for client-side caching; it costs them nothing while no
// connection tracks keys.
func New(cfg Config, shards Shards) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if shards == nil {
		return nil, errors.New("server: no shards")
	}
	id := make([]byte, 20)
	rand.Read(id)
	s := &Server{
		cfg: cfg, shards: shards,
		started: time.Now(), runID: hex.EncodeToString(id),
		clients: make(map[int64]*conn), trackingTable: newTrackingTable(cfg.TrackingMaxKeys),
		stop: make(chan struct{}),
	}
	if cfg.EventLoops > 0 {
		var err error
		if s.loops, err = startEventLoops(cfg.EventLoops, !cfg.AnswersInSubmit); err != nil {
			return nil, err
		}
	}
	shards.SetWriteObserver(s.trackingTable)
	return s, nil
}

// Close stops accepting connections and closes the open ones, each after
// the pipeline it is answering: it waits, up to Config.Shutdown, until every
// decision already taken has its reply written, so none is lost when the
// shards stop after it. Commands that arrive meanwhile are not run.
func (s *Server) Close() error {
	s.mu.Lock()
	if s.closing {
		s.mu.Unlock()
		return nil
	}
	s.closing = true
	s.drained = make(chan struct{})
	if len(s.clients) == 0 {
		close(s.drained)
	}
	listeners, drained := s.listeners, s.drained
	close(s.stop)
	var conns []*drainConn
	for _, c := range s.clients {
		if c.drain != nil {
			conns = append(conns, c.drain)
		}
	}
	s.mu.Unlock()
	if s.loops != nil {
		defer s.loops.stop() // once every connection is done, or given up on
	}
	if len(listeners) == 0 {
		return nil
	}
	for _, l := range listeners {
		l.dl.drain()
	}
	for _, c := range conns {
		c.shutdown()
	}
	select {
	case <-drained:
	case <-time.After(s.cfg.Shutdown):
	}
	var err error
	for _, l := range listeners {
		err = errors.Join(err, l.dl.Close()) // ends the accept loop
	}
	s.mu.Lock()
	for _, c := range s.clients {
		c.nc.Close() // what did not finish in time
	}
	s.mu.Unlock()
	return err
}

// maxClientsReply refuses a connection past MaxClients, in Redis's words.
var maxClientsReply = string(resp.AppendError(nil, "ERR", "max number of clients reached"))

// admit registers a connection accepted on sock (over TLS with config, when
// set), or refuses it when the server is full or closing. A plain
// connection goes to an event loop when the server has them, which starts
// serving it (onLoop); otherwise the caller gives it a goroutine.
func (s *Server) admit(sock net.Conn, config *tls.Config) (c *conn, onLoop bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closing {
		sock.Close()
		return nil, false
	}
	if len(s.clients) >= s.cfg.MaxClients {
		s.stats.rejected.Add(1)
		refuse(wrap(sock, config, s.cfg.Limits), maxClientsReply)
		return nil, false
	}
	under := sock
	if config == nil && !s.protectedRefuses(sock.RemoteAddr()) {
		under = s.loops.adopt(sock) // the goroutine answers a refusal
	}
	c = newConn(s, wrap(under, config, s.cfg.Limits))
	s.clients[c.id] = c
	s.stats.connections.Add(1)
	return c, s.loops.serve(under, c)
}

// forget drops a connection from the registry once it has closed.
func (s *Server) forget(c *conn) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.clients, c.id)
	if s.closing && len(s.clients) == 0 {
		close(s.drained)
	}
}

// eachClient calls fn for every connection, in id order, under the registry
// lock.
func (s *Server) eachClient(fn func(c *conn)) {
	s.mu.Lock()
	defer s.mu.Unlock()
	ids := make([]int64, 0, len(s.clients))
	for id := range s.clients {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	for _, id := range ids {
		fn(s.clients[id])
	}
}

// clientCount is the number of open connections.
func (s *Server) clientCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.clients)
}
