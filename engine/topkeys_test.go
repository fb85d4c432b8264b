package engine

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// decideAt applies one RL.SLIDING decision on key at now.
func decideAt(s *Shard, now int64, key string, limit int64) {
	out := make([]Result, 1)
	s.Apply(now, []Command{{Op: OpSliding, Key: []byte(key), Args: [4]int64{limit, 60_000, 0, 1}}}, out)
}

func TestTopExactWhenFewKeys(t *testing.T) {
	s := NewShard()
	now := int64(1_700_000_000_000)
	for i := range 20 {
		for range i + 1 {
			decideAt(s, now, fmt.Sprintf("k%02d", i), 5) // 5 allowed, the rest denied
		}
	}
	got := s.Top(true, 3)
	want := []TopKey{{"k19", 15, 0}, {"k18", 14, 0}, {"k17", 13, 0}}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Fatalf("denied: %v, want %v", got, want)
	}
	allowed := s.Top(false, 100)
	if len(allowed) != 20 || allowed[0] != (TopKey{"k04", 5, 0}) || allowed[19] != (TopKey{"k00", 1, 0}) {
		t.Fatalf("allowed: %v", allowed)
	}
}

// The Space-Saving guarantees on a skewed stream of many keys: every key
// decided more than total/topSlots times is reported, and every reported
// count is within its error of the true count.
func TestTopBoundsOnSkewedStream(t *testing.T) {
	for _, seed := range []uint64{1, 2, 3} {
		s := NewShard()
		rng := rand.New(rand.NewPCG(seed, seed))
		zipf := rand.NewZipf(rng, 1.1, 2, 100_000)
		exact := map[string]int64{}
		now := int64(1_700_000_000_000)
		const n = 200_000
		for i := range n {
			key := fmt.Sprintf("user:%d", zipf.Uint64())
			exact[key]++
			decideAt(s, now+int64(i/10_000), key, 1_000_000) // all allowed, within one period
			checkSketches(t, s)
		}
		top := s.Top(false, MaxTopCount)
		reported := map[string]TopKey{}
		for _, k := range top {
			reported[k.Key] = k
			if c := exact[k.Key]; c > k.Count || c < k.Count-k.Error {
				t.Fatalf("seed %d: %s counted %d (error %d), exactly %d", seed, k.Key, k.Count, k.Error, c)
			}
		}
		for key, c := range exact {
			if c > n/topSlots {
				if _, ok := reported[key]; !ok {
					t.Fatalf("seed %d: %s decided %d times (> %d) is not reported", seed, key, c, n/topSlots)
				}
			}
		}
		if len(top) > 10 {
			top = top[:10]
		}
		for _, k := range top {
			if rel := float64(k.Count-exact[k.Key]) / float64(exact[k.Key]); rel > 0.02 {
				t.Errorf("seed %d: %s counted %d, exactly %d: %.1f%% over", seed, k.Key, k.Count, exact[k.Key], 100*rel)
			}
		}
	}
}

// checkSketches verifies every sketch's table and heap against its slots.
func checkSketches(t *testing.T, s *Shard) {
	t.Helper()
	if s.top == nil {
		return
	}
	for o := range s.top.rings {
		for p := range s.top.rings[o] {
			sk := &s.top.rings[o][p]
			linked := 0
			for _, e := range sk.table {
				if e != 0 {
					linked++
				}
			}
			if linked != sk.used {
				t.Fatalf("table holds %d slots, %d in use", linked, sk.used)
			}
			for slot := range sk.used {
				kept := sk.keys[slot][:min(sk.length[slot], topKeyBytes)]
				if sk.find(kept, sk.hash[slot], sk.length[slot]) != slot {
					t.Fatalf("slot %d not found by its key", slot)
				}
				if int(sk.heap[sk.place[slot]]) != slot {
					t.Fatalf("heap place of slot %d is wrong", slot)
				}
			}
			for i := 1; i < sk.used; i++ {
				if sk.count[sk.heap[(i-1)/2]] > sk.count[sk.heap[i]] {
					t.Fatalf("heap order broken at %d", i)
				}
			}
		}
	}
}

func TestTopWindow(t *testing.T) {
	s := NewShard()
	start := int64(1_700_000_000_000) / topPeriodMs * topPeriodMs
	decideAt(s, start, "old", 100)
	decideAt(s, start+30_000, "mid", 100)
	decideAt(s, start+30_000, "mid", 100)
	if got := s.Top(false, 10); fmt.Sprint(got) != "[{mid 2 0} {old 1 0}]" {
		t.Fatalf("at 30 s: %v", got)
	}
	// 75 s on, the first period has left the ring: "old" is forgotten, and
	// its sketch is reused for the new period.
	decideAt(s, start+75_000, "new", 100)
	if got := s.Top(false, 10); fmt.Sprint(got) != "[{mid 2 0} {new 1 0}]" {
		t.Fatalf("at 75 s: %v", got)
	}
	// Nothing for two minutes: the whole ring is out of the window.
	s.Apply(start+200_000, nil, nil)
	if got := s.Top(false, 10); len(got) != 0 {
		t.Fatalf("after two idle minutes: %v", got)
	}
}

