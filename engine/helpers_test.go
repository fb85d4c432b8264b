package engine

import (
	"slices"
	"testing"
)

// apply runs one command on s at now and returns its result.
func apply(s *Shard, now int64, op Op, key string, args ...int64) Result {
	c := Command{Op: op, Key: []byte(key)}
	copy(c.Args[:], args)
	out := make([]Result, 1)
	s.Apply(now, []Command{c}, out)
	return out[0]
}

// decision runs a decision command and fails the test on anything else.
func decision(t *testing.T, s *Shard, now int64, op Op, key string, args ...int64) Decision {
	t.Helper()
	r := apply(s, now, op, key, args...)
	if r.Type != ResDecision {
		t.Fatalf("%v %s at %d: result %+v, want a decision", op, key, now, r)
	}
	return r.Decision
}

// burst sends n cost-1 decisions at now and counts the grants; it also
// returns the first refusal's RetryAfter (0 if none).
func burst(t *testing.T, s *Shard, now int64, n int, op Op, key string, params ...int64) (allowed int, firstRetry int64) {
	t.Helper()
	args := append(append([]int64{}, params...), make([]int64, 3-len(params))...)
	args = append(args, 1)
	for range n {
		d := decision(t, s, now, op, key, args...)
		if d.Allowed {
			allowed++
		} else if firstRetry == 0 {
			firstRetry = d.RetryAfter
		}
	}
	return allowed, firstRetry
}

// run applies commands as one batch at now and returns their results.
func run(s *Shard, now int64, cmds ...Command) []Result {
	out := make([]Result, len(cmds))
	s.Apply(now, cmds, out)
	return out
}

// cmd builds a command; args fill Args from the start.
func cmd(op Op, key string, args ...int64) Command {
	c := Command{Op: op, Key: []byte(key)}
	copy(c.Args[:], args)
	return c
}

// extra returns the value of a decision's extra field name, failing the
// test when it has none.
func extra(t *testing.T, r Result, name string) int64 {
	t.Helper()
	for _, e := range r.Extras[:r.NExtras] {
		if e.Name == name {
			return e.Value
		}
	}
	t.Fatalf("result %+v has no %s", r, name)
	return 0
}

// checkCounters recounts what the keyspace keeps running counts of and
// fails the test when they disagree.
func checkCounters(t *testing.T, s *Shard) {
	t.Helper()
	ks := &s.keys
	live, persistent, logLen := 0, 0, int64(0)
	for i := range int32(ks.records.len()) {
		if ks.records.at(i).params == 0 {
			continue
		}
		live++
		if ks.persists(int32(i)) {
			persistent++
		}
	}
	for i := range int32(ks.records.len()) {
		logLen += int64(len(ks.log(i)))
	}
	if live != ks.live || persistent != ks.persistent || logLen != ks.logLen {
		t.Fatalf("counters: live %d (counted %d), persistent %d (%d), log entries %d (%d)",
			ks.live, live, ks.persistent, persistent, ks.logLen, logLen)
	}
	var shareLen int64
	for i, set := range ks.shareSets() {
		if ks.kind(i) != KindShare || set.charged != sharesBytes(set.holders) {
			t.Fatalf("record %d: holders of a %v key, charged %d for %d", i, ks.kind(i), set.charged, sharesBytes(set.holders))
		}
		shareLen += set.charged
	}
	if shareLen != ks.shareLen {
		t.Fatalf("share keys charged %d, counted %d", ks.shareLen, shareLen)
	}
	var globalLen int64
	for i, e := range ks.globals {
		if ks.kind(i) != KindGlobal || e.charged != globalBytes(e.state) {
			t.Fatalf("record %d: global state of a %v key, charged %d for %d", i, ks.kind(i), e.charged, globalBytes(e.state))
		}
		globalLen += e.charged
	}
	if globalLen != ks.globalLen {
		t.Fatalf("global keys charged %d, counted %d", ks.globalLen, globalLen)
	}
	var resBytes int64
	for seq, r := range s.res.byID {
		resBytes += int64(len(r.key)) + reservationBytes
		if !slices.Contains(s.res.byKey[r.key], seq) {
			t.Fatalf("reservation %d is not indexed under its key %q", seq, r.key)
		}
	}
	if resBytes != s.res.bytes {
		t.Fatalf("reservations charged %d, counted %d", s.res.bytes, resBytes)
	}
}
