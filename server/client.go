package server

import (
	"crypto/tls"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rlserver/rlserver/commands"
)

// client is one connection's state. Its handler goroutine owns it; the
// fields CLIENT LIST reads from other goroutines are atomic or under mu.
type client struct {
	srv     *Server
	nc      net.Conn
	tracked *trackedConn // nil when the connection did not come from Serve
	tlsConn *tls.Conn    // the connection's TLS layer, nil for a plain one
	id      int64
	addr    string
	laddr   string
	created time.Time

	resp3    atomic.Bool
	tracking atomic.Bool                   // CLIENT TRACKING is on, for CLIENT LIST
	lastCmd  atomic.Int64                  // Unix ms of the latest command, for idle=
	lastSpec atomic.Pointer[commands.Spec] // the latest command, for cmd=
	mu       sync.Mutex                    // guards the names below
	name     string                        // CLIENT SETNAME
	libName  string                        // CLIENT SETINFO LIB-NAME
	libVer   string                        // CLIENT SETINFO LIB-VER
	userName string                        // user's name

	// user is who the connection acts as: the default user until AUTH or
	// HELLO AUTH names another (setUser; CLIENT LIST reads its name under
	// mu). authed: it may run commands (the default user is on and takes no
	// password, or a password was given).
	user   *User
	authed bool
	quit   bool // QUIT: close once the replies are written
	// clusterAware: the connection asked for the topology, so it is a
	// cluster client that follows MOVED.
	clusterAware bool
	tx           transaction
	batch        batch
	keyed        int64    // commands of the pipeline being answered sent to the shards
	in           []byte   // bytes read, the kept incomplete command first
	args         [][]byte // the parsed command, aliasing in
	out          []byte   // the replies of the pipeline being answered

	// track is the connection's client-side caching state, nil while
	// tracking is off. wmu is held while a pipeline runs and its replies are
	// written, and while invalidations are written, so that a push never
	// lands inside a reply, nor before the reply of a read it follows.
	track *tracker
	wmu   sync.Mutex
}

func newClient(s *Server, nc net.Conn) *client {
	c := &client{
		srv:     s,
		nc:      nc,
		id:      s.nextID.Add(1),
		addr:    nc.RemoteAddr().String(),
		laddr:   nc.LocalAddr().String(),
		created: time.Now(),
		authed:  s.acl.openAccess(),
		in:      make([]byte, readSize),
	}
	if g, ok := nc.(*guardConn); ok {
		c.tracked, _ = g.Conn.(*trackedConn)
	}
	c.tlsConn = tlsOf(c.tracked)
	c.setUser(s.acl.def)
	c.lastCmd.Store(c.created.UnixMilli())
	c.batch.init(s.shards.Shards())
	c.tx.reset()
	return c
}

// setName sets the connection's name; the caller has validated it.
func (c *client) setName(name string) {
	c.mu.Lock()
	c.name = name
	c.mu.Unlock()
}

// setUser makes the connection act as u.
func (c *client) setUser(u *User) {
	c.user = u
	c.mu.Lock()
	c.userName = u.name
	c.mu.Unlock()
}

// names returns the connection's name and client library.
func (c *client) names() (name, libName, libVer string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.name, c.libName, c.libVer
}

// resetState is RESET: back to a fresh connection's state.
func (c *client) resetState() {
	c.resp3.Store(false)
	c.setName("")
	c.setUser(c.srv.acl.def)
	c.authed = c.srv.acl.openAccess()
	c.clusterAware = false
	c.tx.reset()
	c.stopTracking() // Redis's RESET turns tracking off too
}

// exec runs or queues one command, appending to out any replies that are due
// before it.
func (c *client) exec(args [][]byte, out []byte) []byte {
	if c.track == nil || !c.track.caching {
		return c.execOne(args, out)
	}
	out = c.execOne(args, out)
	c.afterCommand(args[0])
	return out
}

// execOne is exec without CLIENT CACHING's bookkeeping.
func (c *client) execOne(args [][]byte, out []byte) []byte {
	if len(c.batch.replies) >= maxSegment {
		out = c.flush(out)
	}
	// Checked in Redis's order; inside MULTI a refusal also dooms the EXEC.
	spec := commands.Lookup(args[0])
	var err error
	switch {
	case spec == nil:
		err = commands.UnknownCommand(args)
	case spec.CheckArity(args) != nil:
		err = spec.CheckArity(args)
	case !c.authed && !noAuth(spec.ID):
		err = errNoAuth
	case !c.user.unrestricted && !noAuth(spec.ID):
		// Redis checks permissions right after authentication, before the
		// key's slot, and never for the commands that authenticate.
		err = c.user.permission(spec, args)
	}
	if err != nil {
		c.batch.addError(err)
		c.tx.markDirty()
		return out
	}
	c.lastSpec.Store(spec)
	if c.tx.active && !endsTransaction(spec.ID) {
		c.queue(spec, args)
		return out
	}
	if spec.Route == commands.RouteKey {
		if err := c.checkRoute(spec, args); err != nil {
			c.batch.addError(err)
			return out
		}
		c.keyCommand(spec, args)
		c.keyed++
		return out
	}
	// Everything else depends on, or changes, the state of the connection or of
	// every shard: answer what is pending first.
	out = c.flush(out)
	return c.serverCommand(spec, args, out)
}

// noAuth reports whether a command may run before authentication, and
// whatever the user's permissions (Redis's no-auth commands).
func noAuth(id commands.ID) bool {
	return id == commands.IDAuth || id == commands.IDHello || id == commands.IDQuit || id == commands.IDResetConn
}

func sortInt64s(v []int64) { slices.Sort(v) }
