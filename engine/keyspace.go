package engine

import "unsafe"

// keyspace maps keys to entries kept in one slice. Freed slots are reused
// last-freed first, and expired entries are reclaimed by a cursor that walks
// the slice, so the layout is a deterministic function of the commands
// applied: replicas that apply the same log hold the same slots.
type keyspace struct {
	index map[string]int32
	slots []entry
	free  []int32
	sweep int   // next slot the expiry sweep examines
	bytes int64 // estimated memory held by keys and entries
}

// perKeyOverhead estimates a key's fixed cost: its slot, its map entry and
// its string header. The figure is an estimate for INFO and --maxmemory, not
// an allocator measurement.
const perKeyOverhead = int64(unsafe.Sizeof(entry{})) + 48

const logEntrySize = int64(unsafe.Sizeof(logEntry{}))

func newKeyspace() keyspace {
	return keyspace{index: make(map[string]int32)}
}

// find returns the slot of key, or -1.
func (ks *keyspace) find(key []byte) int32 {
	if i, ok := ks.index[string(key)]; ok {
		return i
	}
	return -1
}

// add creates an empty entry for key (which must be absent) and returns its
// slot.
func (ks *keyspace) add(key []byte) int32 {
	k := string(key)
	var i int32
	if n := len(ks.free); n > 0 {
		i = ks.free[n-1]
		ks.free = ks.free[:n-1]
	} else {
		ks.slots = append(ks.slots, entry{})
		i = int32(len(ks.slots) - 1)
	}
	ks.slots[i] = entry{key: k}
	ks.index[k] = i
	ks.bytes += perKeyOverhead + int64(len(k))
	return i
}

// remove deletes the entry in slot i.
func (ks *keyspace) remove(i int32) {
	e := &ks.slots[i]
	delete(ks.index, e.key)
	ks.bytes -= perKeyOverhead + int64(len(e.key)) + logEntrySize*int64(cap(e.log))
	*e = entry{}
	ks.free = append(ks.free, i)
}

// setLog replaces the sliding log of slot i, keeping the memory estimate.
func (ks *keyspace) setLog(i int32, l SlidingLog, entries []logEntry) {
	e := &ks.slots[i]
	ks.bytes += logEntrySize * int64(cap(entries)-cap(e.log))
	e.setSlidingLog(l, entries)
}

// usage estimates the bytes e holds, as the keyspace counts them.
func (ks *keyspace) usage(e *entry) int64 {
	return perKeyOverhead + int64(len(e.key)) + logEntrySize*int64(cap(e.log))
}

// len is the number of keys held, including expired ones not yet reclaimed.
func (ks *keyspace) len() int {
	return len(ks.index)
}

// reclaim examines up to budget slots from the sweep cursor and removes the
// entries that have expired by now.
func (ks *keyspace) reclaim(now int64, budget int) {
	if len(ks.index) == 0 {
		return
	}
	for ; budget > 0; budget-- {
		if ks.sweep >= len(ks.slots) {
			ks.sweep = 0
		}
		if e := &ks.slots[ks.sweep]; e.kind != kindNone && e.expiresAt() <= now {
			ks.remove(int32(ks.sweep))
		}
		ks.sweep++
	}
}
