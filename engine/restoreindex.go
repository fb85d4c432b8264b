package engine

// A restore creates its keys' records in order, one after another in
// memory, but each key's index slot is anywhere in the index: at ten
// million keys each key cost a cache miss on its slot's control byte (the
// check that the snapshot does not hold it twice) and another on its record
// number (the insert), one key after the other, about half of a restore's
// time (docs/performance.md, "And the restore's index, a window behind"). So a
// restore indexes each key restoreAhead keys after it creates the key's
// record: as a key is decoded, its slot's two lines are read and nothing
// waits for them, and by the time the key is indexed they have arrived,
// the misses of the keys in between overlapping. The duplicate check comes
// as the key is indexed, so a snapshot that holds a key twice fails as
// before; nothing looks a key up between its record and its index entry
// (the window is flushed after the last key, before the sections that
// follow).

// restoreAhead is how many keys a restore decodes ahead of the one it
// indexes.
const restoreAhead = 16

// indexWindow holds the keys a restore has created and not yet indexed,
// oldest first, in a ring.
type indexWindow struct {
	keys    [restoreAhead]pendingKey
	head, n int
}

// pendingKey is a record created and not yet indexed, and its key's hash.
type pendingKey struct {
	h uint64
	r int32
}

// add queues record r, whose key hashes to h, reading its index slot now;
// when the window is full, the oldest key is indexed first. It returns the
// record of a key found twice, or -1.
func (w *indexWindow) add(ks *keyspace, h uint64, r int32) int32 {
	dup := int32(-1)
	if w.n == restoreAhead {
		dup = w.indexOldest(ks)
	}
	ks.touched += ks.index.touchSlot(h)
	w.keys[(w.head+w.n)%restoreAhead] = pendingKey{h, r}
	w.n++
	return dup
}

// flush indexes every key queued, and returns the record of a key found
// twice, or -1.
func (w *indexWindow) flush(ks *keyspace) int32 {
	for w.n > 0 {
		if dup := w.indexOldest(ks); dup >= 0 {
			return dup
		}
	}
	return -1
}

// indexOldest indexes the oldest key queued, unless the index holds it
// already: then it returns its record, else -1.
func (w *indexWindow) indexOldest(ks *keyspace) int32 {
	p := w.keys[w.head]
	w.head = (w.head + 1) % restoreAhead
	w.n--
	if ks.findHashed(ks.key(p.r), p.h) >= 0 {
		return p.r
	}
	ks.index.insert(p.h, p.r, ks)
	return -1
}

// touchSlot reads the control byte and the record number of the slot a key
// hashed to h is probed from, and returns them summed, to be kept where
// the compiler cannot drop the reads (keyspace.touched).
func (x *keyIndex) touchSlot(h uint64) int32 {
	s := x.segment(h)
	i := s.home(h)
	return int32(s.ctrl[i]) + s.slots[i]
}
