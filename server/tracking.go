package server

import (
	"errors"
	"slices"
	"sync"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/resp"
)

// Client-side caching, as Redis 6+ offers it (CLIENT TRACKING): a RESP3
// connection that turns tracking on is told, by an "invalidate" push, when a
// key it has read changes, so that it can serve reads from its own cache
// until then. rueidis does this by default.
//
// The server remembers, in one table, which tracking connections read each
// key. A read is remembered before it goes to its shard, so a write applied
// after it always finds it. Writes are learned from the shards themselves
// (cluster.WriteObserver): the runner that applies a shard's commands on this
// node, leader or follower replica, reports them, so a write made through
// another node, or forwarded, invalidates as well as one made here. Each
// invalidation is queued on the connection that read the key and removes the
// key from the table, as in Redis: the connection must read it again to hear
// of the next change.
//
// A push never lands inside a reply: a connection holds its write lock from
// the moment it starts running a pipeline until its replies are written, and
// pushes are written under the same lock, by a goroutine of the connection's
// own, with a write deadline. So a push for a write applied after a read
// always follows the read's reply, and a slow client delays nobody else's
// pushes; the observer, on the shards' apply path, only appends to a bounded
// queue. When a queue is full, or the table is, the connection is told to
// drop its whole cache (a null invalidation, as Redis sends after FLUSHALL)
// rather than miss a key.
//
// Not sent, unlike Redis: invalidations for keys that expire or are evicted.
// rueidis bounds every cached reply by the key's PTTL, which covers expiry;
// eviction happens only under --maxmemory with an evicting policy. Keys read
// through a node that holds no replica of their shard (a cluster of more than
// three nodes) cannot be tracked there: their invalidation follows the reply
// at once, so such reads are simply not cached.

// Redis's texts for CLIENT TRACKING and CLIENT CACHING errors (networking.c,
// clientCommand, Redis 7.0).
var (
	errTrackingPrefix = errors.New("ERR PREFIX option requires BCAST mode to be enabled")
	errTrackingBoth   = errors.New("ERR You can't specify both OPTIN mode and OPTOUT mode")
	errTrackingSwitch = errors.New("ERR You can't switch OPTIN/OPTOUT mode before disabling tracking for this client, and then re-enabling it with a different mode.")
	errCachingNotOpt  = errors.New("ERR CLIENT CACHING can be called only when the client is in tracking mode with OPTIN or OPTOUT mode enabled")
	errCachingYes     = errors.New("ERR CLIENT CACHING YES is only valid when tracking is enabled in OPTIN mode.")
	errCachingNo      = errors.New("ERR CLIENT CACHING NO is only valid when tracking is enabled in OPTOUT mode.")
)

// What rlserver refuses. Redis 7 accepts tracking on a RESP2 connection
// without REDIRECT and then sends it nothing, which leaves a caching client
// stale; rlserver refuses it in the words of Dragonfly, another server that
// delivers invalidations on the connection only. REDIRECT (RESP2 clients'
// pub/sub channel) and BCAST are not implemented.
var (
	errTrackingRESP2 = errors.New("ERR Client tracking is currently not supported for RESP2. Please use RESP3.")
	errTrackingRedir = errors.New("ERR CLIENT TRACKING REDIRECT is not supported by rlserver: switch the connection to RESP3 (HELLO 3), which receives its invalidations itself")
	errTrackingBcast = errors.New("ERR CLIENT TRACKING BCAST and PREFIX are not supported by rlserver: invalidations are sent for the keys the connection reads")
)

// Redis's invalidate push (tracking.c, sendTrackingMessage): one key, or a
// null for every key.
var (
	nullInvalidation   = resp.AppendNull(appendInvalidate(nil), true)
	invalidationHeader = resp.AppendArray(appendInvalidate(nil), 1)
)

// appendInvalidate appends the head of an invalidate push, which its keys
// follow.
func appendInvalidate(b []byte) []byte {
	return resp.AppendBulkString(resp.AppendPush(b, 2), "invalidate")
}

const (
	// maxPendingPushes bounds the invalidations waiting for one connection;
	// past it they are replaced by one null invalidation.
	maxPendingPushes = 256 << 10
	// pushTimeout bounds how long a connection may take to accept its
	// pushes; past it the connection is closed, as Redis closes a client
	// over its output buffer limit.
	pushTimeout = 10 * time.Second
)

// appendInvalidation appends the push that invalidates key.
func appendInvalidation(b, key []byte) []byte {
	return resp.AppendBulk(append(b, invalidationHeader...), key)
}

