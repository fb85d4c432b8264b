package engine

// recordStore holds a shard's records in fixed-size chunks that never move.
// A slice grown by doubling would copy every record at each growth and leave
// the old array behind as garbage: the process would pay for the keyspace
// about twice until the collector ran and the runtime gave the pages back.
// Chunks are allocated once, only ever hold records, and stay: growing the
// keyspace allocates only what it keeps.
//
// The chunks themselves hold no pointers, so the garbage collector marks
// each with one look and never scans the records; the slice of chunk
// pointers is all it reads (one word per chunkRecords records).
//
// What a chunk's records hold outside their records (long keys, logs,
// strings, hashes, lists, share holders) is kept beside the chunk, in its
// extras, so that a capture (capture.go) can freeze a chunk and all it
// holds at once: while a capture is in progress, a chunk it still needs is
// copied, with its extras, before the shard first writes to it (own), and
// the capture keeps the original.
type recordStore struct {
	chunks []*recordChunk
	// extras are by chunk, up to the last chunk that has had any (nil, or
	// past the end: its records hold nothing outside), so that a keyspace
	// of short keys and counters pays nothing for them.
	extras []*chunkExtras
	n      int32 // records in use or free, numbered 0 to n-1
	cow    copyOnWrite
}

// chunkShift sets the chunk size: 256 records of 56 bytes, 14,336 bytes, one
// of the runtime's size classes exactly (no rounding lost), small enough
// that a shard with a handful of keys holds little. Copying one before a
// write costs a decision some microseconds while a capture is in progress
// (5.5x a decision outside one, measured in the engine at 10M keys).
// Chunks of 32 records made that 2.3x, but cost 1.6 bytes a key more at
// 30M keys (the chunk pointers, and the collector's headroom for scanning
// them) and an eighth of a restore's speed, while decisions during a
// snapshot stayed 2-4x slower at p99 than outside one
// (docs/performance.md#smaller-chunks).
const (
	chunkShift   = 8
	chunkRecords = 1 << chunkShift
	chunkMask    = chunkRecords - 1
)

type recordChunk [chunkRecords]record

// ChunkBytes is what a chunk of records takes, and a copy of one made for a
// capture (capture.go), besides what its records hold outside them.
const ChunkBytes = chunkRecords * recordSize

// at returns record i, which must be below len, to read: writes go through
// mut.
func (s *recordStore) at(i int32) *record {
	return &s.chunks[i>>chunkShift][i&chunkMask]
}

// mut returns record i, which must be below len, to write: its chunk is
// first copied when a capture in progress still needs the original.
func (s *recordStore) mut(i int32) *record {
	if s.cow.active() {
		s.own(i >> chunkShift)
	}
	return &s.chunks[i>>chunkShift][i&chunkMask]
}

// len is the number of records, free ones included.
func (s *recordStore) len() int { return int(s.n) }

// grow adds a zero record and returns its number.
func (s *recordStore) grow() int32 {
	i := s.n
	if int(i>>chunkShift) == len(s.chunks) {
		s.chunks = append(s.chunks, new(recordChunk))
		s.cow.added()
	}
	s.n++
	return i
}

// own makes chunk c the live state's alone: when a capture in progress
// still needs it, the chunk and its extras are copied, the copies become
// the live ones, and the capture keeps the originals, which nothing writes
// again.
func (s *recordStore) own(c int32) {
	if !s.cow.needs(c) {
		return
	}
	orig, origExtras, copied := s.chunks[c], s.ext(c), s.cow.chunk()
	*copied = *orig
	s.chunks[c] = copied
	if origExtras != nil {
		s.extras[c] = origExtras.clone()
	}
	s.cow.owned(c, orig, origExtras)
}

// ownRecord makes record i, and the slices it holds, the live state's
// alone (own, chunkExtras.ownValues).
func (s *recordStore) ownRecord(i int32) {
	if !s.cow.active() {
		return
	}
	c := i >> chunkShift
	s.own(c)
	if e := s.ext(c); e != nil {
		e.ownValues(i)
	}
}

// ext returns chunk c's extras to read (nil: none).
func (s *recordStore) ext(c int32) *chunkExtras {
	if int(c) < len(s.extras) {
		return s.extras[c]
	}
	return nil
}

// extMut returns the extras of record i's chunk to write, creating them
// when there are none, with record i's values (logs, hashes, lists,
// holders) its own: a capture in progress shares none of them.
func (s *recordStore) extMut(i int32) *chunkExtras {
	s.ownRecord(i)
	c := i >> chunkShift
	if n := int(c) + 1 - len(s.extras); n > 0 {
		s.extras = append(s.extras, make([]*chunkExtras, n)...)
	}
	e := s.extras[c]
	if e == nil {
		e = new(chunkExtras)
		s.extras[c] = e
	}
	return e
}

// bytes is the memory the chunks take, spare ones included.
func (s *recordStore) bytes() int64 {
	return int64(len(s.chunks)+len(s.cow.spare))*chunkRecords*recordSize + 8*int64(cap(s.chunks)+cap(s.extras)) + 4*int64(cap(s.cow.gens))
}
