package server

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/rlserver/rlserver/cluster"
)

// fakeCluster is a three-node cluster seen from node n1, over the test's
// memory shards: shard i is led by the node named in leaders[i] ("" while
// an election runs).
type fakeCluster struct {
	members []cluster.Member
	leaders []string
	shards  int
	failed  map[string]bool // nodes that do not answer
}

func newFakeCluster(shards int, leaders ...string) *fakeCluster {
	m, _ := cluster.ParseMembers("n1@127.0.0.1:7001,n2@127.0.0.1:7002,n3@127.0.0.1:7003")
	return &fakeCluster{members: m, leaders: leaders, shards: shards}
}

func (f *fakeCluster) Self() cluster.Member      { return f.members[0] }
func (f *fakeCluster) Members() []cluster.Member { return f.members }

func (f *fakeCluster) Nodes() []cluster.NodeView {
	out := make([]cluster.NodeView, len(f.members))
	for i, m := range f.members {
		out[i] = cluster.NodeView{Member: m, Failed: f.failed[m.ID]}
	}
	return out
}

func (f *fakeCluster) member(id string) cluster.Member {
	for _, m := range f.members {
		if m.ID == id {
			return m
		}
	}
	return cluster.Member{}
}

func (f *fakeCluster) Leader(shard int) (cluster.Member, bool, bool) {
	id := f.leaders[shard]
	return f.member(id), id == "n1", id != ""
}

func (f *fakeCluster) Topology() []cluster.ShardView {
	views := make([]cluster.ShardView, f.shards)
	for i := range views {
		v := &views[i]
		v.Shard = i
		v.First, v.Last = cluster.SlotRange(i, f.shards)
		v.Leader, _, v.LeaderKnown = f.Leader(i)
		if !v.LeaderKnown {
			v.Leader = f.members[0]
		}
		v.Replicas = append(v.Replicas, v.Leader)
		for _, m := range f.members {
			if m.ID != v.Leader.ID {
				v.Replicas = append(v.Replicas, m)
			}
		}
	}
	return views
}

// startClusterNode serves as n1 of a fake cluster of two shards: shard 0
// (slots 0-8191) led by n1, shard 1 (slots 8192-16383) by n2.
func startClusterNode(t *testing.T) *testServer {
	fc := newFakeCluster(2, "n1", "n2")
	return startServer(t, withShards(2), withConfig(func(c *Config) { c.Cluster = fc }))
}

// Keys in each half of the slots: "bar" hashes to 5061 (shard 0), "foo" to
// 12182 (shard 1).
const localKey, remoteKey = "bar", "foo"

func TestClusterClientsGetMovedOthersAreServed(t *testing.T) {
	s := startClusterNode(t)
	plain := s.dial(t)
	// A client that knows nothing of clusters is served for any slot.
	plain.expect(decision2(1, 5, 4, 0, 2000), "RL.SLIDING", remoteKey, "5", "1000")
	plain.expect(decision2(1, 5, 4, 0, 2000), "RL.SLIDING", localKey, "5", "1000")

	aware := s.dial(t)
	if got := aware.do("CLUSTER", "SLOTS"); !strings.HasPrefix(got, "*2\r\n") {
		t.Fatalf("CLUSTER SLOTS: %q", got)
	}
	aware.expect(decision2(1, 5, 3, 0, 2000), "RL.SLIDING", localKey, "5", "1000")
	aware.expect(errReply("MOVED 12182 127.0.0.1:7002"), "RL.SLIDING", remoteKey, "5", "1000")
	// READONLY marks a cluster client too.
	ro := s.dial(t)
	ro.expect("+OK\r\n", "READONLY")
	ro.expect(errReply("MOVED 12182 127.0.0.1:7002"), "TYPE", remoteKey)
}