// tracker is one connection's tracking state.
type tracker struct {
	c *conn

	// The connection's goroutine alone reads and writes these.
	optin, optout, noloop bool
	caching               bool   // CLIENT CACHING YES|NO given for the next command
	late                  []byte // invalidations to send after this pipeline's replies

	// Under the table's mu.
	live bool // in the table's set of tracking connections
	keys int  // table entries that name it

	mu      sync.Mutex // guards pending and spare
	pending []byte     // invalidations not yet written
	spare   []byte     // the writer's buffer, kept for reuse
	wake    chan struct{}
	done    chan struct{}
}

// caches reports whether the command being run has its keys remembered:
// always in the default mode, after CLIENT CACHING YES in OPTIN mode, unless
// CLIENT CACHING NO in OPTOUT mode.
func (tr *tracker) caches() bool {
	return (!tr.optin || tr.caching) && !(tr.optout && tr.caching)
}

// pushKey queues the invalidation of key, or a null invalidation when the
// queue is full. The caller holds the table's mu.
func (tr *tracker) pushKey(key []byte) {
	tr.mu.Lock()
	if len(tr.pending)+len(invalidationHeader)+len(key)+24 > maxPendingPushes {
		tr.pending = append(tr.pending[:0], nullInvalidation...)
	} else {
		tr.pending = appendInvalidation(tr.pending, key)
	}
	tr.mu.Unlock()
	tr.signal()
}

// pushNull queues a null invalidation: drop every key. It replaces what is
// queued, which it covers.
func (tr *tracker) pushNull() {
	tr.mu.Lock()
	tr.pending = append(tr.pending[:0], nullInvalidation...)
	tr.mu.Unlock()
	tr.signal()
}

func (tr *tracker) signal() {
	select {
	case tr.wake <- struct{}{}:
	default:
	}
}

// takePending appends the queued invalidations to out (unless the
// connection is back on RESP2, which cannot take pushes) and empties the
// queue. The caller holds the connection's write lock.
func (tr *tracker) takePending(out []byte, resp3 bool) []byte {
	tr.mu.Lock()
	if resp3 {
		out = append(out, tr.pending...)
	}
	tr.pending = tr.pending[:0]
	tr.mu.Unlock()
	return out
}

// run writes the connection's invalidations as they come, between its
// pipelines, until tracking stops.
func (tr *tracker) run() {
	for {
		select {
		case <-tr.done:
			return
		case <-tr.wake:
		}
		tr.flush()
	}
}

// flush writes what is queued, under the connection's write lock.
func (tr *tracker) flush() {
	c := tr.c
	c.wmu.Lock()
	defer c.wmu.Unlock()
	tr.mu.Lock()
	buf := tr.pending
	tr.pending = tr.spare[:0]
	tr.mu.Unlock()
	if len(buf) > 0 && c.resp3.Load() { // a connection back on RESP2 cannot take pushes
		c.nc.SetWriteDeadline(time.Now().Add(pushTimeout))
		_, err := c.nc.Write(buf)
		c.nc.SetWriteDeadline(time.Time{})
		if err != nil {
			c.nc.Close() // its read loop ends, and tracking with it
		}
	}
	if cap(buf) > maxPendingPushes {
		buf = nil // do not keep a burst's buffer
	}
	tr.mu.Lock()
	tr.spare = buf[:0]
	tr.mu.Unlock()
}

// noteKeys remembers the keys a read-only command reads, when the tracking
// mode says so. A write in NOLOOP mode forgets its keys for this connection
// first, so that its own write does not invalidate them; as in Redis, the
// connection must read a key again to hear of later changes.
func (c *conn) noteKeys(spec *commands.Spec, args [][]byte) {
	tr, t := c.tracker, c.srv.trackingTable
	if !slices.Contains(spec.Flags, "readonly") {
		if tr.noloop {
			spec.Keys(args, func(k []byte) { t.forget(tr, k) })
		}
		return
	}
	if !tr.caches() {
		return
	}
	spec.Keys(args, func(k []byte) {
		if c.srv.shards.ObservesWrites(c.srv.shards.ShardOf(cluster.Slot(k))) {
			t.remember(tr, k)
		} else {
			tr.late = appendInvalidation(tr.late, k)
		}
	})
}

// appendLate appends the invalidations of keys that could not be tracked,
// after the replies that read them.
func (c *conn) appendLate(out []byte) []byte {
	if c.resp3.Load() {
		out = append(out, c.tracker.late...)
	}
	c.tracker.late = c.tracker.late[:0]
	return out
}

