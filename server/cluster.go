package server

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/resp"
)

// As a cluster node the server shows shard leaders as masters and their
// followers as replicas, with client addresses. Connections that asked for
// the topology (CLUSTER SLOTS, SHARDS or NODES, or READONLY/READWRITE) are
// cluster clients: they get MOVED for a slot another node leads, and go
// there. Every other connection is served whatever the slot, by forwarding,
// so a plain redis-cli works against any node.

var errClusterDisabled = errors.New("ERR This instance has cluster support disabled")

// clusterKeySlot is CLUSTER KEYSLOT key, which needs no cluster.
func (c *conn) clusterKeySlot(_ *commands.Spec, args [][]byte, out []byte) []byte {
	return resp.AppendInt(out, int64(cluster.Slot(args[2])))
}

// clusterSlots is CLUSTER SLOTS: the connection is a cluster client.
func (c *conn) clusterSlots(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	cl := c.srv.cfg.Cluster
	if cl == nil {
		return appendError(out, errClusterDisabled)
	}
	c.clusterAware = true
	return appendClusterSlots(out, cl.Topology(), c.resp3.Load())
}

// clusterShards is CLUSTER SHARDS: the connection is a cluster client.
func (c *conn) clusterShards(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	cl := c.srv.cfg.Cluster
	if cl == nil {
		return appendError(out, errClusterDisabled)
	}
	c.clusterAware = true
	return appendClusterShards(out, cl.Topology(), c.resp3.Load())
}

// clusterNodes is CLUSTER NODES: the connection is a cluster client.
func (c *conn) clusterNodes(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	cl := c.srv.cfg.Cluster
	if cl == nil {
		return appendError(out, errClusterDisabled)
	}
	c.clusterAware = true
	return resp.AppendBulkString(out, clusterNodes(cl))
}

// clusterInfo is CLUSTER INFO.
func (c *conn) clusterInfo(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	if c.srv.cfg.Cluster == nil {
		return appendError(out, errClusterDisabled)
	}
	return resp.AppendBulkString(out, c.srv.clusterInfo())
}

// clusterMyID is CLUSTER MYID.
func (c *conn) clusterMyID(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	cl := c.srv.cfg.Cluster
	if cl == nil {
		return appendError(out, errClusterDisabled)
	}
	return resp.AppendBulkString(out, cl.Self().RedisID())
}

// ClusterChanger is what a cluster that changes its membership and
// placement online offers (cluster.RaftShards). Each call returns once the
// change is committed in the cluster's catalogue, or within the request
// timeout with an error.
type ClusterChanger interface {
	MoveShard(ctx context.Context, shard int, from, to string) error
	Rebalance(ctx context.Context, dryRun bool) ([]string, error)
	Forget(ctx context.Context, id string, force bool) error
	// RebalanceStatus describes the current or last rebalance, without
	// waiting (CLUSTER REBALANCE STATUS, INFO).
	RebalanceStatus() cluster.RebalanceStatus
}

// clusterChanger is the cluster's changer, nil (and the error to answer)
// when this node is no cluster's or its cluster cannot change.
func (c *conn) clusterChanger() (ClusterChanger, error) {
	if c.srv.cfg.Cluster == nil || c.srv.cfg.ClusterChanges == nil {
		return nil, errClusterDisabled
	}
	return c.srv.cfg.ClusterChanges, nil
}

// clusterMoveShard is CLUSTER MOVESHARD shard from to.
func (c *conn) clusterMoveShard(_ *commands.Spec, args [][]byte, out []byte) []byte {
	ch, err := c.clusterChanger()
	if err != nil {
		return appendError(out, err)
	}
	shard, ok := commands.ParseInt(args[2]) // as Redis parses integers: no "+1", no "01"
	if !ok {
		return appendError(out, commands.ErrNotInteger)
	}
	if err := ch.MoveShard(context.Background(), int(shard), string(args[3]), string(args[4])); err != nil {
		return appendChangeError(out, err)
	}
	return resp.AppendOK(out)
}

// clusterRebalance is CLUSTER REBALANCE [DRYRUN | STATUS]: the steps
// taken, or planned, or the rebalance's state.
func (c *conn) clusterRebalance(_ *commands.Spec, args [][]byte, out []byte) []byte {
	ch, err := c.clusterChanger()
	if err != nil {
		return appendError(out, err)
	}
	dry := false
	switch {
	case len(args) == 3 && strings.EqualFold(string(args[2]), "dryrun"):
		dry = true
	case len(args) == 3 && strings.EqualFold(string(args[2]), "status"):
		return appendRebalanceStatus(out, ch.RebalanceStatus(), c.resp3.Load())
	case len(args) > 2:
		return appendError(out, commands.ErrSyntax)
	}
	steps, err := ch.Rebalance(context.Background(), dry)
	if err != nil {
		return appendChangeError(out, err)
	}
	return resp.AppendBulkStrings(out, steps)
}