func TestClusterMultiKeyCommandsStayInOneSlot(t *testing.T) {
	s := startClusterNode(t)
	c := s.dial(t)
	c.expect(errReply("CROSSSLOT Keys in request don't hash to the same slot"), "DEL", localKey, remoteKey)
	c.expect(intReply(0), "DEL", "{u}a", "{u}b")
	c.expect("+OK\r\n", "MULTI")
	c.expect("+QUEUED\r\n", "RL.FIXED", "{u}a", "5", "1000")
	c.expect(errReply("CROSSSLOT Keys in request don't hash to the same slot"), "RL.FIXED", "{v}a", "5", "1000")
	c.expect(errReply("EXECABORT Transaction discarded because of previous errors."), "EXEC")
}

func TestClusterTopologyReplies(t *testing.T) {
	s := startClusterNode(t)
	c := s.dial(t)
	fc := s.cfg.Cluster.(*fakeCluster)
	id := func(i int) string { return fc.members[i].RedisID() }

	slots := parse(t, c.do("CLUSTER", "SLOTS")).([]any)
	first := slots[0].([]any)
	if first[0] != int64(0) || first[1] != int64(8191) || len(first) != 5 {
		t.Fatalf("CLUSTER SLOTS first range: %v", first)
	}
	if node := first[2].([]any); node[0] != "127.0.0.1" || node[1] != int64(7001) || node[2] != id(0) {
		t.Fatalf("CLUSTER SLOTS master: %v", node)
	}
	if node := slots[1].([]any)[2].([]any); node[1] != int64(7002) {
		t.Fatalf("second range's master: %v", node)
	}

	nodes, _ := parse(t, c.do("CLUSTER", "NODES")).(string)
	lines := strings.Split(strings.TrimSpace(nodes), "\n")
	if len(lines) != 3 || lines[0] != id(0)+" 127.0.0.1:7001@17001 myself,master - 0 0 0 connected 0-8191" ||
		lines[1] != id(1)+" 127.0.0.1:7002@17002 master - 0 0 0 connected 8192-16383" {
		t.Fatalf("CLUSTER NODES:\n%s", nodes)
	}

	shards := parse(t, c.do("CLUSTER", "SHARDS")).([]any)
	if len(shards) != 2 || !strings.Contains(c.do("CLUSTER", "SHARDS"), "master") {
		t.Fatalf("CLUSTER SHARDS: %v", shards)
	}
	c.expect(bulkReply(id(0)), "CLUSTER", "MYID")
	info, _ := parse(t, c.do("CLUSTER", "INFO")).(string)
	for _, want := range []string{"cluster_state:ok\r\n", "cluster_slots_ok:16384\r\n", "cluster_known_nodes:3\r\n", "cluster_size:2\r\n"} {
		if !strings.Contains(info, want) {
			t.Errorf("CLUSTER INFO lacks %q:\n%s", want, info)
		}
	}
	all, _ := parse(t, c.do("INFO")).(string)
	if !strings.Contains(all, "cluster_enabled:1\r\n") || !strings.Contains(all, "redis_mode:cluster\r\n") {
		t.Errorf("INFO does not say cluster:\n%s", all)
	}
}

func TestClusterStateFailsDuringAnElection(t *testing.T) {
	fc := newFakeCluster(2, "n1", "")
	s := startServer(t, withShards(2), withConfig(func(c *Config) { c.Cluster = fc }))
	c := s.dial(t)
	info, _ := parse(t, c.do("CLUSTER", "INFO")).(string)
	if !strings.Contains(info, "cluster_state:fail\r\n") || !strings.Contains(info, "cluster_slots_fail:8192\r\n") {
		t.Fatalf("CLUSTER INFO during an election:\n%s", info)
	}
}

