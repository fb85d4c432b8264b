package engine

import "testing"

// watchRead is WATCH's read of key's fingerprint at now.
func watchRead(s *Shard, now int64, key string) string {
	return run(s, now, Command{Op: OpWatch, Key: []byte(key), Args: [4]int64{WatchRead}})[0].Text
}

// guard is EXEC's guard of key, expecting fp, over the n commands after it.
func guard(key, fp string, n int64) Command {
	return Command{Op: OpWatch, Key: []byte(key), Value: []byte(fp), Args: [4]int64{WatchGuard, n}}
}

// A guard applies the transaction after it when its key still has the
// fingerprint WATCH read, and skips it whole (null arrays) when not: a
// change of value, of expiry, a deletion, an expiry passing, a key created.
// Commands after the guarded ones apply either way.
func TestWatchGuards(t *testing.T) {
	const t0 = 1_700_000_000_000
	set := func(key, v string, args ...int64) Command {
		c := Command{Op: OpSet, Key: []byte(key), Value: []byte(v)}
		copy(c.Args[:], args)
		return c
	}
	incr := Command{Op: OpIncrBy, Key: []byte("k"), Args: [4]int64{1}}
	steps := []struct {
		name   string
		before []Command // applied between WATCH and EXEC, at t0+1
		at     int64     // EXEC's time
		holds  bool
	}{
		{"unchanged", nil, t0 + 10, true},
		{"another key written", []Command{set("other", "1")}, t0 + 10, true},
		{"value changed", []Command{set("k", "2")}, t0 + 10, false},
		{"set to the same value and expiry", []Command{set("k", "1", t0+60_000, ExpiryAbsolute)}, t0 + 10, true},
		{"expiry changed", []Command{{Op: OpExpire, Key: []byte("k"), Args: [4]int64{5000, ExpiryRelative}}}, t0 + 10, false},
		{"deleted", []Command{{Op: OpDel, Key: []byte("k")}}, t0 + 10, false},
		{"expired", nil, t0 + 60_000, false},
		{"an absent key created", []Command{set("k", "new")}, t0 + 10, false},
	}
	for _, st := range steps {
		s := NewShard()
		fpLen := FingerprintLen
		if st.name == "an absent key created" {
			fpLen = 0
		} else {
			run(s, t0, set("k", "1", t0+60_000, ExpiryAbsolute))
		}
		fp := watchRead(s, t0, "k")
		if len(fp) != fpLen {
			t.Fatalf("%s: fingerprint of %d bytes, want %d", st.name, len(fp), fpLen)
		}
		run(s, t0+1, st.before...)
		got := run(s, st.at, guard("k", fp, 1), incr, set("after", "x"))
		want := [3]ResultType{ResOK, ResInt, ResOK}
		if !st.holds {
			want = [3]ResultType{ResNilArray, ResNilArray, ResOK}
		}
		if got[0].Type != want[0] || got[1].Type != want[1] || got[2].Type != want[2] {
			t.Errorf("%s: %v %v %v, want %v", st.name, got[0].Type, got[1].Type, got[2].Type, want)
		}
	}
}

// Every guard of a transaction guards what follows it: the first that
// fails skips the later guards and the commands; a guard that read an
// absent key holds while the key stays absent. Inspect reads the same
// fingerprint as the log, and reclaims nothing.
func TestWatchSeveralKeysAndInspect(t *testing.T) {
	const t0 = 1_700_000_000_000
	s := NewShard()
	run(s, t0, Command{Op: OpSet, Key: []byte("a"), Value: []byte("1")}, Command{Op: OpSet, Key: []byte("e"), Value: []byte("x"), Args: [4]int64{10, ExpiryRelative}})
	fa, fb := watchRead(s, t0, "a"), watchRead(s, t0, "b")
	if in := s.Inspect(&Command{Op: OpWatch, Key: []byte("a")}); in.Type != ResBulk || in.Text != fa {
		t.Fatalf("Inspect read %+v, the log %q", in, fa)
	}
	s.now = t0 + 20 // the shard's time passes e's expiry without a batch
	if in := s.Inspect(&Command{Op: OpWatch, Key: []byte("e")}); in.Text != "" || s.keys.find([]byte("e")) < 0 {
		t.Fatalf("Inspect of an expired key read %q, or reclaimed it", in.Text)
	}
	if fb != "" {
		t.Fatalf("absent key's fingerprint %q", fb)
	}
	incr := Command{Op: OpIncrBy, Key: []byte("a"), Args: [4]int64{5}}
	got := run(s, t0+30, guard("a", fa, 2), guard("b", fb, 1), incr)
	if got[0].Type != ResOK || got[1].Type != ResOK || got[2].Int != 6 {
		t.Fatalf("holding guards: %+v", got)
	}
	got = run(s, t0+40, guard("b", fb, 2), guard("a", fa, 1), incr)
	if got[0].Type != ResOK || got[1].Type != ResNilArray || got[2].Type != ResNilArray {
		t.Fatalf("a's changed: %+v", got)
	}
	got = run(s, t0+50, guard("a", fa, 2), guard("b", fb, 1), incr)
	if got[0].Type != ResNilArray || got[1].Type != ResNilArray || got[2].Type != ResNilArray {
		t.Fatalf("first guard fails: %+v", got)
	}
	if v := run(s, t0+60, Command{Op: OpGet, Key: []byte("a")})[0]; v.Int != 6 {
		t.Fatalf("a is %+v after aborted transactions, want 6", v)
	}
}
