package engine

import (
	"math/rand/v2"
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
	if got := unsafe.Sizeof(keyIndex{}.slots[0]) + unsafe.Sizeof(keyIndex{}.ctrl[0]); got != indexSlotSize {
		t.Errorf("an index slot takes %d bytes; indexSlotSize says %d", got, indexSlotSize)
	}
}
