package cluster

import (
	"slices"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/engine"
)

// batchRequests are several connections' requests for one shard, RL.ALL
// groups among them: one allowed, one denied as a whole, one refused.
func batchRequests() [][]engine.Command {
	all := func(n int64) engine.Command { return engine.Command{Op: engine.OpAll, Args: [4]int64{n}} }
	token := func(key string, capacity, cost int64) engine.Command {
		return engine.Command{Op: engine.OpToken, Key: []byte(key), Args: [4]int64{capacity, 1, 1000, cost}}
	}
	return [][]engine.Command{
		{sliding("a", 1, 60_000), sliding("a", 1, 60_000)},
		{all(2), sliding("b", 10, 60_000), token("c", 10, 1)},
		{{Op: engine.OpSet, Key: []byte("s"), Value: []byte("v")}, {Op: engine.OpGet, Key: []byte("s")}},
		{all(2), sliding("d", 10, 60_000), token("e", 1, 2)},
		{token("a", 5, 1)}, // WRONGTYPE: "a" is a sliding window
		{all(2), sliding("f", 10, 60_000), sliding("f", 10, 60_000)},
		{sliding("b", 10, 60_000)},
	}
}

// newRequests makes a request of each command list, with room for its
// answer.
func newRequests(cmds [][]engine.Command) []*Request {
	reqs := make([]*Request, len(cmds))
	for i, c := range cmds {
		reqs[i], _ = newRequest(slices.Clone(c))
	}
	return reqs
}

// The memory runner, which applies requests one by one, and a Raft replica,
// which applies them as one entry, apply the same requests at the same time
// alike: the same results for every request, the same state and the same
// counters.
func TestMemoryAndRaftApplyABatchAlike(t *testing.T) {
	const now = 1_700_000_000_000

	mem := &memoryShard{replica: newReplica(0, &observerSlot{}, nil), clock: fixedClock(now)}
	memReqs := newRequests(batchRequests())
	for _, r := range memReqs {
		r.begin(0, nil, DefaultRequestTimeout)
		mem.applyRequest(r)
	}

	fsm := newShardFSM(0, &observerSlot{}, nil, nil)
	raftReqs := newRequests(batchRequests())
	n := 0
	for _, r := range raftReqs {
		n += len(r.Cmds)
	}
	l := &raft.Log{Type: raft.LogCommand, Data: appendBatch(nil, now*1000, raftReqs)}
	deliver(raftReqs, applyClaimed(t, fsm, l, n), nil)

	for i := range memReqs {
		m, r := memReqs[i], raftReqs[i]
		if m.Err != nil || r.Err != nil {
			t.Fatalf("request %d: errors %v and %v", i, m.Err, r.Err)
		}
		for j := range m.Results {
			if !sameResult(m.Results[j], r.Results[j]) {
				t.Errorf("request %d, command %d: in memory %+v, in Raft %+v", i, j, m.Results[j], r.Results[j])
			}
		}
	}
	if m, r := mem.stats(), fsm.stats(); m != r {
		t.Errorf("stats in memory %+v, in Raft %+v", m, r)
	}
	digest := engine.Command{Op: engine.OpDigest}
	if m, r := mem.inspect(digest), fsm.inspect(digest); m.Text != r.Text {
		t.Errorf("digest in memory %q, in Raft %q", m.Text, r.Text)
	}
	// The allowed group's limits were both counted; the denied and the
	// refused ones left nothing behind.
	if st := mem.stats(); st.Keys != 4 {
		t.Errorf("%d keys, want a, b, c and s", st.Keys)
	}
}

// sameResult compares what a client would read of two results.
func sameResult(a, b engine.Result) bool {
	return a.Type == b.Type && a.Decision == b.Decision && a.Throttle == b.Throttle && a.Int == b.Int &&
		a.Text == b.Text && a.Members == b.Members && (a.Err == nil) == (b.Err == nil) &&
		(a.Err == nil || a.Err.Error() == b.Err.Error())
}

type fixedClock int64

func (c fixedClock) Now() int64  { return int64(c) }
func (c fixedClock) Wall() int64 { return int64(c) }

func (c fixedClock) NowMicro() int64 { return int64(c) * 1000 }

