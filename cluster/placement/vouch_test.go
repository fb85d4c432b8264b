package placement

import (
	"errors"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/persistence"
)

func TestVouchersNeededAreAMajorityOfTheOthers(t *testing.T) {
	for members, want := range map[int]int{1: 0, 2: 1, 3: 2, 4: 2, 5: 3, 6: 3, 7: 4} {
		if got := vouchersNeeded(members); got != want {
			t.Errorf("%d initial members: %d vouchers, want %d", members, got, want)
		}
		// Two sets of that many among the others always share a node: the
		// one that refuses a lost node's second incarnation.
		if members > 1 && 2*want <= members-1 {
			t.Errorf("%d initial members: two sets of %d vouchers need not meet", members, want)
		}
	}
}

// initialNode is n1 of a cluster being created with n1, n2 and n3, not
// started: enough to answer hellos and vouches from its data directory.
func initialNode(t *testing.T, dir string) *Node {
	members := []cluster.Member{
		{ID: "n1", Client: "127.0.0.1:6381", Bus: "127.0.0.1:16381"},
		{ID: "n2", Client: "127.0.0.1:6382", Bus: "127.0.0.1:16382"},
		{ID: "n3", Client: "127.0.0.1:6383", Bus: "127.0.0.1:16383"},
	}
	cfg := DefaultConfig(members[0], members)
	cfg.Log = slog.New(slog.NewTextHandler(io.Discard, nil))
	n := &Node{cfg: cfg, id: cluster.Fingerprint(members, 3)}
	n.vouchers.layout = persistence.Layout{Dir: dir}
	return n
}

// Before the cluster's catalogue knows an initial member's incarnation, a
// member that vouched for one refuses another under the same id, after a
// restart too, with a message that says what to do; once the catalogue
// knows the member's incarnation, the catalogue judges.
func TestAVoucherRefusesASecondIncarnation(t *testing.T) {
	dir := t.TempDir()
	n := initialNode(t, dir)
	if r := n.hello("n2", "aaaa", true); r.Verdict != nil || !r.Vouched {
		t.Fatalf("vouching for n2 first: %+v", r)
	}
	if r := n.hello("n2", "aaaa", true); r.Verdict != nil || !r.Vouched {
		t.Fatalf("vouching for n2 again, same data directory: %+v", r)
	}
	if r := n.hello("n5", "eeee", true); r.Verdict != nil || r.Vouched {
		t.Errorf("vouching for a node that is no initial member: %+v, want no vouch and no refusal", r)
	}

	n = initialNode(t, dir) // restarted: the book is read from the data directory
	for _, vouch := range []bool{false, true} {
		r := n.hello("n2", "bbbb", vouch)
		if !errors.Is(r.Verdict, cluster.ErrIncarnation) || r.Vouched {
			t.Fatalf("n2 with another data directory (vouch %v): %+v; want refused as another incarnation", vouch, r)
		}
		for _, want := range []string{"recorded with another data directory", "CLUSTER FORGET n2 FORCE", "--join", "never formed"} {
			if !strings.Contains(r.Verdict.Error(), want) {
				t.Errorf("the refusal does not say %q: %v", want, r.Verdict)
			}
		}
	}

	// The catalogue, once it holds n2 unregistered, does not overrule the
	// book; once it holds n2's incarnation, it judges.
	cat := cluster.InitialCatalogue(n.cfg.Members, 3)
	cat.Index = 5
	group := &catalogueGroup{fsm: newCatalogueFSM(nil)}
	group.fsm.cur.Store(cat)
	n.meta.Store(group)
	if r := n.hello("n2", "bbbb", true); !errors.Is(r.Verdict, cluster.ErrIncarnation) {
		t.Errorf("n2 unregistered in the catalogue, another data directory: %+v; want refused", r)
	}
	registered := cat.Clone()
	registered.Node("n2").Incarnation = "aaaa"
	group.fsm.cur.Store(registered)
	if r := n.hello("n2", "aaaa", true); r.Verdict != nil || !r.Vouched {
		t.Errorf("n2 registered with its data directory: %+v; want vouched", r)
	}
	if r := n.hello("n2", "bbbb", false); !errors.Is(r.Verdict, cluster.ErrIncarnation) || strings.Contains(r.Verdict.Error(), "being created") {
		t.Errorf("n2 registered, another data directory: %+v; want the catalogue's refusal", r)
	}
}

// lateHello is a fake member's control plane that makes its answer when
// asked.
type lateHello struct{ reply func() cluster.HelloReply }

func (lateHello) Catalogue() *cluster.Catalogue                  { return &cluster.Catalogue{} }
func (lateHello) Judge(string, string) cluster.Judgement         { return cluster.Judgement{} }
func (h lateHello) Hello(string, string) cluster.HelloReply      { return h.reply() }
func (h lateHello) Vouch(string, string) cluster.HelloReply      { return h.reply() }
func (lateHello) CommitForwarded([]byte) (uint64, string, error) { return 0, "", cluster.ErrNotApplied }
func (lateHello) Join(cluster.NodeInfo) (*cluster.Catalogue, error) {
	return nil, cluster.ErrNotApplied
}

// A new initial member takes part in no vote until a majority of the other
// initial members vouch for it: with two others, both. One that cannot
// vouch (a release before vouching, which answers hellos only) does not
// count; one that refuses stops it.
func TestANewMemberWaitsForAMajorityOfTheOthersToVouch(t *testing.T) {
	var formation cluster.ClusterID // the newcomer's, set once it is made
	member := func(id string, vouches bool) cluster.Member {
		return fakeMemberWith(t, id, func(cluster.Member) cluster.ControlPlane {
			return lateHello{func() cluster.HelloReply { return cluster.HelloReply{Cluster: formation, Shards: 3, Vouched: vouches} }}
		})
	}
	n := newcomer(member("n1", true), member("n2", false))
	formation = n.id
	others := n.cfg.Members[:2]
	if got, err := n.askVouchers(others); got != 1 || err != nil {
		t.Fatalf("one of two vouched: %d, %v", got, err)
	}
	if need := vouchersNeeded(len(n.cfg.Members)); need != 2 {
		t.Fatalf("needed %d, want both others", need)
	}
	n = newcomer(member("n1", true), member("n2", true))
	formation = n.id
	if got, err := n.askVouchers(n.cfg.Members[:2]); got != 2 || err != nil {
		t.Fatalf("both vouched: %d, %v", got, err)
	}
	if err := n.checkNewMember(); err != nil {
		t.Errorf("checkNewMember with both vouching: %v", err)
	}
	refusing := fakeMember(t, "n2", answer(cluster.HelloReply{Shards: 3, Verdict: cluster.ErrIncarnation}))
	n = newcomer(member("n1", true), refusing)
	formation = n.id
	if err := n.checkNewMember(); !errors.Is(err, cluster.ErrIncarnation) {
		t.Errorf("checkNewMember with n2 refusing: %v; want its refusal", err)
	}
}
