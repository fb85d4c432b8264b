package raftfix

import (
	"fmt"
	"io"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/internal/poll"
)

// An append's commit index is lowered to the last entry it verifies, and
// only that.
func TestBoundCommit(t *testing.T) {
	entries := func(first, last uint64) []*raft.Log {
		var out []*raft.Log
		for i := first; i <= last; i++ {
			out = append(out, &raft.Log{Index: i, Term: 2})
		}
		return out
	}
	cases := []struct {
		name string
		req  raft.AppendEntriesRequest
		want uint64
	}{
		{"a heartbeat says nothing", raft.AppendEntriesRequest{Term: 2}, 0},
		{"an empty append vouches for its previous entry", raft.AppendEntriesRequest{PrevLogEntry: 5, LeaderCommitIndex: 9}, 5},
		{"entries vouch up to the last", raft.AppendEntriesRequest{PrevLogEntry: 5, Entries: entries(6, 8), LeaderCommitIndex: 9}, 8},
		{"a commit index below them is kept", raft.AppendEntriesRequest{PrevLogEntry: 5, Entries: entries(6, 8), LeaderCommitIndex: 7}, 7},
		{"a caught-up follower learns it all", raft.AppendEntriesRequest{PrevLogEntry: 9, LeaderCommitIndex: 9}, 9},
	}
	for _, c := range cases {
		req := c.req
		boundCommit(&req)
		if req.LeaderCommitIndex != c.want {
			t.Errorf("%s: commit index %d, want %d", c.name, req.LeaderCommitIndex, c.want)
		}
	}
}

// appliedLog is a state machine that records the entries it applies.
type appliedLog struct {
	mu   sync.Mutex
	data []string
}

func (a *appliedLog) Apply(l *raft.Log) any {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.data = append(a.data, string(l.Data))
	return nil
}

func (a *appliedLog) Snapshot() (raft.FSMSnapshot, error) { return nil, fmt.Errorf("not in this test") }
func (a *appliedLog) Restore(io.ReadCloser) error         { return fmt.Errorf("not in this test") }

func (a *appliedLog) entries() []string {
	a.mu.Lock()
	defer a.mu.Unlock()
	return slices.Clone(a.data)
}

// A former leader still holds the tail it wrote in its term but never got to
// a majority (it was frozen, say). The new leader's first append matches it
// at the last entry they share, carries nothing, and says the new leader's
// own entry at the tail's index is committed (the append was built a moment
// after its last index was read). Through verifiedCommits the former leader
// applies the new leader's entry, once an append brings it, never its own
// stale tail. (TestCanaryFollowerCommitsWhatNoAppendVerified plays the same
// with hashicorp/raft alone.)
func TestFormerLeaderNeverAppliesItsStaleTail(t *testing.T) {
	want := []string{"shared", "the new leader's"}
	if got := appliedAfterTheNewLeadersAppends(t, true); !slices.Equal(got, want) {
		t.Fatalf("applied %q, want %q", got, want)
	}
}

// Canary for verifiedCommits' bound on the commit index (boundCommit).
// hashicorp/raft (v1.7.3, v1.8.0) takes as a follower's commit index
// min(leader's commit index, its own last index) (raft.go, appendEntries),
// where the Raft paper's rule (figure 2, AppendEntries, receiver step 5) is
// min(leader's commit index, index of the last new entry). So the former
// leader of TestFormerLeaderNeverAppliesItsStaleTail, with hashicorp/raft
// alone, applies its stale tail and never the new leader's entry at that
// index: the replica has diverged (CI: a shard's frozen leader, leading
// again, held other counts than its followers).
func TestCanaryFollowerCommitsWhatNoAppendVerified(t *testing.T) {
	got := appliedAfterTheNewLeadersAppends(t, false)
	if want := []string{"shared", "stale, never committed"}; !slices.Equal(got, want) {
		t.Fatalf("applied %q, not %q: hashicorp/raft now bounds a follower's commit index by what the append verified (the paper's rule): verifiedCommits' boundCommit may go", got, want)
	}
}

