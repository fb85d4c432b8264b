package placement

import (
	"errors"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/persistence"
)

// helloOnly is the control plane of a fake member: it answers every hello
// and vouch with reply, and nothing else.
type helloOnly struct{ reply cluster.HelloReply }

func (helloOnly) Catalogue() *cluster.Catalogue                  { return &cluster.Catalogue{} }
func (helloOnly) Judge(string, string) cluster.Judgement         { return cluster.Judgement{} }
func (h helloOnly) Hello(string, string) cluster.HelloReply      { return h.reply }
func (h helloOnly) Vouch(string, string) cluster.HelloReply      { return h.reply }
func (helloOnly) CommitForwarded([]byte) (uint64, string, error) { return 0, "", cluster.ErrNotApplied }
func (helloOnly) Join(cluster.NodeInfo) (*cluster.Catalogue, error) {
	return nil, cluster.ErrNotApplied
}

// answer is a fake member's reply whatever its address.
func answer(r cluster.HelloReply) func(cluster.Member) cluster.HelloReply {
	return func(cluster.Member) cluster.HelloReply { return r }
}

func tcpDial(addr string, timeout time.Duration) (net.Conn, error) {
	return net.DialTimeout("tcp", addr, timeout)
}

// fakeMember starts a data plane on loopback whose control plane answers
// hellos with what reply makes of its member entry, and returns the entry.
func fakeMember(t *testing.T, id string, reply func(self cluster.Member) cluster.HelloReply) cluster.Member {
	t.Helper()
	return fakeMemberWith(t, id, func(self cluster.Member) cluster.ControlPlane { return helloOnly{reply(self)} })
}

// fakeMemberWith starts a data plane on loopback with the control plane
// ctl makes of its member entry, and returns the entry.
func fakeMemberWith(t *testing.T, id string, ctl func(self cluster.Member) cluster.ControlPlane) cluster.Member {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	m := cluster.Member{ID: id, Client: "127.0.0.1:1", Bus: ln.Addr().String()}
	opened, err := persistence.Open(t.TempDir(), persistence.Identity{NodeID: id})
	if err != nil {
		t.Fatal(err)
	}
	cfg := cluster.DefaultRaftConfig(m, 1)
	cfg.Layout, cfg.Bus, cfg.Control = opened.Layout, ln, ctl(m)
	data, err := cluster.StartRaft(cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { data.Abandon() })
	return m
}

// newcomer is a node with a new data directory, listed with peers in
// --cluster and started with --join through the first of them, as a
// StatefulSet's pod is after the StatefulSet was scaled up.
func newcomer(peers ...cluster.Member) *Node {
	self := cluster.Member{ID: "n4", Client: "127.0.0.1:2", Bus: "127.0.0.1:3"}
	cfg := Config{RaftConfig: cluster.RaftConfig{Self: self, Shards: 3, Log: slog.New(slog.NewTextHandler(io.Discard, nil))}}
	cfg.Members, cfg.Join, cfg.Incarnation = append(peers, self), peers[0].Bus, "new"
	n := &Node{cfg: cfg, joiner: cluster.NewJoiner(tcpDial, nil), stop: make(chan struct{})}
	n.id = cluster.Fingerprint(cfg.Members, cfg.Shards)
	return n
}

// A node listed in a longer --cluster than the cluster was formed with
// joins it, even before the cluster's members have committed their
// catalogue: their cluster id, made from the list they were started with,
// is not the one this node's list makes. It bootstrapped a cluster of its
// own instead, which no member would talk to (go test ./tests, under load:
// TestFleetScalesUpDownAndUpAgain's n4 asked while the catalogue's init
// was not yet applied on the members, and each answered "no catalogue").
func TestANewcomerJoinsAClusterFormedWithoutIt(t *testing.T) {
	formed := []cluster.Member{{ID: "n1", Client: "127.0.0.1:4", Bus: "127.0.0.1:5"}}
	other := cluster.Fingerprint(formed, 3)
	unknown := &cluster.MembershipError{Code: cluster.MemberUnknown, Msg: "the cluster already exists and node n4 is not a member"}

	n := newcomer(fakeMember(t, "n1", answer(cluster.HelloReply{Index: 0, Cluster: other, Shards: 3})))
	if joins, err := n.existsWithout(n.id); !joins || err != nil {
		t.Errorf("a member of another formation with nothing committed yet: joins %v, %v; want it to join", joins, err)
	}
	n = newcomer(fakeMember(t, "n1", answer(cluster.HelloReply{Index: 7, Cluster: other, Shards: 3, Verdict: unknown})))
	if joins, err := n.existsWithout(n.id); !joins || err != nil {
		t.Errorf("a member whose committed catalogue lacks the node: joins %v, %v; want it to join", joins, err)
	}

	// Members of its own formation with nothing committed: the cluster is
	// being created, with this node among its initial members.
	n = newcomer(fakeMember(t, "n1", func(self cluster.Member) cluster.HelloReply {
		return cluster.HelloReply{Index: 0, Cluster: newcomer(self).id, Shards: 3}
	}))
	if joins, err := n.existsWithout(n.id); joins || err != nil {
		t.Errorf("a member of the same formation with nothing committed: joins %v, %v; want it to bootstrap", joins, err)
	}
}

// A node that began as an initial member, no member having answered in
// time, stops when it learns the cluster was formed without it, and says
// that it joins when started again; it does not count a member of another
// formation as one that agrees no cluster exists yet.
func TestANewcomerThatBeganAsAnInitialMemberStops(t *testing.T) {
	formed := []cluster.Member{{ID: "n1", Client: "127.0.0.1:4", Bus: "127.0.0.1:5"}}
	n := newcomer(fakeMember(t, "n1", answer(cluster.HelloReply{Index: 0, Cluster: cluster.Fingerprint(formed, 3), Shards: 3})))
	err := n.checkNewMember()
	if !errors.Is(err, &cluster.MembershipError{Code: cluster.MemberUnknown}) || !strings.Contains(err.Error(), "joins through --join") {
		t.Errorf("checkNewMember: %v; want a refusal that says the node joins when started again", err)
	}
	n.cfg.Join = ""
	if err := n.checkNewMember(); !errors.Is(err, &cluster.MembershipError{Code: cluster.MemberUnknown}) || !strings.Contains(err.Error(), "same --cluster list") {
		t.Errorf("checkNewMember without --join: %v; want a refusal that names the --cluster lists", err)
	}
}