// A node that does not answer is flagged fail and disconnected in CLUSTER
// NODES, as Redis shows one, so that redis-cli --cluster check names it.
func TestClusterNodesFlagsANodeThatDoesNotAnswer(t *testing.T) {
	fc := newFakeCluster(2, "n1", "n2")
	fc.failed = map[string]bool{"n3": true}
	s := startServer(t, withShards(2), withConfig(func(c *Config) { c.Cluster = fc }))
	c := s.dial(t)
	nodes, _ := parse(t, c.do("CLUSTER", "NODES")).(string)
	lines := strings.Split(strings.TrimSpace(nodes), "\n")
	if len(lines) != 3 || !strings.HasSuffix(lines[1], " master - 0 0 0 connected 8192-16383") ||
		!strings.HasSuffix(lines[2], " 127.0.0.1:7003@17003 master,fail - 0 0 0 disconnected") {
		t.Fatalf("CLUSTER NODES with n3 down:\n%s", nodes)
	}
}

// A cluster client counts, scans and flushes the shards the node leads (it
// adds up the masters' answers); any other client sees every shard.
func TestClusterClientsSeeTheShardsTheNodeLeads(t *testing.T) {
	s := startClusterNode(t)
	plain := s.dial(t)
	plain.do("RL.FIXED", localKey, "5", "1000")
	plain.do("RL.FIXED", remoteKey, "5", "1000")
	plain.expect(intReply(2), "DBSIZE")

	aware := s.dial(t)
	aware.do("CLUSTER", "NODES")
	aware.expect(intReply(1), "DBSIZE")
	scan := parse(t, aware.do("SCAN", "0", "COUNT", "100")).([]any)
	if keys := scan[1].([]any); len(keys) != 1 || keys[0] != localKey {
		t.Fatalf("a cluster client's SCAN: %v", scan)
	}
	aware.expect("+OK\r\n", "FLUSHALL")
	plain.expect(intReply(1), "DBSIZE") // the other master's key is still there
	plain.expect(intReply(1), "EXISTS", remoteKey)
}

func TestStandaloneClusterCommands(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	c.expect(errReply("ERR This instance has cluster support disabled"), "CLUSTER", "SLOTS")
	c.expect("+OK\r\n", "READONLY")
	// READONLY on a standalone server does not turn on MOVED or CROSSSLOT.
	c.expect(intReply(0), "DEL", localKey, remoteKey)
}

// fakeChanger is a cluster that changes nothing: each change fails with
// err (errNoChange when nil); its rebalance is status.
// fakeChanger answers every change with err (errNoChange when nil). A test
// sets err between commands with setErr: the server reads it on the
// connection's goroutine, and the race detector does not see the order a
// reply over the socket gives the two.
type fakeChanger struct {
	status cluster.RebalanceStatus
	mu     sync.Mutex
	err    error
}

func (f *fakeChanger) setErr(err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.err = err
}

func (f *fakeChanger) fail() error {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.err != nil {
		return f.err
	}
	return errNoChange
}

func (f *fakeChanger) MoveShard(context.Context, int, string, string) error { return f.fail() }
func (f *fakeChanger) Rebalance(context.Context, bool) ([]string, error)    { return nil, f.fail() }
func (f *fakeChanger) Forget(context.Context, string, bool) error           { return f.fail() }
func (f *fakeChanger) RebalanceStatus() cluster.RebalanceStatus             { return f.status }

var errNoChange = &cluster.MembershipError{Code: cluster.MemberConflict, Msg: "this fake changes nothing"}

