package engine

import (
	"encoding/binary"
	"math"
	"math/bits"
	"slices"
	"strconv"
)

// The heaviest keys of the last minute (RL.TOP), counted per shard with
// Filtered Space-Saving (Homem and Carvalho, 2010), Space-Saving (Metwally,
// Agrawal and El Abbadi, 2005) behind a filter. A sketch monitors topSlots
// keys, each with its count and the most its count may overstate. A
// decision on a monitored key adds one to its count. A decision on another
// key adds one to the filter's bucket of its hash, and only when that
// bucket reaches the smallest monitored count does the key take that
// counter's place, with the bucket's count (plus one) and as much error;
// the key it evicts leaves its count in its own bucket. A bucket is never
// below the count of any unmonitored key that hashes to it, so every count
// is an upper bound, within its error of the truth, and a key decided more
// than total/topSlots times in a period is monitored. Without the filter,
// traffic spread over many keys would evict a counter on every decision;
// with it, such a decision costs a hash, a probe and an add. Memory is
// constant, whatever the number of keys, and nothing is allocated.
//
// A minute is a ring of topPeriods sketches of topPeriodMs each, by the
// shard's clock; a decision counts in the sketch of its period, and RL.TOP
// adds up the ring's sketches. The sketches are counters, like the decision
// counts of Stats, not state: they are in no snapshot or digest, and start
// afresh with the process. Every replica counts the same decisions at the
// same times with the same hash, so replicas agree all the same.

const (
	// topSlots is the keys one sketch monitors; topBuckets its filter's
	// buckets (a power of two).
	topSlots   = 128
	topBuckets = 4096
	// topKeyBytes is how much of a key a sketch keeps to show: a longer
	// key is counted whole (by its hash and length) and shown cut.
	topKeyBytes = 128
	// topPeriodMs and topPeriods make the ring: RL.TOP covers the current
	// period and the four before it, the last 60 to 75 seconds.
	topPeriodMs = 15_000
	topPeriods  = 5
	// MaxTopCount bounds the keys RL.TOP asks a shard for (and answers).
	MaxTopCount = 64
)

// truncatedKeyMark ends a key RL.TOP shows cut to its first 128 bytes.
const truncatedKeyMark = "..."

// TopKey is one of the heaviest keys: Count decisions in the window, at
// most Error of which may be another key's (the true count is from
// Count-Error to Count).
type TopKey struct {
	Key          string
	Count, Error int64
}

// topKeys are a shard's two rings: the decisions allowed, and those denied.
type topKeys struct {
	rings [2][topPeriods]topSketch
	// The current period: its times [from, until) and its place in the
	// rings, so that a decision divides nothing.
	from, until int64
	slot        int
}

// topSketch is one period's Space-Saving sketch. Counters are slots; heap
// orders the slots in use by count (the smallest first), and table finds
// a key's slot by its hash (linear probing, slot+1, 0 for empty).
type topSketch struct {
	period int64 // the period counted (time / topPeriodMs)
	used   int   // slots in use
	total  int64 // decisions counted in the period
	heap   [topSlots]uint8
	place  [topSlots]uint8 // slot -> its index in heap
	count  [topSlots]int64
	err    [topSlots]int64
	hash   [topSlots]uint64
	length [topSlots]int // the key's whole length
	table  [2 * topSlots]uint8
	keys   [topSlots][topKeyBytes]byte
	// filter counts the decisions on unmonitored keys by their hash
	// (saturating: a period counts far fewer than 2^32).
	filter [topBuckets]uint32
}

// countTop counts a decision on key at the shard's time in the sketch of
// its outcome: the hook of Shard.count. The sketches are allocated at the
// first decision.
func (s *Shard) countTop(key []byte, allowed bool) {
	t := s.top
	if t == nil {
		t = &topKeys{from: 1, until: 0}
		s.top = t
	}
	if s.now < t.from || s.now >= t.until {
		t.enter(s.now)
	}
	outcome := 1
	if allowed {
		outcome = 0
	}
	t.rings[outcome][t.slot].add(key, topHash(key))
}

// enter makes the period of now current, emptying its sketches if they
// hold an older one.
func (t *topKeys) enter(now int64) {
	period := now / topPeriodMs
	t.from, t.until = period*topPeriodMs, (period+1)*topPeriodMs
	t.slot = int(period % topPeriods)
	for o := range t.rings {
		if sk := &t.rings[o][t.slot]; sk.period != period {
			sk.reset(period)
		}
	}
}

