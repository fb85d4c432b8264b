package engine

import "hash/maphash"

// keyIndex maps keys to record numbers by extendible hashing: it is split
// into segments, each a small open-addressing table with linear probing, and
// a directory, indexed by some bits of a key's hash, says which segment
// holds the key. A segment that fills up splits in two: the keys whose next
// hash bit is 1 move to a new segment, and the directory doubles (a slice of
// pointers, a few bytes a segment) when the split needs one more bit.
//
// So the index grows a segment at a time. A table that doubled would copy
// every slot and leave the old table behind as garbage (the process paid for
// it until the collector ran and the pages went back), and would stall the
// shard for a time that grows with its keys; a split touches one segment's
// 1,024 slots, whatever the keyspace.
//
// Each slot is a control byte (empty, deleted, or 0x80 and seven bits of the
// key's hash) and a record number, kept in two arrays: a probe reads control
// bytes, and looks at a record only when its seven bits match. The keyspace
// probes it (it alone knows the keys). Bits of the hash: the lowest
// segmentShift place a key in its segment, the next ones choose the segment,
// the top seven are the control byte.
type keyIndex struct {
	seed  maphash.Seed
	dir   []*indexSegment // 1<<depth entries; several may share a segment
	depth uint
	// segments counts the segments, for bytes.
	segments int
	// moving holds a segment's records while it is split or rebuilt.
	moving []int32
}

// indexSegment is one table of the index. Its keys agree on the lowest
// depth bits of their directory index.
type indexSegment struct {
	ctrl    [segmentSlots]uint8
	slots   [segmentSlots]int32
	used    int32 // full slots
	deleted int32 // deleted slots, dropped by the next split or rebuild
	depth   uint
}

const (
	ctrlEmpty   = 0
	ctrlDeleted = 1
	// indexSlotSize is what one slot costs.
	indexSlotSize = 5
	// segmentShift sets the slots of a segment: 1,024 slots, 5 KiB.
	segmentShift = 10
	segmentSlots = 1 << segmentShift
	segmentMask  = segmentSlots - 1
)

// hasher gives the index's hash of a record's key (the keyspace does).
type hasher interface {
	hashOf(r int32) uint64
}

func newKeyIndex() keyIndex {
	return keyIndex{seed: maphash.MakeSeed(), dir: []*indexSegment{new(indexSegment)}, segments: 1}
}

func fingerprint7(h uint64) uint8 { return 0x80 | uint8(h>>57) }

// reserve sizes an empty index for n keys at once: the fewest segments,
// a power of two, whose average fill stays at 11/16, each a segment of its
// own in the directory. A restore knows how many keys come, and growing
// to them a split at a time rehashed every key several times over: a
// quarter of a million-key snapshot's restore (BenchmarkRestoreShard's
// profile). At 11/16 a segment's expected 704 keys are six standard
// deviations from the 896 that would split it, so a restore splits none.
// It does nothing to an index that holds keys.
func (x *keyIndex) reserve(n int) {
	if x.segments != 1 || x.dir[0].used+x.dir[0].deleted != 0 {
		return
	}
	var depth uint
	for (1<<depth)*segmentSlots*11/16 < n && depth < 30 {
		depth++
	}
	if depth == 0 {
		return
	}
	x.dir = make([]*indexSegment, 1<<depth)
	for i := range x.dir {
		x.dir[i] = &indexSegment{depth: depth}
	}
	x.depth, x.segments = depth, 1<<depth
}

// segment returns the segment that holds keys hashed to h.
func (x *keyIndex) segment(h uint64) *indexSegment {
	return x.dir[(h>>segmentShift)&(1<<x.depth-1)]
}

// crowded reports whether one more key would fill the segment past 7/8.
func (s *indexSegment) crowded() bool {
	return (s.used+s.deleted+1)*8 > segmentSlots*7
}

// place puts record r, hashed to h, in the first free slot of its probe
// sequence.
func (s *indexSegment) place(h uint64, r int32) {
	for i := h & segmentMask; ; i = (i + 1) & segmentMask {
		if c := s.ctrl[i]; c == ctrlEmpty || c == ctrlDeleted {
			if c == ctrlDeleted {
				s.deleted--
			}
			s.ctrl[i], s.slots[i] = fingerprint7(h), r
			s.used++
			return
		}
	}
}

// insert adds record r, hashed to h, first making room in its segment when
// the segment is crowded: rebuilt in place when fewer than half its slots
// hold keys (to drop the deleted ones), otherwise split.
func (x *keyIndex) insert(h uint64, r int32, keys hasher) {
	s := x.segment(h)
	for s.crowded() {
		if (s.used+1)*2 <= segmentSlots {
			x.rebuild(s, keys)
			break
		}
		x.split(s, keys)
		s = x.segment(h)
	}
	s.place(h, r)
}

// take empties segment s into x.moving and returns its records.
func (x *keyIndex) take(s *indexSegment) []int32 {
	held := x.moving[:0]
	for i, c := range s.ctrl {
		if c >= 0x80 {
			held = append(held, s.slots[i])
		}
	}
	s.ctrl = [segmentSlots]uint8{}
	s.used, s.deleted = 0, 0
	x.moving = held
	return held
}

// rebuild places segment s's records again, without its deleted slots.
func (x *keyIndex) rebuild(s *indexSegment, keys hasher) {
	for _, r := range x.take(s) {
		s.place(keys.hashOf(r), r)
	}
}

// split moves the records of segment s whose next directory bit is 1 to a
// new segment, doubling the directory first when s already uses all of its
// bits.
func (x *keyIndex) split(s *indexSegment, keys hasher) {
	if s.depth == x.depth {
		x.dir = append(x.dir, x.dir...)
		x.depth++
	}
	bit := uint64(1) << s.depth
	t := &indexSegment{depth: s.depth + 1}
	s.depth++
	x.segments++
	var pattern uint64 // the directory bits s's keys share
	for _, r := range x.take(s) {
		h := keys.hashOf(r)
		pattern = (h >> segmentShift) & (bit - 1)
		if (h>>segmentShift)&bit != 0 {
			t.place(h, r)
		} else {
			s.place(h, r)
		}
	}
	// The directory entries of s's keys are pattern plus a multiple of bit;
	// those with the bit set now name t.
	for j := pattern | bit; j < uint64(len(x.dir)); j += 2 * bit {
		x.dir[j] = t
	}
}

// drop deletes record r, hashed to h.
func (x *keyIndex) drop(h uint64, r int32) {
	s := x.segment(h)
	fp := fingerprint7(h)
	for i := h & segmentMask; s.ctrl[i] != ctrlEmpty; i = (i + 1) & segmentMask {
		if s.ctrl[i] == fp && s.slots[i] == r {
			s.ctrl[i] = ctrlDeleted
			s.used--
			s.deleted++
			return
		}
	}
}

// segmentBytes is what a segment takes: its slots, and the runtime's size
// class of 5,376 bytes.
const segmentBytes = 5376

// bytes is the index's memory.
func (x *keyIndex) bytes() int64 {
	return int64(x.segments)*segmentBytes + 8*int64(cap(x.dir)) + 4*int64(cap(x.moving))
}
