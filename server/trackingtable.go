package server

import (
	"sync"
	"sync/atomic"

	"github.com/rlserver/rlserver/engine"
)

// The tracking table: which connections read which keys, shared by every
// connection and told of every write by the shards (tracking.go has the
// protocol side: CLIENT TRACKING, the pushes, a connection's tracker).

// holders are the tracking connections that read one key: almost always
// one, so a map only when there are more.
type holders struct {
	one  *tracker
	more map[*tracker]struct{}
}

// add adds tr and reports whether it was not there yet.
func (h *holders) add(tr *tracker) bool {
	switch {
	case h.more != nil:
		if _, ok := h.more[tr]; ok {
			return false
		}
		h.more[tr] = struct{}{}
	case h.one == nil:
		h.one = tr
	case h.one == tr:
		return false
	default:
		h.more = map[*tracker]struct{}{h.one: {}, tr: {}}
		h.one = nil
	}
	return true
}

// remove removes tr and reports whether it was there.
func (h *holders) remove(tr *tracker) bool {
	if h.more != nil {
		if _, ok := h.more[tr]; !ok {
			return false
		}
		delete(h.more, tr)
		if len(h.more) == 0 {
			h.more = nil
		}
		return true
	}
	if h.one != tr {
		return false
	}
	h.one = nil
	return true
}

func (h *holders) empty() bool { return h.one == nil && h.more == nil }

func (h *holders) each(fn func(tr *tracker)) {
	if h.one != nil {
		fn(h.one)
	}
	for tr := range h.more {
		fn(tr)
	}
}

// trackingTable remembers which tracking connections read each key. It is
// the shards' write observer.
type trackingTable struct {
	clients atomic.Int64 // tracking connections: whether writes are observed
	max     int          // keys remembered at most

	mu   sync.RWMutex
	keys map[string]holders
	all  map[*tracker]struct{} // the tracking connections
	dead int                   // entries naming connections that stopped tracking
}

func newTrackingTable(max int) *trackingTable {
	return &trackingTable{max: max, keys: map[string]holders{}, all: map[*tracker]struct{}{}}
}

// Observing reports whether any connection tracks keys: until one does,
// the shards do not report their writes.
func (t *trackingTable) Observing() bool { return t.clients.Load() > 0 }

// Written invalidates the keys cmds change, for every connection that read
// them. It runs on a shard's apply path: it only queues the pushes. Most
// writes name no tracked key: a shared lock finds that out, so that the
// shards do not wait for one another.
func (t *trackingTable) Written(shard int, cmds []engine.Command) {
	if !t.anyTracked(cmds) {
		return
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := range cmds {
		switch op := cmds[i].Op; {
		case op == engine.OpFlush:
			t.flushLocked()
		case changesKey(op, &cmds[i]):
			cmds[i].EachKey(t.invalidateLocked)
		}
	}
}

// anyTracked reports whether cmds flush or change a tracked key.
func (t *trackingTable) anyTracked(cmds []engine.Command) bool {
	t.mu.RLock()
	defer t.mu.RUnlock()
	for i := range cmds {
		switch op := cmds[i].Op; {
		case op == engine.OpFlush:
			return true
		case changesKey(op, &cmds[i]):
			tracked := false
			cmds[i].EachKey(func(k []byte) {
				_, ok := t.keys[string(k)]
				tracked = tracked || ok
			})
			if tracked {
				return true
			}
		}
	}
	return false
}

// changesKey reports whether c, of op, may change the keys it names (a
// script: those it declares, the only ones it may write). Ops without a
// key (the clock, the expiry sweep, the memory limit, policies, the script
// cache) have nothing to invalidate: expiry and eviction are not reported.
func changesKey(op engine.Op, c *engine.Command) bool {
	switch op {
	case engine.OpExists, engine.OpType, engine.OpPTTL, engine.OpTTL, engine.OpInfo, engine.OpUsage,
		engine.OpGet, engine.OpDBSize, engine.OpScan, engine.OpDigest, engine.OpPolicyList,
		engine.OpSetClock, engine.OpSweep, engine.OpMemoryLimit, engine.OpPolicySet, engine.OpPolicyDel,
		engine.OpHGet, engine.OpHMGet, engine.OpHExists, engine.OpHGetAll, engine.OpHLen,
		engine.OpLIndex, engine.OpLRange, engine.OpLLen,
		engine.OpScriptLoad, engine.OpScriptExists, engine.OpScriptFlush, engine.OpWatch:
		return false
	case engine.OpEval:
		return c.Flags&engine.FlagReadOnly == 0
	}
	return true
}

// invalidateLocked tells every connection that read key that it changed, and
// forgets the key.
func (t *trackingTable) invalidateLocked(key []byte) {
	h, ok := t.keys[string(key)]
	if !ok {
		return
	}
	delete(t.keys, string(key))
	h.each(func(tr *tracker) {
		if !tr.live {
			t.dead--
			return
		}
		tr.keys--
		tr.pushKey(key)
	})
}

// flushLocked tells every tracking connection to drop its whole cache, and
// forgets every key.
func (t *trackingTable) flushLocked() {
	for tr := range t.all {
		tr.keys = 0
		tr.pushNull()
	}
	clear(t.keys)
	t.dead = 0
}

// remember records that tr read key. A full table first forgets the
// connections that stopped tracking, and if that is not enough, everything.
func (t *trackingTable) remember(tr *tracker, key []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.keys[string(key)]
	if !ok && len(t.keys) >= t.max {
		t.makeRoomLocked()
	}
	if h.add(tr) {
		tr.keys++
		t.keys[string(key)] = h
	}
}

// makeRoomLocked frees room in a full table.
func (t *trackingTable) makeRoomLocked() {
	if t.dead > 0 {
		for key, h := range t.keys {
			var gone []*tracker
			h.each(func(tr *tracker) {
				if !tr.live {
					gone = append(gone, tr)
				}
			})
			for _, tr := range gone {
				h.remove(tr)
			}
			if h.empty() {
				delete(t.keys, key)
			} else if len(gone) > 0 {
				t.keys[key] = h
			}
		}
		t.dead = 0
	}
	if len(t.keys) >= t.max {
		t.flushLocked()
	}
}

// forget records that tr no longer holds key (its own write, in NOLOOP mode).
func (t *trackingTable) forget(tr *tracker, key []byte) {
	t.mu.Lock()
	defer t.mu.Unlock()
	h, ok := t.keys[string(key)]
	if !ok || !h.remove(tr) {
		return
	}
	tr.keys--
	if h.empty() {
		delete(t.keys, string(key))
	} else {
		t.keys[string(key)] = h
	}
}

// start adds a tracking connection.
func (t *trackingTable) start(tr *tracker) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr.live = true
	t.all[tr] = struct{}{}
	t.clients.Add(1)
}

// stop removes a tracking connection. Its entries are forgotten lazily: when
// their keys change, or the table fills (Redis does the same).
func (t *trackingTable) stop(tr *tracker) {
	t.mu.Lock()
	defer t.mu.Unlock()
	tr.live = false
	delete(t.all, tr)
	t.dead += tr.keys
	tr.keys = 0
	if t.clients.Add(-1) == 0 { // nobody left to invalidate: writes go unobserved
		clear(t.keys)
		t.dead = 0
	}
}

// stats returns the keys in the table, and the (key, connection) pairs.
func (t *trackingTable) stats() (keys, items int) {
	t.mu.RLock()
	defer t.mu.RUnlock()
	items = t.dead
	for tr := range t.all {
		items += tr.keys
	}
	return len(t.keys), items
}
