package placement

import (
	"fmt"

	"github.com/rlserver/rlserver/cluster"
)

// What a node shows of the cluster's rebalance (CLUSTER REBALANCE STATUS,
// INFO, the metrics): the catalogue records when the current or last one
// began and ended, who began it, how many steps it started and why it
// ended; whether a running one is waiting for nodes that do not answer is
// this node's view, from the same plans the driver makes (driver.go's
// planDone).

// Who began a rebalance (cluster.RebalanceRun.By).
const (
	byCommand       = "CLUSTER REBALANCE"
	byAutoRebalance = "--auto-rebalance"
)

// RebalanceStatus describes the cluster's rebalance as this node sees it.
func (n *Node) RebalanceStatus() cluster.RebalanceStatus {
	st := cluster.RebalanceStatus{State: cluster.RebalanceNone, Reason: "no rebalance has run"}
	cat := n.Catalogue()
	if !n.cfg.clustered() || cat == nil {
		st.Reason = "a single node has nothing to rebalance"
		if cat == nil && n.cfg.clustered() {
			st.Reason = "the cluster's catalogue is not known to this node yet"
		}
		return st
	}
	down, dead := n.liveness(cat)
	steps := plan(cat, down, dead, true)
	st.Plan = stepLines(steps)
	if cat.LastRebalance != nil {
		st.Run = *cat.LastRebalance
	}
	switch {
	case cat.Rebalance:
		st.State, st.Reason = cluster.RebalanceRunning, runningReason(cat, steps)
		if len(steps) == 0 && len(plan(cat, nil, dead, true)) > 0 {
			st.State, st.WaitingFor = cluster.RebalanceWaiting, waitingFor(cat, down, dead)
			st.Reason = waitingReason(st.WaitingFor)
		}
	case cat.LastRebalance != nil:
		st.State, st.Reason = cluster.RebalanceDone, cat.LastRebalance.Outcome
		if st.Reason == cluster.RebalanceBalanced {
			st.Reason = "balanced: with every node answering, nothing was left to plan"
		}
	}
	return st
}

// runningReason says what a running rebalance is doing: the shard that
// moves, or the step it starts next.
func runningReason(cat *cluster.Catalogue, steps []step) string {
	if s := (catalogue{cat}).moving(); s >= 0 {
		return fmt.Sprintf("shard %d is moving to its replicas %s", s, joinIDs(cat.Placement[s].Target))
	}
	if len(steps) > 0 {
		return "next: " + steps[0].String()
	}
	return "nothing is left to plan: it ends at once"
}

// waitingReason says what a rebalance waiting for nodes waits for, and
// what the operator can do.
func waitingReason(nodes []string) string {
	if len(nodes) == 1 {
		return fmt.Sprintf("node %s does not answer: the steps that give it, or take from it, replicas or leaderships wait until it is back; "+
			"start it, or forget it if it is gone for good (CLUSTER FORGET %s FORCE)", nodes[0], nodes[0])
	}
	return fmt.Sprintf("nodes %s do not answer: the steps that give them, or take from them, replicas or leaderships wait until they are back; "+
		"start them, or forget a node gone for good (CLUSTER FORGET <node-id> FORCE)", joinIDs(nodes))
}

// waitingFor are the nodes, down but not dead, that the plan made with
// every node answering gives or takes replicas or leaderships, in the
// order they joined; every node that is down if the plan names none of
// them.
func waitingFor(cat *cluster.Catalogue, down, dead map[string]bool) []string {
	named := map[string]bool{}
	for _, st := range plan(cat, nil, dead, true) {
		named[st.move.From], named[st.move.To] = true, true
		named[st.target[0]], named[cat.Placement[st.shard].Preferred()] = true, true
	}
	var out, all []string
	for _, node := range cat.Nodes {
		if !down[node.ID] || dead[node.ID] {
			continue
		}
		all = append(all, node.ID)
		if named[node.ID] {
			out = append(out, node.ID)
		}
	}
	if len(out) == 0 {
		return all
	}
	return out
}

// stepLines are steps as CLUSTER REBALANCE prints them.
func stepLines(steps []step) []string {
	out := make([]string, len(steps))
	for i, st := range steps {
		out[i] = st.String()
	}
	return out
}
