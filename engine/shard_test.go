package engine

import (
	"slices"
	"testing"
)

func TestKeyExpiresWhenBackToNeverSeen(t *testing.T) {
	s := NewShard()
	d := decision(t, s, 10_500, OpSliding, "k", 5, 1000, 0, 1)
	// The count weighs in until the end of the next window: 2000 - 500 ms.
	if d.ResetAfter != 1500 {
		t.Fatalf("reset after %d, want 1500", d.ResetAfter)
	}
	if r := apply(s, 10_500, OpPTTL, "k"); r.Int != 1500 {
		t.Fatalf("PTTL %d, want 1500", r.Int)
	}
	if r := apply(s, 10_500, OpTTL, "k"); r.Int != 2 { // 1.5 s rounds to 2 as in Redis
		t.Fatalf("TTL %d, want 2", r.Int)
	}
	if r := apply(s, 11_999, OpExists, "k"); r.Int != 1 {
		t.Fatal("key gone before its reset time")
	}
	if r := apply(s, 12_000, OpExists, "k"); r.Int != 0 {
		t.Fatal("key still there at its reset time")
	}
	if r := apply(s, 12_000, OpPTTL, "k"); r.Int != -2 {
		t.Fatalf("PTTL of a gone key %d, want -2", r.Int)
	}
}

func TestRefusalsAndPeeksCreateNoKeys(t *testing.T) {
	s := NewShard()
	apply(s, 1000, OpSliding, "peek", 5, 1000, 0, 0)
	apply(s, 1000, OpToken, "too-big", 5, 1, 1000, 6)
	apply(s, 1000, OpThrottle, "peek-cell", 4, 1, 1, 0)
	if n := apply(s, 1000, OpDBSize, "").Int; n != 0 {
		t.Fatalf("DBSIZE %d after peeks and impossible costs, want 0", n)
	}
}

func TestWrongType(t *testing.T) {
	s := NewShard()
	decision(t, s, 1000, OpSliding, "k", 5, 1000, 0, 1)
	for _, op := range []Op{OpFixed, OpLog, OpToken, OpLeaky, OpGCRA, OpThrottle} {
		r := apply(s, 1000, op, "k", 5, 1, 1000, 1)
		if r.Type != ResError || r.Err != ErrWrongType {
			t.Errorf("op %d on a sliding key: %+v, want WRONGTYPE", op, r)
		}
	}
	if r := apply(s, 1000, OpType, "k"); r.Text != "rl.sliding" {
		t.Errorf("TYPE %q", r.Text)
	}
	// Once the key is gone, any algorithm may take it.
	if d := decision(t, s, 5000, OpToken, "k", 5, 1, 1000, 1); !d.Allowed {
		t.Errorf("token bucket on an expired sliding key: %+v", d)
	}
}

func TestDelExistsFlushDBSize(t *testing.T) {
	s := NewShard()
	for _, k := range []string{"a", "b", "c"} {
		decision(t, s, 1000, OpFixed, k, 5, 1000, 0, 1)
	}
	if n := apply(s, 1000, OpDBSize, "").Int; n != 3 {
		t.Fatalf("DBSIZE %d", n)
	}
	if r := apply(s, 1000, OpDel, "b"); r.Int != 1 {
		t.Fatalf("DEL existing: %d", r.Int)
	}
	if r := apply(s, 1000, OpDel, "b"); r.Int != 0 {
		t.Fatalf("DEL missing: %d", r.Int)
	}
	// Deleting is a reset: the full budget is back.
	if d := decision(t, s, 1000, OpFixed, "b", 5, 1000, 0, 5); !d.Allowed {
		t.Fatalf("after DEL: %+v", d)
	}
	apply(s, 1000, OpFlush, "")
	if n := apply(s, 1000, OpDBSize, "").Int; n != 0 {
		t.Fatalf("DBSIZE after flush %d", n)
	}
}

func TestSweepReclaimsExpiredKeys(t *testing.T) {
	s := NewShard()
	for i := range 1000 {
		decision(t, s, 1000, OpFixed, string(rune('a'+i%26))+string(rune(i)), 5, 1000, 0, 1)
	}
	if s.Stats().Keys != 1000 {
		t.Fatalf("keys %d", s.Stats().Keys)
	}
	held := s.Stats().Bytes
	apply(s, 2000, OpSweep, "", 10_000)
	if st := s.Stats(); st.Keys != 0 || len(s.keys.params.ids) != 0 || s.keys.nLong != 0 {
		t.Fatalf("after the sweep: %+v, %d parameter sets", st, len(s.keys.params.ids))
	}
	// Freed records are reused before the slice grows: the memory held (the
	// arrays' capacity, which the estimate counts) does not grow.
	for i := range 1000 {
		decision(t, s, 3000, OpFixed, "again"+string(rune(i)), 5, 1000, 0, 1)
	}
	if s.keys.records.len() != 1000 || s.Stats().Bytes != held {
		t.Fatalf("records %d (want 1000), bytes %d (want %d)", s.keys.records.len(), s.Stats().Bytes, held)
	}
}

