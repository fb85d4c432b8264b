package server

import (
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/server/acl"
)

// conn is one connection's state. Its handler goroutine owns it; the
// fields CLIENT LIST reads from other goroutines are atomic or under mu.
type conn struct {
	srv *Server
	nc  net.Conn
	// drain wraps the socket so that Close and the idle timeout see the
	// connection's pipeline boundaries (drain.go); nil for a connection that
	// did not come from Serve (a test's). tlsConn is its TLS layer, nil for
	// a plain connection.
	drain   *drainConn
	tlsConn *tls.Conn
	id      int64
	addr    string
	laddr   string
	created time.Time

	resp3      atomic.Bool
	trackingOn atomic.Bool                   // tracker != nil, for CLIENT LIST (flags=t)
	lastCmd    atomic.Int64                  // Unix ms of the latest command, for idle=
	lastSpec   atomic.Pointer[commands.Spec] // the latest command, for cmd=
	mu         sync.Mutex                    // guards the names below
	name       string                        // CLIENT SETNAME
	libName    string                        // CLIENT SETINFO LIB-NAME
	libVer     string                        // CLIENT SETINFO LIB-VER
	userName   string                        // user's name

	// user is who the connection acts as: the default user until AUTH or
	// HELLO AUTH names another (setUser; CLIENT LIST reads its name under
	// mu). authed: it may run commands (the default user is on and takes no
	// password, or a password was given).
	user   *acl.User
	authed bool
	quit   bool // QUIT: close once the replies are written
	// clusterAware: the connection asked for the topology, so it is a
	// cluster client that follows MOVED.
	clusterAware bool
	tx           transaction
	watching     watchState
	batch        batch
	run          pipelineRun  // what the pipeline being answered has done
	nowait       nowait       // how it answers without waiting, on an event loop
	aside        asideCommand // a command answered by a goroutine meanwhile (loopwait.go)
	in           []byte       // bytes read, the kept incomplete command first
	args         [][]byte     // the parsed command, aliasing in
	named        namedSpec    // the command name last looked up (lookup)
	out          []byte       // the replies of the pipeline being answered

	// tracker is the connection's client-side caching state (CLIENT
	// TRACKING), nil while tracking is off. wmu is held while a pipeline
	// runs and its replies are written, and while invalidations are written,
	// so that a push never lands inside a reply, nor before the reply of a
	// read it follows.
	tracker *tracker
	wmu     sync.Mutex
}

// newConn is the state of a connection accepted (or made by a test) with
// the layers cc names.
func newConn(s *Server, cc wrappedConn) *conn {
	c := &conn{
		srv:     s,
		nc:      cc.Conn,
		drain:   cc.drain,
		tlsConn: cc.tls,
		id:      s.nextID.Add(1),
		addr:    cc.RemoteAddr().String(),
		laddr:   cc.LocalAddr().String(),
		created: time.Now(),
		authed:  s.cfg.Users.OpenAccess(),
		in:      make([]byte, readSize),
	}
	c.setUser(s.cfg.Users.Default())
	c.lastCmd.Store(c.created.UnixMilli())
	c.batch.init(s.shards.Shards(), s.cfg.RequestTimeout)
	c.tx.reset()
	return c
}

// setName sets the connection's name; the caller has validated it.
func (c *conn) setName(name string) {
	c.mu.Lock()
	c.name = name
	c.mu.Unlock()
}

// setUser makes the connection act as u.
func (c *conn) setUser(u *acl.User) {
	c.user = u
	c.mu.Lock()
	c.userName = u.Name()
	c.mu.Unlock()
}

// names returns the connection's name and client library.
func (c *conn) names() (name, libName, libVer string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.name, c.libName, c.libVer
}

// resetState is RESET: back to a fresh connection's state.
func (c *conn) resetState() {
	c.resp3.Store(false)
	c.setName("")
	c.setUser(c.srv.cfg.Users.Default())
	c.authed = c.srv.cfg.Users.OpenAccess()
	c.clusterAware = false
	c.tx.reset()
	c.unwatch()
	c.stopTracking() // Redis's RESET turns tracking off too
}
