package engine

import "hash/maphash"

// keyIndex maps keys to record numbers by extendible hashing: it is split
// into segments, each a small open-addressing table with linear probing, and
// a directory, indexed by some bits of a key's hash, says which segment
// holds the key. A segment that fills up grows: it is rebuilt at the next of
// three sizes (segmentSizes); one at the largest splits in two of the
// smallest, the keys whose next hash bit is 1 going to the new one, and the
// directory doubles (a slice of pointers, a few bytes a segment) when the
// split needs one more bit.
//
// So the index grows a segment at a time. A table that doubled would copy
// every slot at once and stall the shard for a time that grows with its
// keys; a step touches one segment's slots, whatever the keyspace.
//
// Why three sizes: a good hash fills every segment at the same pace, so
// segments of one size split together, and the whole index swung between
// 7/8 full (just before a wave of splits) and 7/16 (just after): from 6.6
// bytes a key at 27M keys to 11.0 at 31M. With sizes 1.3 and 1.5 times
// the smallest, every segment stays between 0.66 and 7/8 full as keys are
// added, whatever their count. What that costs is the arrays a segment
// leaves behind at each step (a few kilobytes for the collector) and
// placing every key about twice more as the index grows
// (docs/performance.md#memory).
//
// Each slot is a control byte (empty, deleted, or 0x80 and seven bits of the
// key's hash) and a record number, kept in two arrays: a probe reads control
// bytes, and looks at a record only when its seven bits match. The keyspace
// probes it (it alone knows the keys). Bits of the hash: the low 32 place a
// key in its segment (scaled to the segment's slots, see home), the next
// ones choose the segment, the top seven are the control byte.
type keyIndex struct {
	seed  maphash.Seed
	dir   []*indexSegment // 1<<depth entries; several may share a segment
	depth uint
	// segments counts the segments and arrayBytes what their arrays take,
	// for bytes.
	segments   int
	arrayBytes int64
	// moving holds a segment's records while it is split or rebuilt.
	moving []int32
}

// indexSegment is one table of the index. Its keys agree on the lowest
// depth bits of their directory index.
type indexSegment struct {
	ctrl    []uint8
	slots   []int32 // as many as ctrl
	used    int32   // full slots
	deleted int32   // deleted slots, dropped by the next split or rebuild
	size    uint8   // its size, an index in segmentSizes
	depth   uint8
}

// segmentSizes are the sizes a segment takes, smallest first: its slots,
// and what its two arrays take in the runtime's size classes (1,344 control
// bytes take 1,408; every other array fills its class exactly).
// TestSizes checks the bytes against the allocator. The largest is 1.5
// times the smallest so that a split, at 7/8 full, leaves two segments
// 0.66 full; the middle one parts the growth into two steps of 1.31 and
// 1.14.
var segmentSizes = [...]struct {
	slots int32
	bytes int64
}{
	{1024, 1024 + 4096},
	{1344, 1408 + 5376},
	{1536, 1536 + 6144},
}

const (
	ctrlEmpty   = 0
	ctrlDeleted = 1
	// indexSlotSize is what one slot costs.
	indexSlotSize = 5
	// segmentHeader is what a segment takes besides its arrays: its
	// struct, in the runtime's size class of 64 bytes.
	segmentHeader = 64
	// largestSize is the size a crowded segment splits at.
	largestSize = len(segmentSizes) - 1
	// dirShift is the lowest hash bit the directory reads: below it, the
	// bits that place a key in its segment. Above it are 25 bits before
	// the control byte's seven, so maxDepth segments' worth: far more than
	// the 2^31 records a keyspace can number need.
	dirShift = 32
	maxDepth = 25
)

// hasher gives the index's hash of a record's key (the keyspace does).
// touch reads the keys of records rs before the index hashes them one by
// one, so that their cache misses overlap (keyspace.touch).
type hasher interface {
	hashOf(r int32) uint64
	touch(rs []int32)
}

func newKeyIndex() keyIndex {
	x := keyIndex{seed: maphash.MakeSeed(), segments: 1}
	x.dir = []*indexSegment{x.newSegment(0, 0)}
	return x
}

func fingerprint7(h uint64) uint8 { return 0x80 | uint8(h>>57) }

// newSegment returns an empty segment of the given size and depth.
func (x *keyIndex) newSegment(size int, depth uint8) *indexSegment {
	s := &indexSegment{depth: depth}
	x.resize(s, size)
	return s
}

// resize empties segment s at size size: new arrays when its size
// changes, its own cleared when not.
func (x *keyIndex) resize(s *indexSegment, size int) {
	switch {
	case s.ctrl != nil && int(s.size) == size:
		clear(s.ctrl)
	default:
		if s.ctrl != nil {
			x.arrayBytes -= segmentSizes[s.size].bytes
		}
		n := segmentSizes[size].slots
		s.ctrl, s.slots, s.size = make([]uint8, n), make([]int32, n), uint8(size)
		x.arrayBytes += segmentSizes[size].bytes
	}
	s.used, s.deleted = 0, 0
}

