package rlproc

import (
	"context"
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/redis/go-redis/v9"
)

// RedisID is the id CLUSTER NODES and CLUSTER SHARDS give the node whose
// --node-id is id: the SHA-1 of id, in hex.
func RedisID(id string) string {
	sum := sha1.Sum([]byte(id))
	return hex.EncodeToString(sum[:])
}

// Replica is one replica of a shard, as CLUSTER SHARDS shows it.
type Replica struct {
	// Node is the replica's node id (n1, ...), "" for a node the Cluster
	// does not know.
	Node string
	// Role is "master" for the shard's leader, "replica" otherwise.
	Role string
	// Health is "online", "loading" or "failed".
	Health string
}

func (r Replica) String() string { return r.Node + "/" + r.Role + "/" + r.Health }

// Placement reads CLUSTER SHARDS through node via: per shard, its replicas
// (the leader first).
func (c *Cluster) Placement(ctx context.Context, via *Node) ([][]Replica, error) {
	out, err := PlacementVia(ctx, via.Client(), c.byRedisID())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", via.ID, err)
	}
	return out, nil
}

// PlacementVia reads CLUSTER SHARDS through the node rc is a client of:
// per shard, its replicas (the leader first), each named by ids (from the
// id CLUSTER SHARDS gives it to its node id; see ByRedisID).
func PlacementVia(ctx context.Context, rc *redis.Client, ids map[string]string) ([][]Replica, error) {
	v, err := rc.Do(ctx, "CLUSTER", "SHARDS").Slice()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER SHARDS: %w", err)
	}
	var out [][]Replica
	for _, s := range v {
		nodes, _ := fields(s)["nodes"].([]any)
		var reps []Replica
		for _, n := range nodes {
			f := fields(n)
			id, _ := f["id"].(string)
			role, _ := f["role"].(string)
			health, _ := f["health"].(string)
			reps = append(reps, Replica{Node: ids[id], Role: role, Health: health})
		}
		out = append(out, reps)
	}
	return out, nil
}

// Members reads CLUSTER NODES through node via: the ids of the nodes it
// lists (the hex id CLUSTER NODES gives, for a node the Cluster does not
// know), sorted.
func (c *Cluster) Members(ctx context.Context, via *Node) ([]string, error) {
	out, err := MembersVia(ctx, via.Client(), c.byRedisID())
	if err != nil {
		return nil, fmt.Errorf("%s: %w", via.ID, err)
	}
	return out, nil
}

// MembersVia reads CLUSTER NODES through the node rc is a client of: the
// ids of the nodes it lists, named by ids as PlacementVia names them (the
// hex id CLUSTER NODES gives, for a node ids does not know), sorted.
func MembersVia(ctx context.Context, rc *redis.Client, ids map[string]string) ([]string, error) {
	text, err := rc.ClusterNodes(ctx).Result()
	if err != nil {
		return nil, fmt.Errorf("CLUSTER NODES: %w", err)
	}
	var out []string
	for _, line := range strings.Split(strings.TrimSpace(text), "\n") {
		id := strings.Fields(line)[0]
		if known, ok := ids[id]; ok {
			id = known
		}
		out = append(out, id)
	}
	slices.Sort(out)
	return out, nil
}

// byRedisID maps the id CLUSTER SHARDS and NODES give each node of the
// Cluster to its node id.
func (c *Cluster) byRedisID() map[string]string {
	var names []string
	for _, n := range c.Nodes {
		names = append(names, n.ID)
	}
	return ByRedisID(names...)
}

// ByRedisID maps the id CLUSTER SHARDS and NODES give each of the node ids
// to the node id.
func ByRedisID(nodeIDs ...string) map[string]string {
	ids := make(map[string]string, len(nodeIDs))
	for _, id := range nodeIDs {
		ids[RedisID(id)] = id
	}
	return ids
}

// fields reads a reply of names and values: a RESP2 flat array, or a
// RESP3 map.
func fields(v any) map[string]any {
	out := map[string]any{}
	switch x := v.(type) {
	case map[any]any:
		for k, val := range x {
			out[fmt.Sprint(k)] = val
		}
	case []any:
		for i := 0; i+1 < len(x); i += 2 {
			out[fmt.Sprint(x[i])] = x[i+1]
		}
	}
	return out
}
