package engine

import (
	"iter"
	"maps"
)

// chunkExtras is what the records of one chunk hold outside their records,
// by record number: keys longer than inlineKey, sliding logs and leases,
// strings that are not integers, hashes' fields, lists' elements and share
// keys' holders. Kept by chunk rather than in maps of the whole keyspace,
// so that a capture freezes a chunk's records and everything they hold by
// keeping two pointers (recordStore.own), and a copy costs what one chunk
// holds, not the keyspace. A map is made on its first entry.
type chunkExtras struct {
	long   map[int32]string
	logs   map[int32][]logEntry
	vals   map[int32]string
	hashes map[int32][]hashField
	lists  map[int32][]string
	shares map[int32]*shareSet
	// shared marks the records (by their number within the chunk) whose
	// slices (a log, a hash's fields, a list's elements, share holders,
	// which the shard changes in place) a capture holds too: a copy of
	// the extras (clone) shares them until ownValues copies them, before
	// the record is first read to be changed. Strings are never changed in
	// place, so the copies share them for good.
	shared [(chunkRecords + 63) / 64]uint64
}

// clone copies e's maps, sharing their values, all marked shared.
func (e *chunkExtras) clone() *chunkExtras {
	c := &chunkExtras{
		long: maps.Clone(e.long), logs: maps.Clone(e.logs), vals: maps.Clone(e.vals),
		hashes: maps.Clone(e.hashes), lists: maps.Clone(e.lists), shares: maps.Clone(e.shares),
	}
	for w := range c.shared {
		c.shared[w] = ^uint64(0)
	}
	return c
}

// ownValues gives record i (of e's chunk) slices of its own, of the same
// lengths and capacities (what the keyspace is charged does not change),
// when a capture shares them.
func (e *chunkExtras) ownValues(i int32) {
	w, bit := (i&chunkMask)/64, uint64(1)<<(i%64)
	if e.shared[w]&bit == 0 {
		return
	}
	e.shared[w] &^= bit
	if l, ok := e.logs[i]; ok {
		e.logs[i] = cloneExact(l)
	}
	if h, ok := e.hashes[i]; ok {
		e.hashes[i] = cloneExact(h)
	}
	if l, ok := e.lists[i]; ok {
		e.lists[i] = cloneExact(l)
	}
	if set, ok := e.shares[i]; ok {
		holders := cloneExact(set.holders)
		for j := range holders {
			holders[j].res = cloneExact(holders[j].res)
		}
		e.shares[i] = &shareSet{holders: holders, charged: set.charged}
	}
}

// cloneExact copies s into an array of the same capacity.
func cloneExact[T any](s []T) []T {
	if s == nil {
		return nil
	}
	c := make([]T, len(s), cap(s))
	copy(c, s)
	return c
}

// extras returns the extras of record i's chunk to read; nil: none, or no
// record (i is -1).
func (ks *keyspace) extras(i int32) *chunkExtras {
	if i < 0 {
		return nil
	}
	return ks.records.ext(i >> chunkShift)
}

// longKey is record i's key when it is longer than inlineKey.
func (ks *keyspace) longKey(i int32) string {
	if e := ks.extras(i); e != nil {
		return e.long[i]
	}
	return ""
}

// setLongKey stores record i's long key ("" with ok false: removes it).
func (ks *keyspace) setLongKey(i int32, key string, ok bool) {
	e := ks.records.extMut(i)
	if old, had := e.long[i]; had {
		ks.longLen -= int64(len(old))
		ks.nLong--
		delete(e.long, i)
	}
	if !ok {
		return
	}
	if e.long == nil {
		e.long = make(map[int32]string)
	}
	e.long[i] = key
	ks.longLen += int64(len(key))
	ks.nLong++
}

// log is record i's sliding log or lease list.
func (ks *keyspace) log(i int32) []logEntry {
	if e := ks.extras(i); e != nil {
		return e.logs[i]
	}
	return nil
}

// logsOf is record i's log and whether it has one; e may be nil.
func (e *chunkExtras) logsOf(i int32) ([]logEntry, bool) {
	if e == nil {
		return nil, false
	}
	l, ok := e.logs[i]
	return l, ok
}

// setLog replaces record i's sliding log.
func (ks *keyspace) setLog(i int32, entries []logEntry) {
	e := ks.records.extMut(i)
	old, had := e.logs[i]
	if !had {
		ks.nLogs++
	}
	ks.logCap += int64(cap(entries) - cap(old))
	ks.logLen += int64(len(entries) - len(old))
	if e.logs == nil {
		e.logs = make(map[int32][]logEntry)
	}
	e.logs[i] = entries
}

// dropLog removes record i's log.
func (ks *keyspace) dropLog(i int32) {
	if _, ok := ks.extras(i).logsOf(i); !ok {
		return
	}
	e := ks.records.extMut(i)
	log := e.logs[i]
	ks.logCap -= int64(cap(log))
	ks.logLen -= int64(len(log))
	ks.nLogs--
	delete(e.logs, i)
}

// value is record i's string value when it is not an integer.
func (ks *keyspace) value(i int32) string {
	if e := ks.extras(i); e != nil {
		return e.vals[i]
	}
	return ""
}

// hasValue reports whether record i holds a string value.
func (ks *keyspace) hasValue(i int32) bool {
	if e := ks.extras(i); e != nil {
		_, ok := e.vals[i]
		return ok
	}
	return false
}

// setValue replaces record i's string value ("" with ok false: none).
func (ks *keyspace) setValue(i int32, v string, ok bool) {
	if !ok && !ks.hasValue(i) {
		return
	}
	e := ks.records.extMut(i)
	if old, had := e.vals[i]; had {
		ks.valLen -= int64(len(old))
		ks.nVals--
		delete(e.vals, i)
	}
	if !ok {
		return
	}
	if e.vals == nil {
		e.vals = make(map[int32]string)
	}
	e.vals[i] = v
	ks.valLen += int64(len(v))
	ks.nVals++
}

// fields is record i's hash, its fields in the order first set.
func (ks *keyspace) fields(i int32) []hashField {
	if e := ks.extras(i); e != nil {
		return e.hashes[i]
	}
	return nil
}

// list is record i's list, tail first.
func (ks *keyspace) list(i int32) []string {
	if e := ks.extras(i); e != nil {
		return e.lists[i]
	}
	return nil
}

// shareSet is record i's share holders, nil when it has none.
func (ks *keyspace) shareSet(i int32) *shareSet {
	if e := ks.extras(i); e != nil {
		return e.shares[i]
	}
	return nil
}

// shareSets are the share keys' holders, by record, in no particular
// order: for sums and checks, never for what replicas must agree on.
func (ks *keyspace) shareSets() iter.Seq2[int32, *shareSet] {
	return func(yield func(int32, *shareSet) bool) {
		for _, e := range ks.records.extras {
			if e == nil {
				continue
			}
			for i, set := range e.shares {
				if !yield(i, set) {
					return
				}
			}
		}
	}
}
