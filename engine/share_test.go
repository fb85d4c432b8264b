package engine

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// shareReq is an RL.SHARE request with the command's defaults.
func shareReq(holder string, limit, window int64) ShareRequest {
	return ShareRequest{Holder: []byte(holder), Limit: limit, Window: window, Demand: UnknownDemand,
		TTL: DefaultShareTTL, Burst: min(DefaultShareBurst, window)}
}

// shareReply is RL.SHARE's reply, by name.
type shareReply struct{ rate, burst, ttl, seq, fair, holders int64 }

// share applies q on key at now and returns its reply, failing the test on
// anything else.
func share(t *testing.T, s *Shard, now int64, key string, q ShareRequest) shareReply {
	t.Helper()
	c := q.Command([]byte(key))
	if err := c.Check(); err != nil {
		t.Fatalf("RL.SHARE %+v: %v", q, err)
	}
	r := run(s, now, c)[0]
	if r.Type != ResRecord || len(r.Fields) != len(ShareReply) {
		t.Fatalf("RL.SHARE %s %+v at %d: %+v", key, q, now, r)
	}
	for j, f := range r.Fields {
		if f.Name != ShareReply[j] {
			t.Fatalf("field %d is %q, want %q", j, f.Name, ShareReply[j])
		}
	}
	f := r.Fields
	return shareReply{f[0].Int, f[1].Int, f[2].Int, f[3].Int, f[4].Int, f[5].Int}
}

// unshare applies RL.UNSHARE.
func unshare(s *Shard, now int64, key, holder string) Result {
	return run(s, now, Command{Op: OpUnshare, Key: []byte(key), Value: []byte(holder)})[0]
}

// info returns RL.INFO's fields of key by name.
func info(t *testing.T, s *Shard, now int64, key string) map[string]any {
	t.Helper()
	r := apply(s, now, OpInfo, key)
	if r.Type != ResFields {
		t.Fatalf("RL.INFO %s: %+v", key, r)
	}
	m := map[string]any{}
	for _, f := range r.Fields {
		if f.Text != "" {
			m[f.Name] = f.Text
		} else {
			m[f.Name] = f.Int
		}
	}
	return m
}

// committedOf adds up the committed rates of key's holders at now, from
// the shard's own state: what the invariant bounds.
func committedOf(s *Shard, key string, now int64) int64 {
	i := s.keys.find([]byte(key))
	if i < 0 || s.keys.shareSet(i) == nil {
		return 0
	}
	_, c := liveShares(s.keys.shareSet(i).holders, now)
	return c
}

// Two holders of unknown demand share 1000 units a second: the first takes
// everything, the second nothing until the first has acknowledged its
// smaller grant; then each holds half, and never do their committed rates
// add up to more than the limit.
func TestShareSplitsTheLimit(t *testing.T) {
	s := NewShard()
	const now, key = 1_700_000_000_000, "api"
	seq0 := int64(now) << leaseIDShift
	a, b := shareReq("a", 1000, 1000), shareReq("b", 1000, 1000)
	steps := []struct {
		name      string
		at        int64
		q         *ShareRequest
		ack       int64
		want      shareReply
		committed int64
	}{
		{"a alone: everything", 0, &a, 0, shareReply{1000, 100, 10000, seq0, 1000, 1}, 1000},
		{"b: half is its share, none is free", 0, &b, 0, shareReply{0, 0, 10000, seq0 + 1, 500, 2}, 1000},
		{"a renews: half, its whole grant still committed", 10, &a, seq0, shareReply{500, 50, 10000, (now + 10) << leaseIDShift, 500, 2}, 1000},
		{"b renews: a has not acknowledged", 20, &b, seq0 + 1, shareReply{0, 0, 10000, (now + 20) << leaseIDShift, 500, 2}, 1000},
		{"a acknowledges its half", 30, &a, (now + 10) << leaseIDShift, shareReply{500, 50, 10000, (now + 30) << leaseIDShift, 500, 2}, 500},
		{"b gets its half", 40, &b, (now + 20) << leaseIDShift, shareReply{500, 50, 10000, (now + 40) << leaseIDShift, 500, 2}, 1000},
	}
	for _, st := range steps {
		q := *st.q
		q.Ack = st.ack
		if got := share(t, s, now+st.at, key, q); got != st.want {
			t.Fatalf("%s: %+v, want %+v", st.name, got, st.want)
		}
		if c := committedOf(s, key, now+st.at); c != st.committed {
			t.Fatalf("%s: %d committed, want %d", st.name, c, st.committed)
		}
	}
	got := info(t, s, now+40, key)
	want := map[string]any{"algorithm": "rl.share", "limit": int64(1000), "window_ms": int64(1000), "holders": int64(2),
		"committed": int64(1000), "free": int64(0), "ttl_ms": int64(10000)}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("RL.INFO %s = %v, want %v (%v)", k, got[k], v, got)
		}
	}
	if len(got) != len(want) {
		t.Errorf("RL.INFO has %d fields, want %d: %v", len(got), len(want), got)
	}
	if r := apply(s, now+40, OpType, key); r.Text != "rl.share" {
		t.Errorf("TYPE = %q", r.Text)
	}
}

