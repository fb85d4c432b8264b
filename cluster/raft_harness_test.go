package cluster

import (
	"errors"
	"fmt"
	"log/slog"
	"net"
	"os"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/replicatest"
	"github.com/rlserver/rlserver/internal/testnet"
	"github.com/rlserver/rlserver/persistence"
)

// staticControl is a control plane that never changes anything: the
// catalogue of a cluster created from its members, for tests of the data
// plane alone (cluster/placement runs the real one).
type staticControl struct {
	cat         *Catalogue
	incarnation string
}

func (c *staticControl) Catalogue() *Catalogue { return c.cat }

func (c *staticControl) Judge(string, string) Judgement {
	return Judgement{Incarnation: c.incarnation}
}

func (c *staticControl) CommitForwarded([]byte) (uint64, string, error) {
	return 0, "", errors.New("this test's cluster has no catalogue group")
}

func (c *staticControl) Hello(string, string) HelloReply {
	id, _ := ParseClusterID(c.cat.Cluster)
	return HelloReply{Cluster: id, Shards: c.cat.Shards}
}

func (c *staticControl) Vouch(id, incarnation string) HelloReply { return c.Hello(id, incarnation) }

func (c *staticControl) Join(NodeInfo) (*Catalogue, error) {
	return nil, errors.New("this test's cluster takes no new node")
}

// testCluster is n in-process nodes on loopback.
type testCluster struct {
	t       testing.TB
	net     *testnet.Net
	members []Member
	dirs    []string
	nodes   []*RaftShards
	shards  int
	clock   Clock
	busTLS  []*BusTLS // each node's bus security, nil for plain TCP
	// logStore is the format of the nodes' new Raft logs (LogNone: the
	// default).
	logStore persistence.LogFormat
}

func startTestCluster(t *testing.T, size, shards int) *testCluster {
	return startTestClusterB(t, size, shards)
}

// startTestClusterB is startTestCluster for benchmarks too.
func startTestClusterB(t testing.TB, size, shards int) *testCluster {
	t.Helper()
	return startSecureTestCluster(t, size, shards, nil)
}

// startSecureTestCluster is startTestCluster with node i's bus secured by
// busTLS[i] (nil: no TLS).
func startSecureTestCluster(t testing.TB, size, shards int, busTLS []*BusTLS) *testCluster {
	t.Helper()
	return launchTestCluster(&testCluster{t: t, net: testnet.New(), shards: shards, clock: SystemClock{}, busTLS: busTLS}, size)
}

// startTestClusterLogs is startTestCluster with Raft logs in format.
func startTestClusterLogs(t testing.TB, size, shards int, format persistence.LogFormat) *testCluster {
	t.Helper()
	return launchTestCluster(&testCluster{t: t, net: testnet.New(), shards: shards, clock: SystemClock{}, logStore: format}, size)
}

