package placement

import (
	"fmt"
	"slices"
	"strings"

	"github.com/rlserver/rlserver/cluster"
)

// catalogue is a catalogue (cluster.Catalogue, the data the data plane
// reads) as the control plane judges and changes it: who may take part
// (admits), what each node holds, what is moving, and the changes its
// entries make (catalogueops.go).
type catalogue struct{ *cluster.Catalogue }

// forgotten reports whether id was forgotten with incarnation.
func (c catalogue) forgotten(id, incarnation string) bool {
	return slices.Contains(c.Forgotten, cluster.ForgottenNode{ID: id, Incarnation: incarnation})
}

// holdings are the shards node is, or is to be, a replica of.
func (c catalogue) holdings(node string) []int {
	var out []int
	for s, p := range c.Placement {
		if involves(p, node) {
			out = append(out, s)
		}
	}
	return out
}

// moving returns the shard whose group is being changed towards its
// target, or -1.
func (c catalogue) moving() int {
	for s, p := range c.Placement {
		if !settled(p) {
			return s
		}
	}
	return -1
}

// settled reports whether the shard's Raft group is what its target says.
func settled(p cluster.Placement) bool {
	return len(p.Learners) == 0 && sameSet(p.Voters, p.Target)
}

// involves reports whether node is, or is to be, a replica of the shard.
func involves(p cluster.Placement, node string) bool {
	return slices.Contains(p.Target, node) || slices.Contains(p.Voters, node) || slices.Contains(p.Learners, node)
}

// sameSet reports whether a and b hold the same ids, in any order.
func sameSet(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for _, x := range a {
		if !slices.Contains(b, x) {
			return false
		}
	}
	return true
}

// joinIDs lists ids for messages: "n1, n2".
func joinIDs(ids []string) string { return strings.Join(ids, ", ") }

// refused is a *cluster.MembershipError of code, its message formatted.
func refused(code cluster.MembershipCode, format string, args ...any) *cluster.MembershipError {
	return &cluster.MembershipError{Code: code, Msg: fmt.Sprintf(format, args...)}
}
