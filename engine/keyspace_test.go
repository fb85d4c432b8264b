package engine

import (
	"math/rand/v2"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"unsafe"
)

// The keyspace against a Go map, under random adds and removes of short and
// long keys: every key is found exactly while it is held, through index
// rebuilds and reused records.
func TestKeyspaceMatchesAMap(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	ks := newKeyspace()
	want := map[string]int32{}
	key := func(n int) string {
		if n%7 == 0 {
			return "long:" + strings.Repeat("x", 40) + strconv.Itoa(n) // beyond inlineKey
		}
		return "k" + strconv.Itoa(n)
	}
	for step := range 200_000 {
		k := key(rng.IntN(5000))
		if i, ok := want[k]; ok && rng.IntN(3) == 0 {
			if got := ks.find([]byte(k)); got != i {
				t.Fatalf("step %d: find(%q) = %d, want %d", step, k, got, i)
			}
			ks.remove(i)
			delete(want, k)
		} else if !ok {
			if got := ks.find([]byte(k)); got != -1 {
				t.Fatalf("step %d: found absent %q at %d", step, k, got)
			}
			want[k] = ks.add([]byte(k), KindFixed, [3]int64{int64(len(k)), 1000})
		}
	}
	if ks.len() != len(want) {
		t.Fatalf("len %d, want %d", ks.len(), len(want))
	}
	for k, i := range want {
		if got := ks.find([]byte(k)); got != i || string(ks.key(i)) != k || ks.paramsOf(i)[0] != int64(len(k)) {
			t.Fatalf("%q: record %d, want %d", k, got, i)
		}
	}
	// Only the parameter sets still in use remain.
	if len(ks.params.ids) > 100 {
		t.Fatalf("%d parameter sets held", len(ks.params.ids))
	}
}

// A record is 56 bytes and holds no pointers, so the garbage collector never
// scans the records, however many there are.
func TestRecordIsCompact(t *testing.T) {
	if recordSize != 56 {
		t.Fatalf("record is %d bytes", recordSize)
	}
}

// TestSizes checks the sizes the memory limit charges, written as literals
// so that every replica charges alike, against what the compiler lays out.
// A change of layout must change the literals, knowingly: replicas of
// different versions would otherwise refuse or evict differently.
func TestSizes(t *testing.T) {
	if got := unsafe.Sizeof(record{}); got != recordSize {
		t.Errorf("a record takes %d bytes; recordSize says %d", got, recordSize)
	}
	if got := unsafe.Sizeof(logEntry{}); got != logEntrySize {
		t.Errorf("a log entry takes %d bytes; logEntrySize says %d", got, logEntrySize)
	}
	if got := unsafe.Sizeof(indexSegment{}.slots[0]) + unsafe.Sizeof(indexSegment{}.ctrl[0]); got != indexSlotSize {
		t.Errorf("an index slot takes %d bytes; indexSlotSize says %d", got, indexSlotSize)
	}
	// The size classes the chunks and segments are sized for: a chunk fills
	// its class exactly, and a segment's arrays take what segmentSizes says.
	if got := allocated(func() { sinkChunk = new(recordChunk) }); got != int64(unsafe.Sizeof(recordChunk{})) || got != ChunkBytes {
		t.Errorf("a record chunk allocates %d bytes, for %d of records", got, ChunkBytes)
	}
	for _, size := range segmentSizes {
		n := int(size.slots)
		if got := allocated(func() { sinkCtrl = make([]uint8, n) }) + allocated(func() { sinkSlots = make([]int32, n) }); got != size.bytes {
			t.Errorf("a segment of %d slots allocates %d bytes; segmentSizes says %d", n, got, size.bytes)
		}
	}
	if got := allocated(func() { sinkSegment = new(indexSegment) }); got != segmentHeader {
		t.Errorf("a segment's struct allocates %d bytes; segmentHeader says %d", got, segmentHeader)
	}
}

// What allocated's functions allocate is kept here, so that the compiler
// keeps the allocation on the heap.
var (
	sinkCtrl    []uint8
	sinkSlots   []int32
	sinkSegment *indexSegment
	sinkChunk   *recordChunk
)

// allocated is what one call of f allocates, as the runtime counts it:
// the size class its request was rounded up to.
func allocated(f func()) int64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return int64(after.TotalAlloc - before.TotalAlloc)
}

