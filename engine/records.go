package engine

// recordStore holds a shard's records in fixed-size chunks that never move.
// A slice grown by doubling would copy every record at each growth and leave
// the old array behind as garbage: the process would pay for the keyspace
// about twice until the collector ran and the runtime gave the pages back.
// Chunks are allocated once, only ever hold records, and stay: growing the
// keyspace allocates only what it keeps, and a record's address is stable.
//
// The chunks themselves hold no pointers, so the garbage collector marks
// each with one look and never scans the records; the slice of chunk
// pointers is all it reads (one word per chunkRecords records).
type recordStore struct {
	chunks []*recordChunk
	n      int32 // records in use or free, numbered 0 to n-1
}

// chunkShift sets the chunk size: 256 records of 56 bytes, 14,336 bytes, one
// of the runtime's size classes exactly (no rounding lost), small enough
// that a shard with a handful of keys holds little.
const (
	chunkShift   = 8
	chunkRecords = 1 << chunkShift
	chunkMask    = chunkRecords - 1
)

type recordChunk [chunkRecords]record

// at returns record i, which must be below len.
func (s *recordStore) at(i int32) *record {
	return &s.chunks[i>>chunkShift][i&chunkMask]
}

// len is the number of records, free ones included.
func (s *recordStore) len() int { return int(s.n) }

// grow adds a zero record and returns its number.
func (s *recordStore) grow() int32 {
	i := s.n
	if int(i>>chunkShift) == len(s.chunks) {
		s.chunks = append(s.chunks, new(recordChunk))
	}
	s.n++
	return i
}

// bytes is the memory the chunks take.
func (s *recordStore) bytes() int64 {
	return int64(len(s.chunks))*chunkRecords*recordSize + 8*int64(cap(s.chunks))
}