// A batch takes requests whole until it holds maxBatchBytes: the request
// that crosses the bound is taken whole, the ones after it wait for the
// next batch.
func TestBatchTakesWholeRequestsUpToItsBound(t *testing.T) {
	sized := func(bytes int) *Request {
		// requestSize counts the key and 24 bytes a command.
		return &Request{Cmds: []engine.Command{{Op: engine.OpGet, Key: make([]byte, bytes-24)}}}
	}
	cases := []struct {
		name   string
		sizes  []int // the first request, then those waiting
		taken  int
		remain int
	}{
		{"everything waiting fits", []int{100, 100, 100}, 3, 0},
		{"the crossing request is taken whole", []int{maxBatchBytes - 100, 1000, 100}, 2, 1},
		{"a first request over the bound alone", []int{maxBatchBytes + 1, 100}, 1, 1},
		{"exactly at the bound", []int{maxBatchBytes / 2, maxBatchBytes / 2, 100}, 2, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			in := make(chan *Request, len(c.sizes))
			for _, n := range c.sizes[1:] {
				in <- sized(n)
			}
			var b batch
			b.add(sized(c.sizes[0]))
			b.addWaiting(in)
			if len(b.reqs) != c.taken || len(in) != c.remain {
				t.Fatalf("took %d, left %d; want %d and %d", len(b.reqs), len(in), c.taken, c.remain)
			}
			b.reset()
			if len(b.reqs) != 0 || b.size != 0 {
				t.Fatalf("after reset: %d requests, %d bytes", len(b.reqs), b.size)
			}
		})
	}
}

// A shard sweeps on its own only when it has keys and no request arrived
// since the previous tick.
func TestSweepPolicy(t *testing.T) {
	cases := []struct {
		requests bool
		keys     int
		due      bool
	}{
		{false, 0, false},
		{false, 1, true},
		{true, 1, false},
		{true, 0, false},
	}
	for _, c := range cases {
		var p sweepPolicy
		if c.requests {
			p.request()
		}
		if got := p.due(c.keys); got != c.due {
			t.Errorf("requests %v, %d keys: due %v, want %v", c.requests, c.keys, got, c.due)
		}
		if !p.due(1) {
			t.Errorf("requests %v: the tick after is not due with keys", c.requests)
		}
	}
}

// A node that holds no replica of a shard reads its digest through the
// shard's log (RaftShards.Read): an entry stamped with the leader's time,
// which moves the shard's time forward as any entry does. Every replica that
// applies that entry inspects the same digest the entry answered, whatever
// its time: before a key's expiry, after it (the key is left out alike), or
// behind the shard's time (raised to it). Only a replica that has not
// applied it yet may differ, when a key expired in between: DEBUG DIGEST
// compares nodes once their replicas have caught up.
func TestDigestThroughTheLogIsEveryReplicasDigest(t *testing.T) {
	const t0 = 1_700_000_000_000
	setup := []engine.Command{
		sliding("a", 10, 60_000),
		{Op: engine.OpSet, Key: []byte("short"), Value: []byte("v"), Args: [4]int64{1000, engine.ExpiryRelative}},
		{Op: engine.OpSet, Key: []byte("long"), Value: []byte("v"), Args: [4]int64{600_000, engine.ExpiryRelative}},
	}
	digest := []engine.Command{{Op: engine.OpDigest}}
	entry := func(now int64, cmds []engine.Command) *raft.Log {
		reqs := newRequests([][]engine.Command{cmds})
		return &raft.Log{Type: raft.LogCommand, Data: appendBatch(nil, now*1000, reqs)}
	}
	cases := []struct {
		name    string
		at      int64
		expired bool // a key expired between the shard's time and at
	}{
		{"before the key's expiry", t0 + 10, false},
		{"after the key's expiry", t0 + 5000, true},
		{"a leader's clock behind the shard's", t0 - 5000, false},
	}
	for _, c := range cases {
		leader, follower := newShardFSM(0, &observerSlot{}, nil, nil), newShardFSM(0, &observerSlot{}, nil, nil)
		for _, f := range []*shardFSM{leader, follower} {
			f.ApplyBatch([]*raft.Log{entry(t0, setup)})
		}
		before := follower.inspect(engine.Command{Op: engine.OpDigest}).Text
		answered := applyClaimed(t, leader, entry(c.at, digest), 1)[0].Text
		if stale := before != answered; stale != c.expired {
			t.Errorf("%s: a replica behind the entry inspects %.12s, the entry answered %.12s", c.name, before, answered)
		}
		follower.ApplyBatch([]*raft.Log{entry(c.at, digest)})
		for name, f := range map[string]*shardFSM{"leader": leader, "follower": follower} {
			if got := f.inspect(engine.Command{Op: engine.OpDigest}).Text; got != answered {
				t.Errorf("%s: the %s inspects %.12s, the entry answered %.12s", c.name, name, got, answered)
			}
		}
	}
}
