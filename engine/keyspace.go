package engine

import "hash/maphash"

// keyspace holds a shard's keys compactly: every key's limiter is one
// fixed-size record in a slice, with no pointers for the garbage collector
// to chase; keys of up to inlineKey bytes live inside their record; the
// parameters, which most keys share, are interned; and an open-addressing
// index maps keys to records. What a key costs that way, against Redis and
// the maps this replaced, is in docs/performance.md#memory.
//
// Records are numbered in the order they are created, reusing the number of
// the latest removed key first, and expired records are reclaimed by a cursor
// walking the slice, so the layout is a deterministic function of the
// commands applied: replicas that apply the same log hold the same records.
// The index's layout depends on the hash seed, which differs between
// processes; nothing reads it but lookups.
type keyspace struct {
	records recordStore
	// The removed records are a stack, reused last first: freeTop is its
	// top (-1: empty), and each free record names the one below it in its
	// state[0] (-1 at the bottom), so that the stack lives in the records
	// and a capture freezes it with them (capture.go).
	freeTop int32
	freeLen int
	live    int // records in use
	sweep   int // next record the expiry sweep examines

	index   keyIndex
	params  paramTable
	longLen int64 // bytes of the long keys
	logCap  int64 // entries the logs have room for
	logLen  int64 // entries the logs hold
	valLen  int64 // bytes of the string values
	// collLen and collN are the bytes and the number of the fields, values
	// and elements the hashes and lists hold.
	collLen, collN int64
	// nLong, nLogs, nVals, nHashes, nLists and nShares count the records
	// holding a long key, a log, a string value, a hash, a list and share
	// holders (in their chunks' extras, extras.go).
	nLong, nLogs, nVals, nHashes, nLists, nShares int
	// persistent counts the strings without an expiry, which INFO's
	// keyspace line does not count among the keys that expire.
	persistent int
	touched    int32 // what prefetch read, for nothing

	// shareLen is what the share keys' holders (sharestate.go) are
	// charged, shareStat RL.SHARE's counters.
	shareLen  int64
	shareStat shareCounts
	// globals are the global keys' side state (global.go), by record;
	// globalLen is what it is charged.
	globals   map[int32]*globalEntry
	globalLen int64
	// frozenGlobals is, in a capture's view (capture.go), the global
	// keys' side state as encoded when the capture was taken: the shard
	// changes a globalState in place, and the global keys are few. Nil in
	// a shard's keyspace.
	frozenGlobals map[int32][]byte
}

// inlineKey is the longest key kept inside its record.
const inlineKey = 27

// longKey marks a record whose key is in its chunk's extras (extras.go).
const longKey = 0xff

// record is one key: its state, its interned kind and parameters, and its
// key. A free record has params 0.
type record struct {
	state  [3]int64
	params uint32
	klen   uint8
	key    [inlineKey]byte
}

// recordSize and logEntrySize are what a record and a log entry take, as
// literals: every replica charges keys by them (memory.go) and must charge
// alike whatever compiler built it. TestSizes checks them against the real
// sizes.
const (
	recordSize   = 56
	logEntrySize = 16
)

func newKeyspace() keyspace {
	return keyspace{freeTop: -1, index: newKeyIndex(), params: newParamTable(), globals: make(map[int32]*globalEntry)}
}

// find returns the record of key, or -1. A record found is the live
// state's alone (recordStore.ownRecord): whatever the command then reads of
// it to change, a capture in progress keeps its own.
func (ks *keyspace) find(key []byte) int32 {
	return ks.findHashed(key, ks.hash(key))
}

// findHashed is find for a key whose hash, h, is known.
func (ks *keyspace) findHashed(key []byte, h uint64) int32 {
	s := ks.index.segment(h)
	fp := fingerprint7(h)
	for i := s.home(h); ; i = s.next(i) {
		switch s.ctrl[i] {
		case ctrlEmpty:
			return -1
		case fp:
			if r := s.slots[i]; ks.keyIs(r, key) {
				ks.records.ownRecord(r)
				return r
			}
		}
	}
}

// hash is the index's hash of key.
func (ks *keyspace) hash(key []byte) uint64 {
	return maphash.Bytes(ks.index.seed, key)
}

// hashOf is the index's hash of record i's key.
func (ks *keyspace) hashOf(i int32) uint64 {
	r := ks.records.at(i)
	if r.klen == longKey {
		return maphash.String(ks.index.seed, ks.longKey(i))
	}
	return maphash.Bytes(ks.index.seed, r.key[:r.klen])
}