func TestTopAcrossPeriodsAddsErrors(t *testing.T) {
	s := NewShard()
	start := int64(1_700_000_000_000) / topPeriodMs * topPeriodMs
	// Period 1: topSlots keys of 3 fill the sketch; "late", twice, stays
	// in the filter.
	for i := range topSlots {
		for range 3 {
			decideAt(s, start, fmt.Sprintf("h%03d", i), 100)
		}
	}
	decideAt(s, start, "late", 100)
	decideAt(s, start, "late", 100)
	first := &s.top.rings[0][s.top.slot]
	if first.find([]byte("late"), topHash([]byte("late")), 4) >= 0 {
		t.Fatal("late is monitored in period 1")
	}
	bucket := first.bound(topHash([]byte("late")))
	if bucket < 2 {
		t.Fatalf("late's bucket %d is below its count 2", bucket)
	}
	// Period 2: "late" alone, 5 times.
	for range 5 {
		decideAt(s, start+topPeriodMs, "late", 100)
	}
	var late TopKey
	for _, k := range s.Top(false, MaxTopCount) {
		if k.Key == "late" {
			late = k
		}
	}
	// Period 1 adds the most late may have had there, all of it error.
	if late != (TopKey{"late", 5 + bucket, bucket}) {
		t.Fatalf("late = %+v, want %d with error %d", late, 5+bucket, bucket)
	}
}

func TestTopLongKeysAndThrottle(t *testing.T) {
	s := NewShard()
	long := strings.Repeat("x", 200)
	other := strings.Repeat("x", 199) + "y" // the same kept bytes, another key
	now := int64(1_700_000_000_000)
	decideAt(s, now, long, 100)
	decideAt(s, now, long, 100)
	decideAt(s, now, other, 100)
	got := s.Top(false, 10)
	want := long[:topKeyBytes] + truncatedKeyMark
	if len(got) != 2 || got[0] != (TopKey{want, 2, 0}) || got[1] != (TopKey{want, 1, 0}) {
		t.Fatalf("%v", got)
	}
	out := make([]Result, 1)
	s.Apply(now, []Command{{Op: OpThrottle, Key: []byte("cell"), Args: [4]int64{0, 1, 60, 1}}}, out)
	s.Apply(now, []Command{{Op: OpThrottle, Key: []byte("cell"), Args: [4]int64{0, 1, 60, 1}}}, out)
	if got := s.Top(true, 1); fmt.Sprint(got) != "[{cell 1 0}]" {
		t.Fatalf("CL.THROTTLE denied: %v", got)
	}
}

func TestTopOpAndDeterminism(t *testing.T) {
	a, b := NewShard(), NewShard()
	rng := rand.New(rand.NewPCG(7, 7))
	now := int64(1_700_000_000_000)
	for i := range 50_000 {
		key := fmt.Sprintf("k%d", rng.IntN(500))
		decideAt(a, now+int64(i), key, 20)
		decideAt(b, now+int64(i), key, 20)
	}
	cmd := Command{Op: OpTop, Args: [4]int64{1, 10}}
	ra, rb := a.Inspect(&cmd), b.Inspect(&cmd)
	if fmt.Sprint(ra) != fmt.Sprint(rb) || len(ra.Fields) != 10 {
		t.Fatalf("replicas differ or short: %v / %v", ra.Fields, rb.Fields)
	}
	if got := TopKeys(ra); fmt.Sprint(got) != fmt.Sprint(a.Top(true, 10)) {
		t.Fatalf("TopKeys(OpTop) = %v, Top = %v", got, a.Top(true, 10))
	}
	// Through the log, as a shard another node leads is read.
	out := make([]Result, 1)
	b.Apply(now+50_000, []Command{cmd}, out)
	if fmt.Sprint(TopKeys(out[0])) != fmt.Sprint(b.Top(true, 10)) {
		t.Fatalf("applied OpTop: %v", out[0])
	}
	if (Command{Op: OpTop, Args: [4]int64{1, MaxTopCount + 1}}).Valid() {
		t.Fatal("a count over MaxTopCount is valid")
	}
}

func TestMergeTop(t *testing.T) {
	got := MergeTop([][]TopKey{{{"a", 5, 0}, {"c", 1, 0}}, {{"b", 5, 1}, {"d", 3, 0}}}, 3)
	if fmt.Sprint(got) != "[{a 5 0} {b 5 1} {d 3 0}]" {
		t.Fatalf("%v", got)
	}
}

// Counting a decision among the heaviest keys allocates nothing, hit or
// miss.
func TestCountTopAllocs(t *testing.T) {
	s := NewShard()
	s.now = 1_700_000_000_000
	keys := make([][]byte, 1000)
	for i := range keys {
		keys[i] = []byte(fmt.Sprintf("user:%d", i))
	}
	s.countTop(keys[0], true)
	i := 0
	if n := testing.AllocsPerRun(10_000, func() {
		s.countTop(keys[i%len(keys)], i%3 == 0)
		i++
	}); n != 0 {
		t.Fatalf("%v allocations per decision", n)
	}
}

// BenchmarkCountTop is the sketch's cost per decision: on a few hot keys
// (hits), and on 100k keys (mostly misses, each evicting the smallest
// counter).
func BenchmarkCountTop(b *testing.B) {
	for _, keys := range []int{16, 100_000} {
		b.Run(fmt.Sprintf("keys=%d", keys), func(b *testing.B) {
			s := NewShard()
			s.now = 1_700_000_000_000
			// The keys side by side, as the engine's keyspace holds them:
			// the benchmark measures the sketch, not cache misses on keys.
			arena := make([]byte, 0, keys*12)
			ks := make([][]byte, keys)
			for i := range ks {
				start := len(arena)
				arena = fmt.Appendf(arena, "user:%d", i)
				ks[i] = arena[start:len(arena):len(arena)]
			}
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				s.countTop(ks[i%keys], true)
			}
		})
	}
}
