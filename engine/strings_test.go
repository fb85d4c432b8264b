package engine

import (
	"errors"
	"math"
	"testing"

	"github.com/rlserver/rlserver/internal/calendar"
)

func set(s *Shard, now int64, key, value string, flags Flags, expiry, mode int64) Result {
	return run(s, now, Command{Op: OpSet, Key: []byte(key), Value: []byte(value), Flags: flags, Args: [4]int64{expiry, mode}})[0]
}

func expire(s *Shard, now int64, key string, flags Flags, t, mode int64) int64 {
	return run(s, now, Command{Op: OpExpire, Key: []byte(key), Flags: flags, Args: [4]int64{t, mode}})[0].Int
}

// envoyproxy/ratelimit's fixed window: INCRBY then EXPIRE, pipelined.
func TestIncrExpireFixedWindow(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	for i := int64(1); i <= 3; i++ {
		out := run(s, now, cmd(OpIncrBy, "rl_api_1000", 1), cmd(OpExpire, "rl_api_1000", 60_000, ExpiryRelative))
		if out[0].Type != ResInt || out[0].Int != i || out[1].Int != 1 {
			t.Fatalf("INCRBY+EXPIRE %d: %+v", i, out)
		}
	}
	if r := apply(s, now+1000, OpPTTL, "rl_api_1000"); r.Int != 59_000 {
		t.Fatalf("PTTL %d", r.Int)
	}
	if r := apply(s, now+1000, OpIncrBy, "rl_api_1000", 5); r.Int != 8 {
		t.Fatalf("INCRBY keeps the value: %+v", r)
	}
	if r := apply(s, now+1000, OpPTTL, "rl_api_1000"); r.Int != 59_000 {
		t.Fatalf("INCRBY kept the expiry? PTTL %d", r.Int)
	}
	if r := apply(s, now+60_000, OpGet, "rl_api_1000"); r.Type != ResNil {
		t.Fatalf("GET after the expiry: %+v", r)
	}
	if r := apply(s, now+60_000, OpIncrBy, "rl_api_1000", -1); r.Int != -1 {
		t.Fatalf("DECR on a new key: %+v", r)
	}
	if r := apply(s, now+60_000, OpPTTL, "rl_api_1000"); r.Int != -1 {
		t.Fatalf("PTTL of a string without expiry: %d, want -1", r.Int)
	}
	if r := apply(s, now+60_000, OpType, "rl_api_1000"); r.Text != "string" {
		t.Fatalf("TYPE %q", r.Text)
	}
}

func TestSetOptions(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	if r := set(s, now, "k", "v1", FlagNX, 0, ExpiryNone); r.Type != ResOK {
		t.Fatalf("SET NX on no key: %+v", r)
	}
	if r := set(s, now, "k", "v2", FlagNX, 0, ExpiryNone); r.Type != ResNil {
		t.Fatalf("SET NX on a key: %+v", r)
	}
	if r := set(s, now, "other", "v", FlagXX, 0, ExpiryNone); r.Type != ResNil || apply(s, now, OpExists, "other").Int != 0 {
		t.Fatalf("SET XX on no key: %+v", r)
	}
	if r := set(s, now, "k", "v3", FlagXX|FlagGet, 5000, ExpiryRelative); r.Type != ResBulk || r.Text != "v1" {
		t.Fatalf("SET XX GET: %+v", r)
	}
	if r := apply(s, now, OpPTTL, "k"); r.Int != 5000 {
		t.Fatalf("SET PX: PTTL %d", r.Int)
	}
	set(s, now, "k", "42", FlagKeepTTL, 0, ExpiryNone)
	if r := apply(s, now+1000, OpGet, "k"); r.Type != ResIntBulk || r.Int != 42 {
		t.Fatalf("GET of an integer: %+v", r)
	}
	if r := apply(s, now+1000, OpPTTL, "k"); r.Int != 4000 {
		t.Fatalf("KEEPTTL: PTTL %d", r.Int)
	}
	set(s, now, "k", "x", 0, 0, ExpiryNone)
	if r := apply(s, now+1000, OpPTTL, "k"); r.Int != -1 {
		t.Fatalf("SET without an expiry clears it: PTTL %d", r.Int)
	}
	if r := apply(s, now, OpIncrBy, "k", 1); !errors.Is(r.Err, ErrNotInteger) {
		t.Fatalf("INCR of %q: %+v", "x", r)
	}
	set(s, now, "k", "v", 0, now-1, ExpiryAbsolute)
	if apply(s, now, OpExists, "k").Int != 0 {
		t.Fatal("SET PXAT in the past left the key")
	}
}

func TestStringsAndLimiterKeys(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	decision(t, s, now, OpSliding, "lim", 5, 1000, 0, 1)
	for _, op := range []Op{OpGet, OpIncrBy} {
		if r := apply(s, now, op, "lim", 1); !errors.Is(r.Err, ErrWrongType) {
			t.Fatalf("op %d on a limiter: %+v", op, r)
		}
	}
	if n := expire(s, now, "lim", 0, 10_000, ExpiryRelative); n != 0 {
		t.Fatal("EXPIRE set a limiter's expiry, which follows from its state")
	}
	if r := set(s, now, "lim", "v", FlagGet, 0, ExpiryNone); !errors.Is(r.Err, ErrWrongType) {
		t.Fatalf("SET GET on a limiter: %+v", r)
	}
	// Plain SET replaces a key of any type, as in Redis.
	set(s, now, "lim", "v", 0, 0, ExpiryNone)
	if r := apply(s, now, OpType, "lim"); r.Text != "string" {
		t.Fatalf("TYPE after SET: %q", r.Text)
	}
	if d := decision(t, s, now, OpToken, "s", 5, 1, 1000, 1); !d.Allowed {
		t.Fatal(d)
	}
	set(s, now, "s", "1", 0, 0, ExpiryNone)
	if r := apply(s, now, OpToken, "s", 5, 1, 1000, 1); !errors.Is(r.Err, ErrWrongType) {
		t.Fatalf("RL.TOKEN on a string: %+v", r)
	}
}