// touch reads the keys of records rs: a segment's records, which the
// index hashes and places again when it splits or grows. The records lie
// anywhere in the keyspace, and hashed one after the other each waited for
// its cache misses, a third of the time a shard took to create keys
// (BenchmarkNewKeys); read first in a loop that does nothing else, their
// misses overlap, and the hashing then finds them in the cache. As in
// prefetch, what it reads is kept only in touched.
func (ks *keyspace) touch(rs []int32) {
	var sum int32
	for _, r := range rs {
		rec := ks.records.at(r)
		sum += int32(rec.klen) + int32(rec.key[inlineKey-1])
	}
	ks.touched = sum
}

// keyIs reports whether record i holds key.
func (ks *keyspace) keyIs(i int32, key []byte) bool {
	r := ks.records.at(i)
	if r.klen == longKey {
		return ks.longKey(i) == string(key)
	}
	return int(r.klen) == len(key) && string(r.key[:r.klen]) == string(key)
}

// key returns record i's key, aliasing the record when it is inline: use it
// before the keyspace changes.
func (ks *keyspace) key(i int32) []byte {
	r := ks.records.at(i)
	if r.klen == longKey {
		return []byte(ks.longKey(i))
	}
	return r.key[:r.klen]
}

// add creates an empty record for key (which must be absent) holding kind
// and params, and returns its number.
func (ks *keyspace) add(key []byte, kind Kind, params [3]int64) int32 {
	i := ks.addUnindexed(key, kind, params)
	ks.index.insert(ks.hash(key), i, ks)
	return i
}

// addUnindexed is add without the index's entry, which the caller makes
// (index.insert) before anything looks the key up.
func (ks *keyspace) addUnindexed(key []byte, kind Kind, params [3]int64) int32 {
	var i int32
	if ks.freeLen > 0 {
		i = ks.freeTop
		ks.freeTop = int32(ks.records.at(i).state[0])
		ks.freeLen--
	} else {
		i = ks.records.grow()
	}
	*ks.records.mut(i) = record{params: ks.params.acquire(kind, params)}
	ks.storeKey(i, key)
	ks.live++
	return i
}

// setKey stores key in record i, which holds none, and indexes it.
func (ks *keyspace) setKey(i int32, key []byte) {
	ks.storeKey(i, key)
	ks.index.insert(ks.hash(key), i, ks)
}

// storeKey stores key in record i, which holds none.
func (ks *keyspace) storeKey(i int32, key []byte) {
	r := ks.records.mut(i)
	if len(key) <= inlineKey {
		r.klen = uint8(len(key))
		r.key = [inlineKey]byte{}
		copy(r.key[:], key)
	} else {
		r.klen = longKey
		ks.setLongKey(i, string(key), true)
	}
}

// remove deletes record i, which goes on the free stack.
func (ks *keyspace) remove(i int32) {
	r := ks.records.mut(i) // before anything is read to be changed, and stable after
	ks.index.drop(ks.hashOf(i), i)
	if r.klen == longKey {
		ks.setLongKey(i, "", false)
	}
	if ks.persists(i) {
		ks.persistent--
	}
	ks.dropExtras(i)
	ks.params.release(r.params)
	ks.pushFree(i)
	ks.live--
}

// pushFree puts record i, which holds nothing, on the free stack.
func (ks *keyspace) pushFree(i int32) {
	*ks.records.mut(i) = record{state: [3]int64{int64(ks.freeTop)}}
	ks.freeTop = i
	ks.freeLen++
}

// freeList is the free stack, bottom first: the order a snapshot's layout
// section writes (sections.go).
func (ks *keyspace) freeList() []int32 {
	list := make([]int32, ks.freeLen)
	for k, i := len(list)-1, ks.freeTop; k >= 0; k-- {
		list[k] = i
		i = int32(ks.records.at(i).state[0])
	}
	return list
}

// kind is record i's algorithm (kindNone for a free record).
func (ks *keyspace) kind(i int32) Kind {
	return ks.params.sets[ks.records.at(i).params].kind
}

// paramsOf are record i's parameters.
func (ks *keyspace) paramsOf(i int32) [3]int64 {
	return ks.params.sets[ks.records.at(i).params].p
}