// CLUSTER REBALANCE STATUS answers the rebalance's state as a map (a flat
// array in RESP2), and INFO's cluster section says the same in its lines.
func TestClusterRebalanceStatus(t *testing.T) {
	fc := newFakeCluster(2, "n1", "n2")
	ch := &fakeChanger{status: cluster.RebalanceStatus{
		State: cluster.RebalanceWaiting, Reason: "nodes n3 do not answer", WaitingFor: []string{"n3"},
		Run:  cluster.RebalanceRun{Began: 1700000000000, By: "CLUSTER REBALANCE", Steps: 2},
		Plan: []string{"shard 1: move the replica on n1 to n3"},
	}}
	s := startServer(t, withShards(2), withConfig(func(c *Config) { c.Cluster, c.ClusterChanges = fc, ch }))
	c := s.dial(t)
	want := []any{"state", "waiting", "reason", "nodes n3 do not answer", "waiting-for", []any{"n3"},
		"began", int64(1700000000000), "by", "CLUSTER REBALANCE", "steps", int64(2), "ended", int64(0), "outcome", "",
		"plan", []any{"shard 1: move the replica on n1 to n3"}}
	if got := parse(t, c.do("CLUSTER", "REBALANCE", "status")); !reflect.DeepEqual(got, want) {
		t.Errorf("CLUSTER REBALANCE STATUS:\n got %v\nwant %v", got, want)
	}
	c.do("HELLO", "3")
	if got := parse(t, c.do("CLUSTER", "REBALANCE", "STATUS")); !reflect.DeepEqual(got, respMap(want)) {
		t.Errorf("CLUSTER REBALANCE STATUS in RESP3:\n got %v\nwant %v", got, respMap(want))
	}
	info, _ := parse(t, c.do("INFO", "cluster")).(string)
	for _, line := range []string{"rebalance_state:waiting", "rebalance_waiting_for:n3", "rebalance_began_ms:1700000000000",
		"rebalance_steps:2", "rebalance_ended_ms:0", "rebalance_outcome:", "rebalance_planned_steps:1"} {
		if !strings.Contains(info, "\r\n"+line+"\r\n") {
			t.Errorf("INFO cluster lacks %q:\n%s", line, info)
		}
	}
	c.expect(errReply("ERR syntax error"), "CLUSTER", "REBALANCE", "STATUS", "NOW")
	c.expect(errReply("ERR syntax error"), "CLUSTER", "REBALANCE", "LATER")
}

// CLUSTER MOVESHARD's shard is an integer as Redis parses them: "+1" and
// "01" were taken for shard 1.
func TestClusterMoveShardParsesItsShardAsRedis(t *testing.T) {
	fc := newFakeCluster(2, "n1", "n2")
	s := startServer(t, withShards(2), withConfig(func(c *Config) { c.Cluster, c.ClusterChanges = fc, &fakeChanger{} }))
	c := s.dial(t)
	for _, shard := range []string{"+1", "01", "1.0", " 1", "x", "99999999999999999999"} {
		c.expect(errReply("ERR value is not an integer or out of range"), "CLUSTER", "MOVESHARD", shard, "n1", "n2")
	}
	c.expect(errReply("ERR this fake changes nothing"), "CLUSTER", "MOVESHARD", "1", "n1", "n2")
}

// A change that failed for a reason without a word of Redis's (a peer's
// answer that did not decode) is answered ERR, not with its text's first
// word; the others with theirs.
func TestClusterChangeErrorsHaveRedisWords(t *testing.T) {
	fc := newFakeCluster(2, "n1", "n2")
	ch := &fakeChanger{}
	s := startServer(t, withShards(2), withConfig(func(c *Config) { c.Cluster, c.ClusterChanges = fc, ch }))
	c := s.dial(t)
	for _, tc := range []struct {
		err  error
		want string
	}{
		{errors.New("malformed batch: a catalogue reply from 127.0.0.1:17002"), "ERR malformed batch: a catalogue reply from 127.0.0.1:17002"},
		{fmt.Errorf("the cluster's catalogue has no leader: %w", cluster.ErrNotApplied), "TRYAGAIN the cluster's catalogue has no leader: nothing was counted, retry"},
		{&cluster.MembershipError{Code: cluster.MemberUnknown, Msg: "Unknown node n9"}, "ERR Unknown node n9"},
	} {
		ch.setErr(tc.err)
		c.expect(errReply(tc.want), "CLUSTER", "FORGET", "n9")
		c.expect(errReply(tc.want), "CLUSTER", "REBALANCE")
		c.expect(errReply(tc.want), "CLUSTER", "MOVESHARD", "0", "n1", "n9")
	}
}