// launchTestCluster starts size nodes with tc's settings.
func launchTestCluster(tc *testCluster, size int) *testCluster {
	t := tc.t
	t.Helper()
	lns := make([]net.Listener, size)
	for i := range size {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[i] = ln
		m := Member{ID: fmt.Sprintf("n%d", i+1), Client: fmt.Sprintf("127.0.0.1:%d", 7000+i), Bus: ln.Addr().String()}
		tc.members = append(tc.members, m)
		tc.net.Name(m.Bus, m.ID)
		tc.dirs = append(tc.dirs, t.TempDir())
	}
	tc.nodes = make([]*RaftShards, size)
	// At once, as a cluster's nodes start.
	errs := make([]error, size)
	var wg sync.WaitGroup
	for i := range size {
		wg.Go(func() { errs[i] = tc.tryStart(i, lns[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		for _, n := range tc.nodes {
			if n != nil {
				n.shutdown(false)
			}
		}
	})
	return tc
}

// start (re)starts node i, on ln or on a new listener at its bus address.
func (tc *testCluster) start(i int, ln net.Listener) {
	tc.t.Helper()
	if err := tc.tryStart(i, ln); err != nil {
		tc.t.Fatal(err)
	}
}

// tryStart is start for a start that may fail: it returns StartRaft's
// error, or the first replica's that did not open. Every node opens the
// replicas the initial placement gives it (Replicas), bootstrapped when new.
func (tc *testCluster) tryStart(i int, ln net.Listener) error {
	tc.t.Helper()
	m := tc.members[i]
	if ln == nil {
		// The old listener's port may still be being released.
		poll.Until(tc.t, 5*time.Second, "the bus address "+m.Bus+" to be free", func() (bool, error) {
			var err error
			ln, err = net.Listen("tcp", m.Bus)
			return err == nil, err
		})
	}
	layout, err := persistence.Open(tc.dirs[i], persistence.Identity{NodeID: m.ID, Shards: tc.shards, Members: MemberList(tc.members)})
	if err != nil {
		tc.t.Fatal(err)
	}
	if len(tc.members) == 1 {
		ln.Close()
		ln = nil
	}
	var sec *BusTLS
	if i < len(tc.busTLS) {
		sec = tc.busTLS[i]
	}
	cfg := DefaultRaftConfig(m, len(tc.members))
	cfg.Shards, cfg.Layout, cfg.Clock, cfg.Bus, cfg.BusTLS = tc.shards, layout.Layout, tc.clock, ln, sec
	cfg.Cluster = Fingerprint(tc.members, tc.shards)
	cfg.Control = &staticControl{cat: InitialCatalogue(tc.members, tc.shards), incarnation: layout.Identity.Incarnation}
	if tc.logStore != persistence.LogNone {
		cfg.LogStore = tc.logStore
	}
	cfg.Dial = tc.net.Dialer(m.ID)
	cfg.HeartbeatTimeout, cfg.ElectionTimeout = 250*time.Millisecond, 250*time.Millisecond
	cfg.RequestTimeout = 3 * time.Second
	cfg.Log = slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	n, err := StartRaft(cfg)
	if err != nil {
		return err
	}
	n.CheckClock(nil, 0) // as cluster/placement's first round of health polls, which these nodes lack: trusted
	for shard := range tc.shards {
		replicas := Replicas(tc.members, shard)
		if !slices.ContainsFunc(replicas, func(r Member) bool { return r.ID == m.ID }) {
			continue
		}
		if err := n.OpenReplica(shard, replicas, false); err != nil {
			n.Abandon()
			return err
		}
	}
	tc.nodes[i] = n
	return nil
}

// crash stops node i without a leadership hand-over. Unlike kill -9 it
// still snapshots (group.close always does), so the log after the snapshot
// is empty.
func (tc *testCluster) crash(i int) {
	tc.nodes[i].shutdown(false)
	tc.nodes[i] = nil
}

// call applies cmds on shard through node i and waits for the answer.
func (tc *testCluster) call(i, shard int, cmds ...engine.Command) (*Request, error) {
	done := make(chan struct{}, 1)
	r := &Request{Cmds: cmds, Results: make([]engine.Result, len(cmds)), Done: done}
	tc.nodes[i].Submit(shard, r)
	select {
	case <-done:
		return r, r.Err
	case <-time.After(15 * time.Second):
		tc.t.Fatalf("node %d shard %d: no answer", i, shard)
		return nil, nil
	}
}

// serve is call until it succeeds, while its error says to try again: an
// election, or a leadership lost meanwhile, which a loaded machine brings
// about at any time (TestBusMutualTLS met "may have been counted" while other
// packages' tests ran beside it). For a test that asserts that a node serves,
// not that no election ever happens; any other error fails the test. It
// returns the results of the call that succeeded.
func (tc *testCluster) serve(i, shard int, cmds ...engine.Command) []engine.Result {
	tc.t.Helper()
	var results []engine.Result
	poll.Until(tc.t, 10*time.Second, fmt.Sprintf("n%d to serve shard %d", i+1, shard), func() (bool, error) {
		r, err := tc.call(i, shard, cmds...)
		if err != nil && !errors.Is(err, ErrNotApplied) && !errors.Is(err, ErrMayHaveBeenCounted) {
			tc.t.Fatalf("shard %d through n%d: %v", shard, i+1, err)
		}
		if err == nil {
			results = r.Results
		}
		return err == nil, err
	})
	return results
}

// leaderOfB is leaderOf for benchmarks.
func (tc *testCluster) leaderOfB(shard int) int { return tc.leaderOf(shard) }

// leaderOf waits until every running node agrees on shard's leader and
// returns its index.
func (tc *testCluster) leaderOf(shard int) int {
	tc.t.Helper()
	return replicatest.Leader(tc.t, shard, memberIDs(tc.members), tc.replicas())
}

// converge waits until every running node's replica of shard has the same
// state and returns that digest.
func (tc *testCluster) converge(shard int) string {
	tc.t.Helper()
	return replicatest.State(tc.t, shard, tc.replicas())
}

// replicas are the nodes as replicatest sees them, nil where one is down.
func (tc *testCluster) replicas() []replicatest.Node {
	out := make([]replicatest.Node, len(tc.nodes))
	for i, n := range tc.nodes {
		if n != nil {
			out[i] = testReplica{n}
		}
	}
	return out
}

// testReplica is a node as replicatest asks it.
type testReplica struct{ n *RaftShards }

func (r testReplica) Holds(shard int) bool { return r.n.groups[shard].Load() != nil }

func (r testReplica) LeaderID(shard int) (string, bool) {
	m, _, ok := r.n.Leader(shard)
	return m.ID, ok
}

func (r testReplica) Digest(shard int) (string, error) {
	res, err := r.n.Read(shard, engine.Command{Op: engine.OpDigest})
	return res.Text, err
}

// memberIDs are members' ids, in order.
func memberIDs(members []Member) []string {
	ids := make([]string, len(members))
	for i, m := range members {
		ids[i] = m.ID
	}
	return ids
}

func sliding(key string, limit, window int64) engine.Command {
	return engine.Command{Op: engine.OpSliding, Key: []byte(key), Args: [4]int64{limit, window, 0, 1}}
}

// startAlone starts cfg's node as a single node holding every shard, as
// cluster/placement starts one; cfg.Control is set when nil.
func startAlone(cfg RaftConfig) (*RaftShards, error) {
	members := []Member{cfg.Self}
	if cfg.Control == nil {
		cfg.Control = &staticControl{cat: InitialCatalogue(members, cfg.Shards)}
	}
	n, err := StartRaft(cfg)
	if err != nil {
		return nil, err
	}
	for shard := range cfg.Shards {
		if err := n.OpenReplica(shard, members, false); err != nil {
			n.Abandon()
			return nil, err
		}
	}
	return n, nil
}
