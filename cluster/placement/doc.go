// Package placement is rlserver's control plane: it decides which nodes
// are members of a cluster and which of them hold each shard's replicas,
// and makes it so, on the data plane (package cluster) it reaches through
// the small interface it declares (dataPlane, node.go).
//
// A Node (node.go, started in start.go) is a durable node as a member of
// its cluster. Before it takes part in any Raft group it makes sure the
// cluster will have it (identity.go: join, or ask whether it is new, or
// whether it was forgotten). The cluster's membership and placement live
// in the catalogue, replicated in a Raft group of its own on every node
// (cataloguegroup.go, cataloguefsm.go), changed by committed entries
// (catalogueops.go) that every node applies alike. Each node follows the
// catalogue (follow.go): it opens the replicas the catalogue gives it and
// drops the others. The leader of each shard changes its group towards the
// shard's target (reconcile.go), and hands its leadership back to the
// shard's preferred node (balance.go). Every node asks the others how they
// are (health.go, peerstatus.go). The node that leads the catalogue drives
// the placement (driver.go), one shard at a time, from a pure plan
// (planner.go); operators ask for moves, rebalances and forgetting nodes
// (admin.go). What the node shows of the cluster (view.go) feeds CLUSTER
// SLOTS, SHARDS and NODES, INFO, the metrics and the status page.
// Break-glass recovery of a group that lost its majority is recover.go's.
//
// A single node is a cluster of one: it opens every shard, and its
// catalogue never changes.
package placement