// appendChangeError answers a change of the cluster that failed: with the
// word of its kind (ERR for a refusal, TRYAGAIN when a retry may mend it),
// and ERR for any other (a peer's answer that did not decode), never with
// a first word of its text.
func appendChangeError(out []byte, err error) []byte {
	if errorWord(err) == "" {
		return resp.AppendError(out, "ERR", err.Error())
	}
	return appendError(out, err)
}

// appendRebalanceStatus is CLUSTER REBALANCE STATUS: a map (a flat array
// in RESP2) of the rebalance's state, why, the nodes it waits for, when it
// began and who began it, its steps, when it ended and why, and the plan
// as it stands.
func appendRebalanceStatus(out []byte, st cluster.RebalanceStatus, resp3 bool) []byte {
	out = resp.AppendMap(out, 9, resp3)
	for _, kv := range [][2]string{{"state", st.State}, {"reason", st.Reason}} {
		out = resp.AppendBulkString(out, kv[0])
		out = resp.AppendBulkString(out, kv[1])
	}
	out = resp.AppendBulkString(out, "waiting-for")
	out = resp.AppendBulkStrings(out, st.WaitingFor)
	out = resp.AppendBulkString(out, "began")
	out = resp.AppendInt(out, st.Run.Began)
	out = resp.AppendBulkString(out, "by")
	out = resp.AppendBulkString(out, st.Run.By)
	out = resp.AppendBulkString(out, "steps")
	out = resp.AppendInt(out, int64(st.Run.Steps))
	out = resp.AppendBulkString(out, "ended")
	out = resp.AppendInt(out, st.Run.Ended)
	out = resp.AppendBulkString(out, "outcome")
	out = resp.AppendBulkString(out, st.Run.Outcome)
	out = resp.AppendBulkString(out, "plan")
	return resp.AppendBulkStrings(out, st.Plan)
}

// clusterForget is CLUSTER FORGET node-id [FORCE].
func (c *conn) clusterForget(_ *commands.Spec, args [][]byte, out []byte) []byte {
	ch, err := c.clusterChanger()
	if err != nil {
		return appendError(out, err)
	}
	force := false
	switch {
	case len(args) == 4 && strings.EqualFold(string(args[3]), "force"):
		force = true
	case len(args) > 3:
		return appendError(out, commands.ErrSyntax)
	}
	if err := ch.Forget(context.Background(), string(args[2]), force); err != nil {
		return appendChangeError(out, err)
	}
	return resp.AppendOK(out)
}

// checkRoute applies the cluster's rules to a keyed command: its keys must
// share a slot, and a cluster client is sent to the slot's leader with MOVED.
// A standalone server has no rules.
func (c *conn) checkRoute(spec *commands.Spec, args [][]byte) error {
	cl := c.srv.cfg.Cluster
	if cl == nil && !spec.SameSlot {
		return nil
	}
	slot := -1
	var err error
	spec.Keys(args, func(k []byte) {
		s := int(cluster.Slot(k))
		if slot >= 0 && s != slot {
			err = commands.ErrCrossSlot
		}
		slot = s
	})
	if err != nil || slot < 0 || cl == nil || !c.clusterAware {
		return err
	}
	leader, local, known := cl.Leader(c.srv.shards.ShardOf(uint16(slot)))
	if known && !local {
		return fmt.Errorf("MOVED %d %s", slot, leader.Client)
	}
	return nil
}

// hostPort splits a member's client address for the topology replies.
func hostPort(addr string) (string, int64) {
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		return addr, 0
	}
	p, _ := strconv.ParseInt(port, 10, 64)
	return host, p
}

// appendClusterSlots is CLUSTER SLOTS: for each shard, its slot range, its
// leader and its followers, each [ip, port, id, metadata].
func appendClusterSlots(out []byte, views []cluster.ShardView, resp3 bool) []byte {
	out = resp.AppendArray(out, len(views))
	for _, v := range views {
		out = resp.AppendArray(out, 2+len(v.Replicas))
		out = resp.AppendInt(out, int64(v.First))
		out = resp.AppendInt(out, int64(v.Last))
		for _, m := range v.Replicas {
			host, port := hostPort(m.Client)
			out = resp.AppendArray(out, 4)
			out = resp.AppendBulkString(out, host)
			out = resp.AppendInt(out, port)
			out = resp.AppendBulkString(out, m.RedisID())
			out = resp.AppendMap(out, 0, resp3)
		}
	}
	return out
}