// set stores record i's kind, parameters and state.
func (ks *keyspace) set(i int32, kind Kind, params [3]int64, state [3]int64) {
	r := ks.records.mut(i)
	if set := ks.params.sets[r.params]; set.kind != kind || set.p != params {
		ks.params.release(r.params)
		r.params = ks.params.acquire(kind, params)
	}
	r.state = state
}

// dropExtras removes what record i holds outside its record: a log, a
// lease list, a string value, a hash's fields, a list's elements or a
// share key's holders.
func (ks *keyspace) dropExtras(i int32) {
	ks.dropCollection(i)
	ks.dropShares(i)
	ks.dropGlobal(i)
	ks.dropLog(i)
	ks.setValue(i, "", false)
}

// len is the number of keys held, including expired ones not yet reclaimed.
func (ks *keyspace) len() int { return ks.live }

// bytes estimates the memory the keyspace holds: records, index, long keys,
// logs and parameter sets, spare capacity included. It is an estimate for
// INFO, not an allocator measurement; --maxmemory counts charged instead.
func (ks *keyspace) bytes() int64 {
	return ks.records.bytes() + ks.index.bytes() + ks.longLen + 48*int64(ks.nLong) +
		logEntrySize*ks.logCap + 48*int64(ks.nLogs) + ks.valLen + 48*int64(ks.nVals) + ks.params.bytes() +
		ks.collBytes() + ks.shareLen + ks.globalLen
}

// usage estimates the bytes record i holds.
func (ks *keyspace) usage(i int32) int64 {
	n := int64(recordSize + indexSlotSize)
	if ks.records.at(i).klen == longKey {
		n += 48 + int64(len(ks.longKey(i)))
	}
	if log, ok := ks.extras(i).logsOf(i); ok {
		n += 48 + logEntrySize*int64(cap(log))
	}
	if ks.hasValue(i) {
		n += 48 + int64(len(ks.value(i)))
	}
	if set := ks.shareSet(i); set != nil {
		n += set.charged
	}
	if e, ok := ks.globals[i]; ok {
		n += e.charged
	}
	return n + ks.collUsage(i)
}

// reclaim examines up to budget records from the sweep cursor and removes
// those that have expired by now.
func (ks *keyspace) reclaim(now int64, budget int) {
	if ks.live == 0 {
		return
	}
	budget = min(budget, ks.records.len())
	for ; budget > 0; budget-- {
		if ks.sweep >= ks.records.len() {
			ks.sweep = 0
		}
		if i := int32(ks.sweep); ks.records.at(i).params != 0 && ks.expiresAt(i) <= now {
			ks.expire(i)
		}
		ks.sweep++
	}
}

// rekey gives record i the key key (which must be absent), keeping its
// number, its kind and its state.
func (ks *keyspace) rekey(i int32, key []byte) {
	ks.index.drop(ks.hashOf(i), i)
	if ks.records.at(i).klen == longKey {
		ks.setLongKey(i, "", false)
	}
	ks.setKey(i, key)
}

// prefetch reads, for each command of a window (its first prefetchWindow
// commands), the index slot its key hashes to and the record that slot names
// (both its cache lines), and nothing more: the window's cache misses then
// overlap (each command's are independent of the others'), where the
// commands, applied one after the other, would wait for each in turn.
//
// It reads in two passes, every slot and then every record the slots name,
// because a record's address is known only once its slot has arrived: in one
// pass each command's record waited for its slot while the next commands'
// reads queued behind it (measured in
// docs/performance.md#tenth-round-two-reads-and-no-results-nobody-reads-2026-12-05).
// What it reads is kept only in touched, so that the compiler keeps the
// reads; nothing depends on it.
func (ks *keyspace) prefetch(cmds []Command) {
	var named [prefetchWindow]int32
	cmds = cmds[:min(len(cmds), prefetchWindow)]
	for i := range cmds {
		h := ks.hash(cmds[i].Key)
		s := ks.index.segment(h)
		j := s.home(h)
		named[i] = -1
		if s.ctrl[j] >= 0x80 {
			named[i] = s.slots[j]
		}
	}
	var sum int32
	for _, r := range named[:len(cmds)] {
		if r >= 0 {
			// Both ends of the record: at 56 bytes, six records in eight
			// span two cache lines, its state in one and its key in the
			// other (docs/performance.md#eighth-round-three-cuts-the-profile-named-2026-12-04-night).
			rec := ks.records.at(r)
			sum += int32(rec.state[0]) + int32(rec.key[inlineKey-1])
		}
	}
	ks.touched = sum
}