// The index through many splits, rebuilds and removals: every key is found
// while held, never after, every directory entry names the segment its keys
// are in, and the segments hold exactly the live keys.
func TestIndexSplitsKeepEveryKey(t *testing.T) {
	ks := newKeyspace()
	key := func(n int) []byte { return strconv.AppendInt([]byte("user:"), int64(n), 10) }
	const n = 150_000
	for i := range n {
		ks.add(key(i), KindFixed, [3]int64{100, 60_000})
	}
	for i := 0; i < n; i += 3 {
		ks.remove(ks.find(key(i)))
	}
	for i := n; i < n+n/2; i++ {
		ks.add(key(i), KindFixed, [3]int64{100, 60_000})
	}
	for i := range n + n/2 {
		got := ks.find(key(i))
		if removed := i < n && i%3 == 0; removed != (got < 0) {
			t.Fatalf("key %d: record %d, removed %v", i, got, removed)
		}
		if got >= 0 && string(ks.key(got)) != string(key(i)) {
			t.Fatalf("key %d found at record %d, which holds %q", i, got, ks.key(got))
		}
	}
	x := &ks.index
	segments, used := map[*indexSegment]bool{}, 0
	for j, s := range x.dir {
		if uint(len(x.dir)) != 1<<x.depth || uint(s.depth) > x.depth {
			t.Fatalf("directory of %d at depth %d; segment at depth %d", len(x.dir), x.depth, s.depth)
		}
		if len(s.ctrl) != len(s.slots) || int32(len(s.ctrl)) != segmentSizes[s.size].slots {
			t.Fatalf("a segment of size %d has %d control bytes and %d slots", s.size, len(s.ctrl), len(s.slots))
		}
		for i, c := range s.ctrl {
			if c >= 0x80 {
				if h := ks.hashOf(s.slots[i]); x.segment(h) != s || (h>>dirShift)&(1<<s.depth-1) != uint64(j)&(1<<s.depth-1) {
					t.Fatalf("record %d is in a segment its hash does not name", s.slots[i])
				}
			}
		}
		if !segments[s] {
			segments[s] = true
			used += int(s.used)
		}
	}
	if len(segments) != x.segments || used != ks.len() {
		t.Fatalf("%d segments (counted %d) hold %d keys; %d live", len(segments), x.segments, used, ks.len())
	}
}

// An index reserved for n keys takes them without a split or a growth,
// finds each, and grows as before past them.
func TestIndexReservedTakesItsKeysWithoutSplits(t *testing.T) {
	ks := newKeyspace()
	const n = 200_000
	ks.index.reserve(n)
	segments, bytes := ks.index.segments, ks.index.bytes()
	if fill := float64(n) / float64(segments*len(ks.index.dir[0].ctrl)); fill < 0.5 || fill > 0.875 {
		t.Fatalf("%d segments reserved for %d keys, in %d bytes: %.2f full", segments, n, bytes, fill)
	}
	key := func(n int) []byte { return strconv.AppendInt([]byte("user:"), int64(n), 10) }
	for i := range n {
		ks.add(key(i), KindFixed, [3]int64{100, 60_000})
	}
	if ks.index.segments != segments || ks.index.bytes() != bytes {
		t.Fatalf("%d keys changed the reserved %d segments of %d bytes into %d of %d", n, segments, bytes, ks.index.segments, ks.index.bytes())
	}
	for i := range n {
		if got := ks.find(key(i)); got < 0 || string(ks.key(got)) != string(key(i)) {
			t.Fatalf("key %d: record %d", i, got)
		}
	}
	for i := n; i < 4*n; i++ { // past what the reserved segments hold
		ks.add(key(i), KindFixed, [3]int64{100, 60_000})
	}
	if ks.index.segments <= segments || ks.find(key(4*n-1)) < 0 {
		t.Fatalf("past its reserve the index has %d segments", ks.index.segments)
	}
	ks.index.reserve(10 * n) // holds keys: nothing to do
	if ks.find(key(0)) < 0 {
		t.Fatal("reserve on a full index lost a key")
	}
}

// The index stays between 0.66 and 7/8 full whatever the count of keys:
// under 8 bytes a key at every count past its first segments. (With one
// segment size it swung between 7/8 and 7/16 full as the segments split
// together, up to 11 bytes a key just after each wave of splits.)
func TestIndexBytesPerKeyStayLowAtEveryCount(t *testing.T) {
	ks := newKeyspace()
	buf := make([]byte, 0, 32)
	worst, at := 0.0, 0
	for i := range 600_000 {
		buf = strconv.AppendInt(append(buf[:0], "user:"...), int64(i), 10)
		ks.add(buf, KindSliding, [3]int64{100, 60_000})
		if n := i + 1; n >= 20_000 && n%2_000 == 0 {
			if perKey := float64(ks.index.bytes()) / float64(n); perKey > worst {
				worst, at = perKey, n
			}
		}
	}
	if worst > 8 {
		t.Fatalf("the index took %.2f bytes a key at %d keys", worst, at)
	}
}

// Growing the keyspace allocates little more than it keeps: records come
// in chunks that never move, and the index grows a segment at a time, each
// segment leaving behind the arrays of its smaller sizes (keyindex.go):
// under four times what the index keeps, a tenth of the whole; the slices
// of chunk pointers double as they grow, a few bytes for 256 keys. (A slice
// and a table grown by doubling allocated about three times what they
// kept, all of it.)
func TestKeyspaceGrowsWithoutGarbage(t *testing.T) {
	ks := newKeyspace()
	buf := make([]byte, 0, 32)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	const n = 300_000
	for i := range n {
		buf = strconv.AppendInt(append(buf[:0], "user:"...), int64(i), 10)
		ks.add(buf, KindSliding, [3]int64{100, 60_000})
	}
	runtime.ReadMemStats(&after)
	allocated, kept := int64(after.TotalAlloc-before.TotalAlloc), ks.bytes()
	if allocated > kept+kept/50+4*ks.index.bytes()+64<<10 {
		t.Fatalf("%d keys allocated %d bytes and keep %d, %d of them the index's", n, allocated, kept, ks.index.bytes())
	}
	if perKey := kept / n; perKey > recordSize+8 {
		t.Fatalf("%d bytes a key", perKey)
	}
}