// Shares follow demand: max-min fair when the holders ask for more than
// the limit; what they do not ask for handed out up to twice their demand
// (or an equal split); an unknown demand takes what the others leave.
func TestFairShares(t *testing.T) {
	for _, tc := range []struct {
		limit   int64
		demands []int64
		want    []int64
	}{
		{1000, []int64{900, 300, 100}, []int64{600, 300, 100}},
		{1000, []int64{600, 100, 100}, []int64{667, 167, 166}},
		{1000, []int64{UnknownDemand, 100, 100}, []int64{800, 100, 100}},
		{1000, []int64{UnknownDemand, UnknownDemand, 100}, []int64{450, 450, 100}},
		{1000, []int64{10, 10, 10}, []int64{334, 333, 333}},
		{1000, []int64{0, 0}, []int64{500, 500}},
		{1000, []int64{100, 50}, []int64{500, 500}},
		{10_000, []int64{100, 50, 3000, 10}, []int64{1810, 1760, 4710, 1720}},
		{10_000, []int64{100, 2000}, []int64{5000, 5000}},
		{3, []int64{UnknownDemand, UnknownDemand, UnknownDemand, UnknownDemand}, []int64{1, 1, 1, 0}},
		{1, []int64{5, 5}, []int64{1, 0}},
		{MaxCount, []int64{MaxCount, MaxCount, UnknownDemand}, []int64{MaxCount/3 + 1, MaxCount / 3, MaxCount / 3}},
	} {
		n := len(tc.demands)
		holders := make([]shareHolder, n)
		for j, d := range tc.demands {
			holders[j] = shareHolder{id: string(rune('a' + j)), demand: d}
		}
		got := make([]int64, n)
		fairShares(tc.limit, holders, make([]int64, n), make([]uint64, n), got, make([]int64, n))
		var sum int64
		for j := range got {
			sum += got[j]
			if got[j] != tc.want[j] {
				t.Errorf("limit %d, demands %v: shares %v, want %v", tc.limit, tc.demands, got, tc.want)
				break
			}
		}
		if sum > tc.limit {
			t.Errorf("limit %d, demands %v: shares %v add up to %d", tc.limit, tc.demands, got, sum)
		}
	}
}

// A holder's ACK frees its reservations older than the grant it names,
// never that grant itself, not even when it names a later seq; UNSHARE
// frees them all at once; expiry frees them too, and a holder left
// without one lapses.
func TestShareAckUnshareAndExpiry(t *testing.T) {
	s := NewShard()
	const now, key = 1_000_000, "k"
	big := shareReq("big", 100, 1000)
	first := share(t, s, now, key, big)
	other := share(t, s, now, key, shareReq("other", 100, 1000))
	if first.rate != 100 || other.rate != 0 {
		t.Fatalf("grants %+v %+v", first, other)
	}
	big.Demand = 10
	second := share(t, s, now+1, key, big) // its demand: other's, unknown, takes the rest
	if second.rate != 10 || second.fair != 10 || committedOf(s, key, now+1) != 100 {
		t.Fatalf("second grant %+v, committed %d", second, committedOf(s, key, now+1))
	}
	big.Ack = second.seq + 1_000_000 // beyond its latest: counts as the latest
	share(t, s, now+2, key, big)
	if c := committedOf(s, key, now+2); c != 10 {
		t.Fatalf("after an ACK beyond the latest grant: %d committed, want 10 (the latest kept)", c)
	}
	if st := s.Stats(); st.ShareReturned != 90 || st.ShareGrants != 4 || st.ShareHolders != 2 || st.ShareKeys != 1 || st.ShareCommitted != 10 {
		t.Fatalf("stats %+v", st)
	}
	if r := unshare(s, now+3, key, "big"); r.Type != ResInt || r.Int != 1 {
		t.Fatalf("RL.UNSHARE: %+v", r)
	}
	if r := unshare(s, now+3, key, "big"); r.Int != 0 {
		t.Fatalf("RL.UNSHARE again: %+v", r)
	}
	if got := share(t, s, now+4, key, shareReq("other", 100, 1000)); got.rate != 100 || got.holders != 1 {
		t.Fatalf("other alone: %+v", got)
	}
	// Every grant of other's expires at now+4+10000; the key with it.
	if got := info(t, s, now+4, key); got["ttl_ms"] != int64(DefaultShareTTL) {
		t.Fatalf("RL.INFO %v", got)
	}
	if r := apply(s, now+4+DefaultShareTTL, OpExists, key); r.Int != 0 {
		t.Fatal("the key outlived its grants")
	}
	if st := s.Stats(); st.ShareLapsed != 1 || st.ShareKeys != 0 || st.ShareReturned != 100 {
		t.Fatalf("stats after the lapse: %+v", st)
	}
	// A key that comes back never repeats a seq, even in the millisecond
	// of its last one.
	last := share(t, s, now+DefaultShareTTL+4, key, shareReq("x", 100, 1000))
	unshare(s, now+DefaultShareTTL+4, key, "x")
	if again := share(t, s, now+DefaultShareTTL+4, key, shareReq("x", 100, 1000)); again.seq <= last.seq {
		t.Fatalf("seq %d after %d", again.seq, last.seq)
	}
}