func TestScanVisitsEveryKeyOnce(t *testing.T) {
	s := NewShard()
	want := []string{}
	for i := range 250 {
		k := "key:" + string(rune('A'+i%50)) + string(rune('0'+i/50))
		want = append(want, k)
		op := OpSliding
		if i%5 == 0 {
			op = OpToken
		}
		apply(s, 1000, op, k, 5, 1, 1000, 1)
	}
	var got []string
	cursor := int64(0)
	for {
		r := apply(s, 1000, OpScan, "", cursor, 7, 0)
		got = append(got, r.Keys...)
		if r.Cursor == 0 {
			break
		}
		cursor = int64(r.Cursor)
	}
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("scan returned %d keys, want %d", len(got), len(want))
	}
	r := apply(s, 1000, OpScan, "", 0, 1000, int64(KindToken))
	if len(r.Keys) != 50 {
		t.Fatalf("TYPE filter returned %d keys, want 50", len(r.Keys))
	}
}

func TestInfoDescribesEveryKind(t *testing.T) {
	s := NewShard()
	cases := []struct {
		op    Op
		args  []int64
		field string
		want  int64
	}{
		{OpSliding, []int64{10, 1000, 0, 3}, "current_count", 3},
		{OpFixed, []int64{10, 1000, 0, 3}, "count", 3},
		{OpLog, []int64{10, 1000, 0, 3}, "count", 3},
		{OpToken, []int64{10, 1, 1000, 3}, "tokens", 7},
		{OpLeaky, []int64{10, 1, 1000, 3}, "level", 3},
		{OpGCRA, []int64{9, 1, 1000, 3}, "tat_ms", 1000 + 3000},
		{OpThrottle, []int64{9, 1, 1, 3}, "tat_ns", (1000 + 3000) * 1_000_000},
	}
	for i, c := range cases {
		key := string(rune('a' + i))
		apply(s, 1000, c.op, key, c.args...)
		r := apply(s, 1000, OpInfo, key)
		if r.Type != ResFields || r.Fields[0].Text != c.op.kind().String() {
			t.Fatalf("%v: %+v", c.op, r)
		}
		found := false
		for _, f := range r.Fields {
			if f.Name == c.field {
				found = true
				if f.Int != c.want {
					t.Errorf("%v %s = %d, want %d", c.op, c.field, f.Int, c.want)
				}
			}
		}
		if !found {
			t.Errorf("%v has no %s: %+v", c.op, c.field, r.Fields)
		}
	}
	if r := apply(s, 1000, OpInfo, "missing"); r.Type != ResNil {
		t.Errorf("INFO of a missing key: %+v", r)
	}
}

func TestClockIsMonotonicUntilSet(t *testing.T) {
	s := NewShard()
	decision(t, s, 10_000, OpFixed, "k", 1, 1000, 0, 1)
	// An earlier time is raised to the latest one: still the same window.
	if d := decision(t, s, 5_000, OpFixed, "k", 1, 1000, 0, 1); d.Allowed || d.RetryAfter != 1000 {
		t.Fatalf("earlier time: %+v", d)
	}
	apply(s, 0, OpSetClock, "", 5_000)
	if st := s.Stats(); st.Now != 5_000 {
		t.Fatalf("clock %d after OpSetClock", st.Now)
	}
}

func TestParameterChangeTakesEffectAtOnce(t *testing.T) {
	s := NewShard()
	for range 5 {
		decision(t, s, 1000, OpSliding, "k", 10, 60_000, 0, 1)
	}
	if d := decision(t, s, 1000, OpSliding, "k", 5, 60_000, 0, 1); d.Allowed || d.Remaining != 0 {
		t.Fatalf("lowered limit: %+v", d)
	}
	if d := decision(t, s, 1000, OpSliding, "k", 20, 60_000, 0, 1); !d.Allowed || d.Remaining != 14 {
		t.Fatalf("raised limit: %+v", d)
	}
}