// afterCommand ends the effect of CLIENT CACHING: it applies to the next
// command, but Redis keeps it through CLIENT commands and until a
// transaction ends, so that CLIENT CACHING YES, MULTI, reads, EXEC tracks the
// reads.
func (c *conn) afterCommand(name []byte) {
	if c.tracker == nil || c.tx.active {
		return
	}
	if spec := commands.Lookup(name); spec != nil && spec.ID == commands.IDClient {
		return
	}
	c.tracker.caching = false
}

// startTracking turns tracking on with the given options, or changes them.
func (c *conn) startTracking(optin, optout, noloop bool) {
	if tr := c.tracker; tr != nil {
		tr.optin, tr.optout, tr.noloop = optin, optout, noloop
		return
	}
	tr := &tracker{c: c, optin: optin, optout: optout, noloop: noloop, wake: make(chan struct{}, 1), done: make(chan struct{})}
	c.tracker = tr
	c.trackingOn.Store(true)
	c.srv.trackingTable.start(tr)
	go tr.run()
}

// stopTracking turns tracking off: nothing more is sent, and the keys the
// connection read are forgotten.
func (c *conn) stopTracking() {
	tr := c.tracker
	if tr == nil {
		return
	}
	c.tracker = nil
	c.trackingOn.Store(false)
	c.srv.trackingTable.stop(tr)
	close(tr.done)
	tr.mu.Lock()
	tr.pending = nil
	tr.mu.Unlock()
}

// trackingCommand is CLIENT TRACKING ON|OFF [REDIRECT id] [BCAST] [PREFIX p]
// [OPTIN] [OPTOUT] [NOLOOP], checked in Redis's order.
func (c *conn) trackingCommand(args [][]byte) error {
	var bcast, optin, optout, noloop, prefix bool
	for j := 3; j < len(args); j++ {
		more := j+1 < len(args)
		switch {
		case commands.EqualFold(args[j], "redirect") && more:
			return errTrackingRedir
		case commands.EqualFold(args[j], "bcast"):
			bcast = true
		case commands.EqualFold(args[j], "optin"):
			optin = true
		case commands.EqualFold(args[j], "optout"):
			optout = true
		case commands.EqualFold(args[j], "noloop"):
			noloop = true
		case commands.EqualFold(args[j], "prefix") && more:
			prefix = true
			j++
		default:
			return commands.ErrSyntax
		}
	}
	switch {
	case commands.EqualFold(args[2], "off"):
		c.stopTracking()
		return nil
	case !commands.EqualFold(args[2], "on"):
		return commands.ErrSyntax
	case prefix && !bcast:
		return errTrackingPrefix
	case bcast:
		return errTrackingBcast
	case optin && optout:
		return errTrackingBoth
	case c.tracker != nil && (optin && c.tracker.optout || optout && c.tracker.optin):
		return errTrackingSwitch
	case !c.resp3.Load():
		return errTrackingRESP2
	}
	c.startTracking(optin, optout, noloop)
	return nil
}

// cachingCommand is CLIENT CACHING YES|NO.
func (c *conn) cachingCommand(arg []byte) error {
	tr := c.tracker
	if tr == nil {
		return errCachingNotOpt
	}
	switch {
	case commands.EqualFold(arg, "yes"):
		if !tr.optin {
			return errCachingYes
		}
	case commands.EqualFold(arg, "no"):
		if !tr.optout {
			return errCachingNo
		}
	default:
		return commands.ErrSyntax
	}
	tr.caching = true
	return nil
}

// trackingInfo is CLIENT TRACKINGINFO: a map of the flags (a set), the
// redirect (0 when tracking, which never redirects here; -1 when not) and
// the prefixes (none), as Redis answers it.
func (c *conn) trackingInfo(out []byte) []byte {
	resp3 := c.resp3.Load()
	flags := []string{"off"}
	redirect := int64(-1)
	if tr := c.tracker; tr != nil {
		flags, redirect = []string{"on"}, 0
		if tr.optin {
			flags = append(flags, "optin")
			if tr.caching {
				flags = append(flags, "caching-yes")
			}
		}
		if tr.optout {
			flags = append(flags, "optout")
			if tr.caching {
				flags = append(flags, "caching-no")
			}
		}
		if tr.noloop {
			flags = append(flags, "noloop")
		}
	}
	out = resp.AppendMap(out, 3, resp3)
	out = resp.AppendBulkString(out, "flags")
	out = resp.AppendSet(out, len(flags), resp3)
	for _, f := range flags {
		out = resp.AppendBulkString(out, f)
	}
	out = resp.AppendBulkString(out, "redirect")
	out = resp.AppendInt(out, redirect)
	out = resp.AppendBulkString(out, "prefixes")
	return resp.AppendArray(out, 0)
}
