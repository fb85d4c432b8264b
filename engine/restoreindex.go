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

// pendingKey is a record created and not yet indexed: its key, as the
// snapshot's bytes hold it (they outlive the restore's window), and the
// key's hash.
type pendingKey struct {
	key []byte
	h   uint64
	r   int32
}

// add queues record r, whose key is key and hashes to h, reading its index
// slot now; when the window is full, the oldest key is indexed first. It
// returns a key found twice, or nil.
func (w *indexWindow) add(ks *keyspace, key []byte, h uint64, r int32) []byte {
	var dup []byte
	if w.n == restoreAhead {
		dup = w.indexOldest(ks)
	}
	ks.touched += ks.index.touchSlot(h)
	w.keys[(w.head+w.n)%restoreAhead] = pendingKey{key, h, r}
	w.n++
	return dup
}

// flush indexes every key queued, and returns a key found twice, or nil.
func (w *indexWindow) flush(ks *keyspace) []byte {
	for w.n > 0 {
		if dup := w.indexOldest(ks); dup != nil {
			return dup
		}
	}
	return nil
}

// indexOldest indexes the oldest key queued, unless the index holds it
// already: then it returns the key, else nil.
func (w *indexWindow) indexOldest(ks *keyspace) []byte {
	p := w.keys[w.head]
	w.head = (w.head + 1) % restoreAhead
	w.n--
	if ks.findHashed(p.key, p.h) >= 0 {
		return p.key
	}
	ks.index.insert(p.h, p.r, ks)
	return nil
}

// touchSlot reads the control byte and the record number of the slot a key
// hashed to h is probed from, and returns them summed, to be kept where
// the compiler cannot drop the reads (keyspace.touched).
func (x *keyIndex) touchSlot(h uint64) int32 {
	s := x.segment(h)
	i := s.home(h)
	return int32(s.ctrl[i]) + s.slots[i]
}