// A holder that lapses is dropped: its share goes to those left.
func TestShareLapsedHolderFreesItsShare(t *testing.T) {
	s := NewShard()
	const now, key = 1_000_000, "k"
	short := shareReq("short", 90, 1000)
	short.TTL = 100
	share(t, s, now, key, short)
	long := shareReq("long", 90, 1000)
	if got := share(t, s, now, key, long); got.rate != 0 || got.fair != 45 {
		t.Fatalf("long beside short: %+v", got)
	}
	if got := share(t, s, now+100, key, long); got.rate != 90 || got.fair != 90 || got.holders != 1 {
		t.Fatalf("long once short lapsed: %+v", got)
	}
	if st := s.Stats(); st.ShareLapsed != 1 {
		t.Fatalf("stats %+v", st)
	}
}

// RL.SHARE and RL.UNSHARE refuse keys of other kinds, and their
// parameters out of bounds.
func TestShareErrors(t *testing.T) {
	s := NewShard()
	decision(t, s, 1000, OpSliding, "k", 5, 1000, 0, 1)
	if r := run(s, 1000, func() Command { q := shareReq("h", 5, 1000); return q.Command([]byte("k")) }())[0]; !errors.Is(r.Err, ErrWrongType) {
		t.Fatalf("RL.SHARE on a sliding key: %+v", r)
	}
	if r := unshare(s, 1000, "k", "h"); !errors.Is(r.Err, ErrWrongType) {
		t.Fatalf("RL.UNSHARE on a sliding key: %+v", r)
	}
	if r := unshare(s, 1000, "none", "h"); r.Type != ResInt || r.Int != 0 {
		t.Fatalf("RL.UNSHARE on no key: %+v", r)
	}
	share(t, s, 1000, "s", shareReq("h", 5, 1000))
	if r := apply(s, 1000, OpSliding, "s", 5, 1000, 0, 1); !errors.Is(r.Err, ErrWrongType) {
		t.Fatalf("RL.SLIDING on a share key: %+v", r)
	}
	for _, tc := range []struct {
		edit func(q *ShareRequest)
		want string
	}{
		{func(q *ShareRequest) { q.Holder = nil }, "holder must be 1 to 256 bytes long"},
		{func(q *ShareRequest) { q.Holder = make([]byte, 257) }, "holder must be 1 to 256 bytes long"},
		{func(q *ShareRequest) { q.Limit = 0 }, "limit must be an integer from 1 to 1000000000000000"},
		{func(q *ShareRequest) { q.Window = 0 }, "window_ms must be an integer from 1 to 1000000000000"},
		{func(q *ShareRequest) { q.Demand = -2 }, "demand must be an integer from 0 to 1000000000000000"},
		{func(q *ShareRequest) { q.TTL = 0 }, "ttl must be an integer from 1 to 86400000"},
		{func(q *ShareRequest) { q.Burst = 1001 }, "burst must be an integer from 0 to 1000 (window_ms)"},
		{func(q *ShareRequest) { q.Ack = -1 }, "ack must be an integer from 1 to 9223372036854775807"},
	} {
		q := shareReq("h", 5, 1000)
		tc.edit(&q)
		c := q.Command([]byte("s"))
		if err := c.Check(); err == nil || err.Error() != tc.want || !errors.Is(err, ErrParam) {
			t.Errorf("%+v: %v, want %q", q, err, tc.want)
		}
	}
	if err := (Command{Op: OpUnshare, Key: []byte("s")}).Check(); err == nil {
		t.Error("RL.UNSHARE without a holder passes Check")
	}
	if err := (Command{Op: OpShare, Key: []byte("s"), Value: []byte{0xff}, Args: [4]int64{5, 1000, 1}}).Check(); err == nil {
		t.Error("a malformed RL.SHARE value passes Check")
	}
}