// reset empties the sketch for period.
func (sk *topSketch) reset(period int64) {
	sk.period, sk.used, sk.total = period, 0, 0
	clear(sk.table[:])
	clear(sk.filter[:])
}

// add counts one decision on key, of hash h.
func (sk *topSketch) add(key []byte, h uint64) {
	sk.total++
	if slot := sk.find(key, h, len(key)); slot >= 0 {
		sk.count[slot]++
		sk.down(int(sk.place[slot]))
		return
	}
	bucket := &sk.filter[h>>32&(topBuckets-1)]
	seen := int64(*bucket)
	var slot int
	switch {
	case sk.used < topSlots:
		slot = sk.used
		sk.heap[slot], sk.place[slot] = uint8(slot), uint8(slot)
		sk.used++
		sk.count[slot], sk.err[slot] = seen+1, seen
		sk.up(slot)
	case seen+1 >= sk.count[sk.heap[0]]:
		// The bucket has caught up with the smallest count: the key takes
		// that counter, and the key it evicts leaves its count behind.
		slot = int(sk.heap[0])
		sk.unlink(slot)
		evicted := &sk.filter[sk.hash[slot]>>32&(topBuckets-1)]
		*evicted = uint32(min(max(int64(*evicted), sk.count[slot]), math.MaxUint32))
		sk.count[slot], sk.err[slot] = seen+1, seen
		sk.down(0)
	default:
		if *bucket < math.MaxUint32 {
			*bucket++
		}
		return
	}
	sk.hash[slot], sk.length[slot] = h, len(key)
	copy(sk.keys[slot][:], key)
	sk.link(slot)
}

// find returns the slot of the key of hash h and length whose first bytes
// (up to topKeyBytes) are kept, or -1.
func (sk *topSketch) find(kept []byte, h uint64, length int) int {
	mask := uint64(len(sk.table) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		e := sk.table[i]
		if e == 0 {
			return -1
		}
		slot := int(e - 1)
		if sk.hash[slot] == h && sk.length[slot] == length && sk.holds(slot, kept) {
			return slot
		}
	}
}

// holds reports whether slot's kept bytes are key's.
func (sk *topSketch) holds(slot int, key []byte) bool {
	n := min(len(key), topKeyBytes)
	return string(sk.keys[slot][:n]) == string(key[:n])
}

// link enters slot in the table under its hash.
func (sk *topSketch) link(slot int) {
	mask := uint64(len(sk.table) - 1)
	i := sk.hash[slot] & mask
	for sk.table[i] != 0 {
		i = (i + 1) & mask
	}
	sk.table[i] = uint8(slot + 1)
}

// unlink removes slot from the table, moving back the entries after it
// that probing would no longer reach (deletion without tombstones).
func (sk *topSketch) unlink(slot int) {
	mask := uint64(len(sk.table) - 1)
	i := sk.hash[slot] & mask
	for int(sk.table[i]) != slot+1 {
		i = (i + 1) & mask
	}
	for j := (i + 1) & mask; sk.table[j] != 0; j = (j + 1) & mask {
		home := sk.hash[sk.table[j]-1] & mask
		// The entry at j may move to the hole at i if its home is not in
		// the cyclic range (i, j].
		if (j-home)&mask >= (j-i)&mask {
			sk.table[i] = sk.table[j]
			i = j
		}
	}
	sk.table[i] = 0
}

// up restores the heap above index i after a counter entered there.
func (sk *topSketch) up(i int) {
	for i > 0 {
		parent := (i - 1) / 2
		if sk.count[sk.heap[parent]] <= sk.count[sk.heap[i]] {
			return
		}
		sk.swap(i, parent)
		i = parent
	}
}

// swap swaps two places of the heap.
func (sk *topSketch) swap(i, j int) {
	sk.heap[i], sk.heap[j] = sk.heap[j], sk.heap[i]
	sk.place[sk.heap[i]], sk.place[sk.heap[j]] = uint8(i), uint8(j)
}

// down restores the heap below index i after its counter grew.
func (sk *topSketch) down(i int) {
	for {
		least, l, r := i, 2*i+1, 2*i+2
		if l < sk.used && sk.count[sk.heap[l]] < sk.count[sk.heap[least]] {
			least = l
		}
		if r < sk.used && sk.count[sk.heap[r]] < sk.count[sk.heap[least]] {
			least = r
		}
		if least == i {
			return
		}
		sk.swap(i, least)
		i = least
	}
}