// appendClusterShards is CLUSTER SHARDS: for each shard, its slots and its
// nodes with their roles.
func appendClusterShards(out []byte, views []cluster.ShardView, resp3 bool) []byte {
	out = resp.AppendArray(out, len(views))
	for _, v := range views {
		out = resp.AppendMap(out, 2, resp3)
		out = resp.AppendBulkString(out, "slots")
		out = resp.AppendArray(out, 2)
		out = resp.AppendInt(out, int64(v.First))
		out = resp.AppendInt(out, int64(v.Last))
		out = resp.AppendBulkString(out, "nodes")
		out = resp.AppendArray(out, len(v.Replicas))
		for i, m := range v.Replicas {
			host, port := hostPort(m.Client)
			role, health, offset := "replica", "online", int64(0)
			if i == 0 {
				role = "master"
				if !v.LeaderKnown {
					health = "failed"
				}
			}
			if i < len(v.Health) { // the replica as the health poll last saw it
				health, offset = v.Health[i].Health, int64(v.Health[i].Applied)
			}
			out = resp.AppendMap(out, 7, resp3)
			for _, kv := range [][2]string{{"id", m.RedisID()}, {"ip", host}, {"endpoint", host}, {"role", role}, {"health", health}} {
				out = resp.AppendBulkString(out, kv[0])
				out = resp.AppendBulkString(out, kv[1])
			}
			out = resp.AppendBulkString(out, "port")
			out = resp.AppendInt(out, port)
			out = resp.AppendBulkString(out, "replication-offset")
			out = resp.AppendInt(out, offset)
		}
	}
	return out
}

// clusterNodes is CLUSTER NODES. Its format gives each node one role, but an
// rlserver node leads some shards and follows others; every node is shown as
// a master with the slots it leads, which is what redis-cli --cluster and
// redis-benchmark --cluster route by. A node that does not answer this one
// is flagged fail and disconnected, in Redis's words; a node being emptied
// by CLUSTER FORGET ... FORCE has no word of Redis's and shows in CLUSTER
// SHARDS instead.
func clusterNodes(cl Cluster) string {
	led := map[string][]string{}
	for _, v := range cl.Topology() {
		if v.LeaderKnown {
			led[v.Leader.ID] = append(led[v.Leader.ID], fmt.Sprintf("%d-%d", v.First, v.Last))
		}
	}
	var b strings.Builder
	self := cl.Self()
	for _, node := range cl.Nodes() {
		m := node.Member
		host, port := hostPort(m.Client)
		_, bus := hostPort(m.Bus)
		flags, link := "master", "connected"
		if m.ID == self.ID {
			flags = "myself,master"
		}
		if node.Failed {
			flags, link = flags+",fail", "disconnected"
		}
		fmt.Fprintf(&b, "%s %s:%d@%d %s - 0 0 0 %s", m.RedisID(), host, port, bus, flags, link)
		for _, r := range led[m.ID] {
			b.WriteString(" " + r)
		}
		b.WriteByte('\n')
	}
	return b.String()
}

// clusterInfo is CLUSTER INFO.
func (s *Server) clusterInfo() string {
	cl := s.cfg.Cluster
	slotsOK, leaders := 0, map[string]bool{}
	for _, v := range cl.Topology() {
		if v.LeaderKnown {
			slotsOK += v.Last - v.First + 1
			leaders[v.Leader.ID] = true
		}
	}
	state := "ok"
	if slotsOK < cluster.SlotCount {
		state = "fail"
	}
	var epoch uint64
	if s.cfg.Raft != nil {
		for _, st := range s.cfg.Raft.RaftStates() {
			epoch = max(epoch, st.Term)
		}
	}
	var b strings.Builder
	for _, kv := range []struct {
		k string
		v any
	}{
		{"cluster_state", state},
		{"cluster_slots_assigned", cluster.SlotCount},
		{"cluster_slots_ok", slotsOK},
		{"cluster_slots_pfail", 0},
		{"cluster_slots_fail", cluster.SlotCount - slotsOK},
		{"cluster_known_nodes", len(cl.Members())},
		{"cluster_size", len(leaders)},
		{"cluster_current_epoch", epoch},
		{"cluster_my_epoch", epoch},
		{"cluster_stats_messages_sent", 0},
		{"cluster_stats_messages_received", 0},
		{"total_cluster_links_buffer_limit_exceeded", 0},
	} {
		fmt.Fprintf(&b, "%s:%v\r\n", kv.k, kv.v)
	}
	return b.String()
}