// A key holds at most MaxShareHolders holders; the ones it holds go on
// renewing.
func TestShareHoldersBounded(t *testing.T) {
	s := NewShard()
	share(t, s, 1000, "k", shareReq(string(rune(0x4e00)), MaxCount, 1000))
	i := s.keys.find([]byte("k"))
	holders := s.keys.shares(i, 1000)
	for j := 1; j < MaxShareHolders; j++ {
		holders = append(holders, shareHolder{id: string(rune(0x4e00 + j)), demand: UnknownDemand,
			res: []reservation{{seq: 1000<<leaseIDShift - 1, until: 1000 + DefaultShareTTL}}})
	}
	s.keys.setShares(i, holders, s.keys.paramsOf(i), s.keys.records.at(i).state[0])
	q := shareReq("one more", MaxCount, 1000)
	c := q.Command([]byte("k"))
	if r := run(s, 1000, c)[0]; r.Err == nil || r.Err.Error() != "a share key has at most 1000 holders" {
		t.Fatalf("holder %d: %+v", MaxShareHolders+1, r)
	}
	if got := share(t, s, 1001, "k", shareReq(string(rune(0x4e00)), MaxCount, 1000)); got.holders != MaxShareHolders {
		t.Fatalf("renewal: %+v", got)
	}
}

// A holder that never acknowledges keeps at most maxReservations, each
// merged one covering what it replaced: what it has committed never
// shrinks by the merging.
func TestShareReservationsBounded(t *testing.T) {
	s := NewShard()
	rng := rand.New(rand.NewPCG(1, 1))
	q := shareReq("h", 1000, 1000)
	for step := range int64(200) {
		q.Limit, q.TTL = 100+rng.Int64N(900), 1000+rng.Int64N(5000)
		before := committedOf(s, "k", 1000+step)
		got := share(t, s, 1000+step, "k", q)
		after := committedOf(s, "k", 1000+step)
		if after < max(before, got.rate) {
			t.Fatalf("step %d: committed %d after %d and a grant of %d", step, after, before, got.rate)
		}
		if n := len(s.keys.shareSet(s.keys.find([]byte("k"))).holders[0].res); n > maxReservations {
			t.Fatalf("step %d: %d reservations", step, n)
		}
	}
}

// A changed window converts the rates granted under the old one, rounding
// up; a lowered limit grants nothing new until the committed rates are
// back under it.
func TestShareParameterChanges(t *testing.T) {
	s := NewShard()
	const now = 1_000_000
	share(t, s, now, "k", shareReq("a", 100, 1000)) // 100 a second
	if got := share(t, s, now, "k", shareReq("b", 100, 3000)); got.rate != 0 || committedOf(s, "k", now) != 300 {
		t.Fatalf("b under a 3 s window: %+v, committed %d, want 0 and a's 300 per 3 s", got, committedOf(s, "k", now))
	}
	if got := share(t, s, now, "k", shareReq("b", 400, 3000)); got.rate != 100 || committedOf(s, "k", now) != 400 {
		t.Fatalf("b under 400 per 3 s: %+v", got)
	}
	if got := share(t, s, now+1, "k", shareReq("c", 200, 3000)); got.rate != 0 || committedOf(s, "k", now+1) != 400 {
		t.Fatalf("c under a lowered limit: %+v, committed %d", got, committedOf(s, "k", now+1))
	}
	if got := info(t, s, now+1, "k"); got["free"] != int64(0) || got["committed"] != int64(400) || got["limit"] != int64(200) {
		t.Fatalf("RL.INFO %v", got)
	}
}