// bound is the most the unmonitored key of hash h may have been counted
// in the sketch's period: its filter bucket.
func (sk *topSketch) bound(h uint64) int64 {
	return int64(sk.filter[h>>32&(topBuckets-1)])
}

// topHash hashes a key with fixed constants (every replica must count
// alike), eight bytes at a step.
func topHash(key []byte) uint64 {
	const m = 0x9E3779B97F4A7C15
	h := uint64(len(key)) * m
	for len(key) >= 8 {
		h = bits.RotateLeft64((h^binary.LittleEndian.Uint64(key))*m, 31)
		key = key[8:]
	}
	var tail uint64
	for i, c := range key {
		tail |= uint64(c) << (8 * i)
	}
	h = (h ^ tail) * m
	return h ^ h>>32
}

// Top returns up to n of the heaviest keys of the last minute as of the
// shard's clock, allowed or denied, the heaviest first (ties by key). A
// key's count adds up its counters in the ring's periods, and for a period
// whose sketch does not monitor it, the most it may have had there (its
// filter bucket), which is also added to its error.
func (s *Shard) Top(denied bool, n int) []TopKey {
	if s.top == nil || n <= 0 {
		return nil
	}
	outcome := 0
	if denied {
		outcome = 1
	}
	now := s.now / topPeriodMs
	var live []*topSketch
	for i := range s.top.rings[outcome] {
		sk := &s.top.rings[outcome][i]
		if sk.total > 0 && sk.period <= now && sk.period > now-topPeriods {
			live = append(live, sk)
		}
	}
	type candidate struct {
		sk   *topSketch
		slot int
	}
	var cands []candidate
	var seen [][]byte
	for _, sk := range live {
		for slot := range sk.used {
			key := sk.keys[slot][:min(sk.length[slot], topKeyBytes)]
			dup := false
			for _, c := range cands {
				if c.sk.hash[c.slot] == sk.hash[slot] && c.sk.length[c.slot] == sk.length[slot] && c.sk.holds(c.slot, key) {
					dup = true
					break
				}
			}
			if !dup {
				cands = append(cands, candidate{sk, slot})
				seen = append(seen, key)
			}
		}
	}
	out := make([]TopKey, 0, len(cands))
	for i, c := range cands {
		key, h, length := seen[i], c.sk.hash[c.slot], c.sk.length[c.slot]
		var t TopKey
		for _, sk := range live {
			if slot := sk.find(key, h, length); slot >= 0 {
				t.Count += sk.count[slot]
				t.Error += sk.err[slot]
			} else {
				b := sk.bound(h)
				t.Count += b
				t.Error += b
			}
		}
		t.Key = string(key)
		if length > topKeyBytes {
			t.Key += truncatedKeyMark
		}
		out = append(out, t)
	}
	sortTop(out)
	return out[:min(n, len(out))]
}

// sortTop orders keys the heaviest first, then by key.
func sortTop(keys []TopKey) {
	slices.SortFunc(keys, func(a, b TopKey) int {
		switch {
		case a.Count != b.Count:
			if a.Count > b.Count {
				return -1
			}
			return 1
		case a.Key < b.Key:
			return -1
		case a.Key > b.Key:
			return 1
		}
		return 0
	})
}

// MergeTop merges the heaviest keys of several shards (whose keys differ)
// into the n heaviest.
func MergeTop(lists [][]TopKey, n int) []TopKey {
	var all []TopKey
	for _, l := range lists {
		all = append(all, l...)
	}
	sortTop(all)
	return all[:min(n, len(all))]
}

// topResult is OpTop's answer: a field per key, its name the key, Int its
// count and Text its error (TopKeys reads it back).
func (s *Shard) topResult(c *Command) Result {
	keys := s.Top(c.Args[0] == 1, int(c.Args[1]))
	f := make([]Field, len(keys))
	for i, k := range keys {
		f[i] = Field{Name: k.Key, Int: k.Count, Text: strconv.FormatInt(k.Error, 10)}
	}
	return Result{Type: ResFields, Fields: f}
}

// TopKeys reads OpTop's result.
func TopKeys(r Result) []TopKey {
	out := make([]TopKey, len(r.Fields))
	for i, f := range r.Fields {
		e, _ := strconv.ParseInt(f.Text, 10, 64)
		out[i] = TopKey{Key: f.Name, Count: f.Int, Error: e}
	}
	return out
}