// appliedAfterTheNewLeadersAppends starts a replica (through
// verifiedCommits when verified) holding a former leader's log: a
// configuration, a shared entry and a stale one at index 3. The test plays
// the new leader of term 2, which holds 1 and 2 and its own entry at 3,
// committed with another replica: it sends an empty append that says 3 is
// committed, then one that carries its entry 3. It returns the two entries
// the replica applied.
func appliedAfterTheNewLeadersAppends(t *testing.T, verified bool) []string {
	t.Helper()
	store := raft.NewInmemStore()
	if err := store.SetUint64([]byte("CurrentTerm"), 1); err != nil {
		t.Fatal(err)
	}
	members := raft.Configuration{Servers: []raft.Server{
		{ID: "n1", Address: "n1"}, {ID: "n2", Address: "n2"}, {ID: "n3", Address: "n3"}}}
	if err := store.StoreLogs([]*raft.Log{
		{Index: 1, Term: 1, Type: raft.LogConfiguration, Data: raft.EncodeConfiguration(members)},
		{Index: 2, Term: 1, Type: raft.LogCommand, Data: []byte("shared")},
		{Index: 3, Term: 1, Type: raft.LogCommand, Data: []byte("stale, never committed")},
	}); err != nil {
		t.Fatal(err)
	}
	_, inmem := raft.NewInmemTransport("n1")
	_, leader := raft.NewInmemTransport("n2")
	inmem.Connect("n2", leader)
	leader.Connect("n1", inmem)
	var trans raft.Transport = inmem
	if verified {
		trans = withVerifiedCommits(inmem, nil)
	}
	conf := raft.DefaultConfig()
	conf.LocalID = "n1"
	// No election of its own while the test plays the leader.
	conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = time.Minute, time.Minute, time.Minute
	conf.LogOutput = io.Discard
	fsm := &appliedLog{}
	r, err := raft.NewRaft(conf, fsm, store, store, raft.NewInmemSnapshotStore(), trans)
	if err != nil {
		t.Fatal(err)
	}
	defer r.Shutdown()

	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n2"), Addr: []byte("n2")}
	send := func(req *raft.AppendEntriesRequest) {
		t.Helper()
		var resp raft.AppendEntriesResponse
		if err := leader.AppendEntries("n1", "n1", req, &resp); err != nil || !resp.Success {
			t.Fatalf("append %+v: %v, success %v", req, err, resp.Success)
		}
	}
	send(&raft.AppendEntriesRequest{RPCHeader: header, Term: 2, PrevLogEntry: 2, PrevLogTerm: 1, LeaderCommitIndex: 3})
	send(&raft.AppendEntriesRequest{RPCHeader: header, Term: 2, PrevLogEntry: 2, PrevLogTerm: 1, LeaderCommitIndex: 3,
		Entries: []*raft.Log{{Index: 3, Term: 2, Type: raft.LogCommand, Data: []byte("the new leader's")}}})
	poll.Until(t, 10*time.Second, "the committed entries to be applied", func() (bool, error) {
		got := fsm.entries()
		return len(got) == 2, fmt.Errorf("applied %q", got)
	})
	return fsm.entries()
}