// reserve sizes an empty index for n keys at once: the fewest segments, a
// power of two, and the smallest size that holds them without growing. A
// restore knows how many keys come, and growing to them a step at a time
// placed every key several times over: a quarter of a million-key
// snapshot's restore (BenchmarkRestoreShard's profile). It does nothing to
// an index that holds keys.
func (x *keyIndex) reserve(n int) {
	if x.segments != 1 || x.dir[0].used+x.dir[0].deleted != 0 {
		return
	}
	for depth := uint(0); depth <= maxDepth; depth++ {
		for size := range segmentSizes {
			if !roomFor(int64(n>>depth), segmentSizes[size].slots) {
				continue
			}
			if depth == 0 && size == 0 {
				return
			}
			x.arrayBytes = 0
			x.dir = make([]*indexSegment, 1<<depth)
			for i := range x.dir {
				x.dir[i] = x.newSegment(size, uint8(depth))
			}
			x.depth, x.segments = depth, 1<<depth
			return
		}
	}
}

// roomFor reports whether a segment of the given slots takes k keys, the
// number it expects, and six standard deviations (√k each) more before it
// is crowded: then a restore of k keys a segment grows or splits none.
func roomFor(k int64, slots int32) bool {
	spare := int64(slots)*7/8 - k
	return spare > 0 && spare*spare >= 36*k
}

// segment returns the segment that holds keys hashed to h.
func (x *keyIndex) segment(h uint64) *indexSegment {
	return x.dir[(h>>dirShift)&(1<<x.depth-1)]
}

// home is the slot where the probe for a key hashed to h starts: the low 32
// bits of h scaled to the segment's slots (a multiply and a shift, where a
// power of two would take a mask: the middle size is not one).
func (s *indexSegment) home(h uint64) int {
	return int(uint64(uint32(h)) * uint64(len(s.ctrl)) >> 32)
}

// next is the slot a probe reads after slot i.
func (s *indexSegment) next(i int) int {
	i++
	if i == len(s.ctrl) {
		return 0
	}
	return i
}

// crowded reports whether one more key would fill the segment past 7/8.
func (s *indexSegment) crowded() bool {
	return (s.used+s.deleted+1)*8 > int32(len(s.ctrl))*7
}

// place puts record r, hashed to h, in the first free slot of its probe
// sequence.
func (s *indexSegment) place(h uint64, r int32) {
	for i := s.home(h); ; i = s.next(i) {
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
// the segment is crowded: rebuilt at its size, to drop the deleted slots,
// when its keys then fill it no more than a growth would (2/3, so that keys
// that come and go do not grow it); otherwise at the next size when there
// is one, or split.
func (x *keyIndex) insert(h uint64, r int32, keys hasher) {
	s := x.segment(h)
	for s.crowded() {
		switch {
		case (s.used+1)*3 <= int32(len(s.ctrl))*2:
			x.rebuild(s, int(s.size), keys)
		case int(s.size) < largestSize:
			x.rebuild(s, int(s.size)+1, keys)
		default:
			x.split(s, keys)
			s = x.segment(h)
		}
	}
	s.place(h, r)
}

// take empties segment s into x.moving, leaving it at size size, and
// returns its records.
func (x *keyIndex) take(s *indexSegment, size int) []int32 {
	held := x.moving[:0]
	for i, c := range s.ctrl {
		if c >= 0x80 {
			held = append(held, s.slots[i])
		}
	}
	x.resize(s, size)
	x.moving = held
	return held
}

// rebuild places segment s's records again, at size size, without its
// deleted slots.
func (x *keyIndex) rebuild(s *indexSegment, size int, keys hasher) {
	rs := x.take(s, size)
	keys.touch(rs)
	for _, r := range rs {
		s.place(keys.hashOf(r), r)
	}
}

// split moves the records of segment s whose next directory bit is 1 to a
// new segment, both at the smallest size, doubling the directory first when
// s already uses all of its bits.
func (x *keyIndex) split(s *indexSegment, keys hasher) {
	if uint(s.depth) == x.depth {
		x.dir = append(x.dir, x.dir...)
		x.depth++
	}
	bit := uint64(1) << s.depth
	s.depth++
	t := x.newSegment(0, s.depth)
	x.segments++
	var pattern uint64 // the directory bits s's keys share
	rs := x.take(s, 0)
	keys.touch(rs)
	for _, r := range rs {
		h := keys.hashOf(r)
		d := h >> dirShift
		pattern = d & (bit - 1)
		if d&bit != 0 {
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
	for i := s.home(h); s.ctrl[i] != ctrlEmpty; i = s.next(i) {
		if s.ctrl[i] == fp && s.slots[i] == r {
			s.ctrl[i] = ctrlDeleted
			s.used--
			s.deleted++
			return
		}
	}
}

// bytes is the index's memory.
func (x *keyIndex) bytes() int64 {
	return x.arrayBytes + segmentHeader*int64(x.segments) + 8*int64(cap(x.dir)) + 4*int64(cap(x.moving))
}