func TestShareBurst(t *testing.T) {
	for _, tc := range []struct{ rate, burst, window, want int64 }{
		{0, 100, 1000, 0}, {1, 100, 1000, 1}, {1000, 100, 1000, 100}, {999, 100, 1000, 99},
		{5, 0, 1000, 1}, {MaxCount, MaxDuration, MaxDuration, MaxCount}, {7, 10, 10, 7},
	} {
		if got := shareBurst(tc.rate, tc.burst, tc.window); got != tc.want {
			t.Errorf("shareBurst(%d, %d, %d) = %d, want %d", tc.rate, tc.burst, tc.window, got, tc.want)
		}
	}
}

// With steady demands and holders that renew in turn, each acknowledging
// its latest grant, every grant reaches its fair share at the second
// renewal after the holders registered. After a change of demand a holder
// whose share falls gets its new share at once, and commits only it once it
// has acknowledged it; a holder whose share rises gets it at its first
// renewal after every falling holder's second: the second renewal when it
// renews after them, the third when before.
func TestShareConverges(t *testing.T) {
	const limit, window = 1000, 1000
	demands := []int64{UnknownDemand, 400, 300, 100, 50}
	changed := []int64{UnknownDemand, 50, 300, 100, 600} // 1 falls, 4 rises
	for _, tc := range []struct {
		name   string
		order  []int
		within int
	}{
		{"risers renew after fallers", []int{0, 1, 2, 3, 4}, 2},
		{"risers renew before fallers", []int{4, 3, 2, 1, 0}, 3},
	} {
		s := NewShard()
		now := int64(1_000_000)
		seqs := make([]int64, len(demands))
		round := func(d []int64) []shareReply {
			got := make([]shareReply, len(d))
			for _, h := range tc.order {
				q := shareReq(string(rune('a'+h)), limit, window)
				q.Demand, q.Ack = d[h], seqs[h]
				got[h] = share(t, s, now, "k", q)
				seqs[h] = got[h].seq
				if c := committedOf(s, "k", now); c > limit {
					t.Fatalf("%s: %d committed", tc.name, c)
				}
				now += 10
			}
			return got
		}
		before, after := fairOf(limit, demands), fairOf(limit, changed)
		round(demands) // they register
		for r := 1; r <= 3; r++ {
			for h, g := range round(demands) {
				if r >= 2 && (g.rate != before[h] || g.fair != before[h]) {
					t.Fatalf("%s: renewal %d, holder %d: %+v, want its fair share %d", tc.name, r, h, g, before[h])
				}
			}
		}
		for r := 1; r <= 4; r++ {
			for h, g := range round(changed) {
				falls := after[h] < before[h]
				if (r >= tc.within || falls) && (g.rate != after[h] || g.fair != after[h]) {
					t.Fatalf("%s: renewal %d after the change, holder %d: %+v, want its fair share %d", tc.name, r, h, g, after[h])
				}
			}
		}
	}
}

// fairOf is fairShares' split of limit among holders of these demands.
func fairOf(limit int64, demands []int64) []int64 {
	n := len(demands)
	holders := make([]shareHolder, n)
	for j, d := range demands {
		holders[j] = shareHolder{id: string(rune('a' + j)), demand: d}
	}
	out := make([]int64, n)
	fairShares(limit, holders, make([]int64, n), make([]uint64, n), out, make([]int64, n))
	return out
}

// A share key renamed keeps its holders and grants; deleted, it takes them
// with it, and the charge for them goes too.
func TestShareKeyRenamedAndDeleted(t *testing.T) {
	s := NewShard()
	share(t, s, 1000, "old", shareReq("a", 100, 1000))
	if r := run(s, 1000, Command{Op: OpRename, Key: []byte("old"), Value: []byte("new")})[0]; r.Type != ResOK {
		t.Fatalf("RENAME: %+v", r)
	}
	if got := share(t, s, 1000, "new", shareReq("b", 100, 1000)); got.rate != 0 || got.holders != 2 {
		t.Fatalf("b on the renamed key: %+v", got)
	}
	if r := apply(s, 1000, OpExpire, "new", 5000, ExpiryRelative); r.Int != 0 {
		t.Fatalf("EXPIRE on a share key: %+v", r)
	}
	if r := apply(s, 1000, OpDel, "new"); r.Int != 1 || s.keys.shareLen != 0 || s.keys.nShares != 0 {
		t.Fatalf("DEL: %+v, %d bytes of holders left", r, s.keys.shareLen)
	}
	checkCounters(t, s)
}
