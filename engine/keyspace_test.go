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
	// its class exactly, a segment's counters tip it into the class above.
	if got := unsafe.Sizeof(recordChunk{}); got != 14336 {
		t.Errorf("a record chunk takes %d bytes, not the size class of 14,336", got)
	}
	if got := unsafe.Sizeof(indexSegment{}); got <= 5120 || got > segmentBytes {
		t.Errorf("an index segment takes %d bytes, not within the size class of %d", got, segmentBytes)
	}
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
		if uint(len(x.dir)) != 1<<x.depth || s.depth > x.depth {
			t.Fatalf("directory of %d at depth %d; segment at depth %d", len(x.dir), x.depth, s.depth)
		}
		for i, c := range s.ctrl {
			if c >= 0x80 {
				if h := ks.hashOf(s.slots[i]); x.segment(h) != s || (h>>segmentShift)&(1<<s.depth-1) != uint64(j)&(1<<s.depth-1) {
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

// An index reserved for n keys takes them without a split, finds each,
// and splits as before past them.
func TestIndexReservedTakesItsKeysWithoutSplits(t *testing.T) {
	ks := newKeyspace()
	const n = 200_000
	ks.index.reserve(n)
	segments := ks.index.segments
	if segments < n/segmentSlots || segments > 4*n/segmentSlots {
		t.Fatalf("%d segments reserved for %d keys", segments, n)
	}
	key := func(n int) []byte { return strconv.AppendInt([]byte("user:"), int64(n), 10) }
	for i := range n {
		ks.add(key(i), KindFixed, [3]int64{100, 60_000})
	}
	if ks.index.segments != segments {
		t.Fatalf("%d keys split the reserved %d segments into %d", n, segments, ks.index.segments)
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

// Growing the keyspace allocates only what it keeps: records come in chunks
// that never move and the index splits a segment at a time, so no array is
// copied and left behind as garbage. (A slice and a table grown by doubling
// allocated about three times what they kept.)
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
	if allocated > kept+kept/50+64<<10 {
		t.Fatalf("%d keys allocated %d bytes and keep %d", n, allocated, kept)
	}
	if perKey := kept / n; perKey > recordSize+12 {
		t.Fatalf("%d bytes a key", perKey)
	}
}