// A heartbeat reaches Raft through Consumer, on its main goroutine, never
// through the fast path hashicorp/raft asks the transport for: that path runs
// appendEntries beside the main goroutine, and a heartbeat of a newer term
// there made a leader that had not heard of it stamp its next entries with
// the new term (see SetHeartbeatHandler).
func TestHeartbeatsReachRaftThroughItsMainLoop(t *testing.T) {
	server, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	v := withHeldConfigurations(withVerifiedCommits(server, nil)) // as New composes them
	defer v.Close()
	fast := make(chan struct{}, 1)
	v.SetHeartbeatHandler(func(rpc raft.RPC) {
		fast <- struct{}{}
		rpc.Respond(&raft.AppendEntriesResponse{Success: true}, nil)
	})
	client, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	heartbeat := &raft.AppendEntriesRequest{
		RPCHeader: raft.RPCHeader{ID: []byte("n2"), Addr: []byte(client.LocalAddr())},
		Term:      7,
	}
	sent := make(chan error, 1)
	go func() {
		var resp raft.AppendEntriesResponse
		sent <- client.AppendEntries("n1", server.LocalAddr(), heartbeat, &resp)
	}()
	select {
	case rpc := <-v.Consumer():
		if req, ok := rpc.Command.(*raft.AppendEntriesRequest); !ok || req.Term != 7 || len(req.Entries) != 0 {
			t.Fatalf("Raft got %#v, want the heartbeat", rpc.Command)
		}
		rpc.Respond(&raft.AppendEntriesResponse{Term: 7, Success: true}, nil)
	case <-fast:
		t.Fatal("the heartbeat took the fast path, beside Raft's main goroutine")
	case <-time.After(5 * time.Second):
		t.Fatal("the heartbeat never reached Raft")
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
}

// Canary for verifiedCommits' refusal of the heartbeat fast path
// (SetHeartbeatHandler). hashicorp/raft's NewRaft hands the transport
// processHeartbeat, and NetworkTransport calls it on the goroutine of the
// connection the heartbeat came in on (net_transport.go, handleCommand):
// appendEntries runs there, beside Raft's main goroutine, and a newer term
// is taken there. The test holds Raft's main goroutine inside an append (its
// log store's StoreLogs waits), then sends a heartbeat of a newer term over
// TCP: with hashicorp/raft alone the heartbeat is answered, and the replica's
// term raised, while the main goroutine is still held.
func TestCanaryHeartbeatChangesTheTermBesideTheMainLoop(t *testing.T) {
	store := raft.NewInmemStore()
	logs := &heldStore{InmemStore: store, entered: make(chan struct{}), release: make(chan struct{})}
	server, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	conf := raft.DefaultConfig()
	conf.LocalID = "n1"
	conf.HeartbeatTimeout, conf.ElectionTimeout, conf.LeaderLeaseTimeout = time.Minute, time.Minute, time.Minute
	conf.LogOutput = io.Discard
	r, err := raft.NewRaft(conf, nopFSM{}, logs, store, raft.NewInmemSnapshotStore(), server)
	if err != nil {
		t.Fatal(err)
	}
	released := false
	release := func() {
		if !released {
			released = true
			close(logs.release)
		}
	}
	defer func() {
		release()
		r.Shutdown().Error()
	}()
	client, err := raft.NewTCPTransport("127.0.0.1:0", nil, 2, 5*time.Second, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close()
	header := raft.RPCHeader{ProtocolVersion: raft.ProtocolVersionMax, ID: []byte("n2"), Addr: []byte(client.LocalAddr())}

	// An append of term 2 holds the main goroutine in StoreLogs.
	appended := make(chan error, 1)
	go func() {
		var resp raft.AppendEntriesResponse
		appended <- client.AppendEntries("n1", server.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header, Term: 2,
			Entries: []*raft.Log{{Index: 1, Term: 2, Type: raft.LogCommand, Data: []byte("held")}}}, &resp)
	}()
	select {
	case <-logs.entered:
	case err := <-appended:
		t.Fatalf("the append returned (%v) before its entries were stored", err)
	case <-time.After(10 * time.Second):
		t.Fatal("Raft's main goroutine never stored the append's entries")
	}

	// A heartbeat of term 7 while the main goroutine is held.
	var resp raft.AppendEntriesResponse
	err = client.AppendEntries("n1", server.LocalAddr(), &raft.AppendEntriesRequest{RPCHeader: header, Term: 7}, &resp)
	term, _ := store.GetUint64([]byte("CurrentTerm"))
	if err != nil || resp.Term != 7 || term != 7 {
		t.Fatalf("with Raft's main goroutine held, the heartbeat of term 7 got %v, term %d, success %v, and the replica saved term %d: hashicorp/raft no longer runs heartbeats beside its main goroutine: verifiedCommits' SetHeartbeatHandler, which leaves the fast path unset, may go", err, resp.Term, resp.Success, term)
	}
	select {
	case err := <-appended:
		t.Fatalf("the held append returned (%v): the main goroutine was not held while the heartbeat was answered", err)
	default:
	}
	release()
	if err := <-appended; err != nil {
		t.Fatal(err)
	}
}

// heldStore is a log store whose first StoreLogs waits for release, once it
// has said so on entered.
type heldStore struct {
	*raft.InmemStore
	once             sync.Once
	entered, release chan struct{}
}

func (h *heldStore) StoreLogs(logs []*raft.Log) error {
	h.once.Do(func() {
		close(h.entered)
		<-h.release
	})
	return h.InmemStore.StoreLogs(logs)
}

func (h *heldStore) StoreLog(l *raft.Log) error { return h.StoreLogs([]*raft.Log{l}) }