func TestIncrOverflow(t *testing.T) {
	s := NewShard()
	set(s, 0, "k", "9223372036854775806", 0, 0, ExpiryNone)
	if r := apply(s, 0, OpIncrBy, "k", 1); r.Int != math.MaxInt64 {
		t.Fatalf("INCR to MaxInt64: %+v", r)
	}
	if r := apply(s, 0, OpIncrBy, "k", 1); !errors.Is(r.Err, ErrOverflow) {
		t.Fatalf("INCR past MaxInt64: %+v", r)
	}
	set(s, 0, "m", "-9223372036854775808", 0, 0, ExpiryNone)
	if r := apply(s, 0, OpIncrBy, "m", -1); !errors.Is(r.Err, ErrOverflow) {
		t.Fatalf("DECR past MinInt64: %+v", r)
	}
}

func TestExpireConditions(t *testing.T) {
	const now = 1_000_000
	for _, tc := range []struct {
		name    string
		current int64 // ms from now, 0: none
		flags   Flags
		ms      int64
		want    int64
	}{
		{"plain", 0, 0, 5000, 1},
		{"NX without expiry", 0, FlagNX, 5000, 1},
		{"NX with expiry", 1000, FlagNX, 5000, 0},
		{"XX without expiry", 0, FlagXX, 5000, 0},
		{"XX with expiry", 1000, FlagXX, 5000, 1},
		{"GT later", 1000, FlagGT, 5000, 1},
		{"GT earlier", 9000, FlagGT, 5000, 0},
		{"GT without expiry", 0, FlagGT, 5000, 0},
		{"LT earlier", 9000, FlagLT, 5000, 1},
		{"LT later", 1000, FlagLT, 5000, 0},
		{"LT without expiry", 0, FlagLT, 5000, 1},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := NewShard()
			mode := int64(ExpiryNone)
			if tc.current != 0 {
				mode = ExpiryRelative
			}
			set(s, now, "k", "v", 0, tc.current, mode)
			if got := expire(s, now, "k", tc.flags, tc.ms, ExpiryRelative); got != tc.want {
				t.Fatalf("EXPIRE: %d, want %d", got, tc.want)
			}
		})
	}
	s := NewShard()
	set(s, now, "k", "v", 0, 0, ExpiryNone)
	if expire(s, now, "k", 0, 0, ExpiryRelative) != 1 || apply(s, now, OpExists, "k").Int != 0 {
		t.Fatal("EXPIRE 0 must delete the key")
	}
	if expire(s, now, "k", 0, 1000, ExpiryRelative) != 0 {
		t.Fatal("EXPIRE on no key")
	}
	set(s, now, "p", "v", 0, 1000, ExpiryRelative)
	if expire(s, now, "p", 0, 0, ExpiryPersist) != 1 || apply(s, now, OpPTTL, "p").Int != -1 {
		t.Fatal("PERSIST")
	}
}

func TestParseInteger(t *testing.T) {
	for _, tc := range []struct {
		in string
		n  int64
		ok bool
	}{
		{"0", 0, true}, {"42", 42, true}, {"-7", -7, true},
		{"9223372036854775807", math.MaxInt64, true}, {"-9223372036854775808", math.MinInt64, true},
		{"9223372036854775808", 0, false}, {"-9223372036854775809", 0, false}, {"99999999999999999999", 0, false},
		{"", 0, false}, {"-", 0, false}, {"-0", 0, false}, {"01", 0, false}, {"+1", 0, false}, {" 1", 0, false}, {"1.0", 0, false},
	} {
		if n, ok := parseInteger([]byte(tc.in)); n != tc.n || ok != tc.ok {
			t.Errorf("parseInteger(%q) = %d, %v; want %d, %v", tc.in, n, ok, tc.n, tc.ok)
		}
	}
}

func TestStringsSurviveSnapshots(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	set(s, now, "text", "hello", 0, 5000, ExpiryRelative)
	set(s, now, "empty", "", 0, 0, ExpiryNone)
	apply(s, now, OpIncrBy, "n", -12)
	apply(s, now, OpAcquire, "lease", 3, 1000, 0, 1)
	apply(s, now, OpQuota, "quota", 3, int64(calendar.Weekly), -60_000, 1)
	apply(s, now, OpShape, "shape", 3, 1, 1000, 1)
	r, err := RestoreShard(s.AppendSnapshot(nil), SnapshotFormat)
	if err != nil {
		t.Fatal(err)
	}
	if r.digest() != s.digest() {
		t.Fatal("digest changed across a snapshot")
	}
	if g := apply(r, now, OpGet, "text"); g.Text != "hello" {
		t.Fatalf("GET after restore: %+v", g)
	}
	if g := apply(r, now, OpGet, "empty"); g.Type != ResBulk || g.Text != "" {
		t.Fatalf("GET of an empty string after restore: %+v", g)
	}
}
