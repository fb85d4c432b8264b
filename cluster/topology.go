package cluster

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"net"
	"strconv"
	"strings"
)

// Member is one node of a cluster.
type Member struct {
	ID     string // --node-id
	Client string // host:port clients connect to
	Bus    string // host:port nodes connect to (Raft and forwarding)
}

// RedisID is the member's 40-hex-digit id as Redis Cluster clients expect it,
// derived from its node id so it stays the same across restarts.
func (m Member) RedisID() string {
	sum := sha1.Sum([]byte(m.ID))
	return hex.EncodeToString(sum[:])
}

// BusPortOffset is how far above the client port the bus listens unless
// told otherwise, as Redis Cluster's bus does.
const BusPortOffset = 10000

// ParseMembers parses --cluster: "n1@127.0.0.1:6381,n2@127.0.0.1:6382,...".
// A member's bus is its client port plus BusPortOffset.
func ParseMembers(spec string) ([]Member, error) {
	var out []Member
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		id, addr, ok := strings.Cut(strings.TrimSpace(part), "@")
		if !ok || id == "" || addr == "" {
			return nil, fmt.Errorf("--cluster: %q is not id@host:port", part)
		}
		host, portText, err := net.SplitHostPort(addr)
		if err != nil {
			return nil, fmt.Errorf("--cluster: %q: %w", part, err)
		}
		port, err := strconv.Atoi(portText)
		if err != nil || port < 1 || port+BusPortOffset > 65535 {
			return nil, fmt.Errorf("--cluster: %q: the port must be from 1 to %d (the bus port is 10000 higher)", part, 65535-BusPortOffset)
		}
		if seen[id] || seen[addr] {
			return nil, fmt.Errorf("--cluster: %q appears twice", part)
		}
		seen[id], seen[addr] = true, true
		out = append(out, Member{ID: id, Client: addr, Bus: net.JoinHostPort(host, strconv.Itoa(port+BusPortOffset))})
	}
	if len(out) == 0 {
		return nil, fmt.Errorf("--cluster: no members")
	}
	return out, nil
}

// MaxReplicas is how many nodes hold each shard.
const MaxReplicas = 3

// Replicas returns the members holding shard: up to MaxReplicas, starting at
// member shard mod N, so shards spread evenly. The first is the shard's
// preferred leader; leaders are moved back to it when it is healthy.
func Replicas(members []Member, shard int) []Member {
	n := min(len(members), MaxReplicas)
	out := make([]Member, n)
	for i := range out {
		out[i] = members[(shard+i)%len(members)]
	}
	return out
}
