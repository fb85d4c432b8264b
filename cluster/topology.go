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
	ID     string // the node's id, the same on every start
	Client string // host:port clients connect to
	Bus    string // host:port nodes connect to (Raft and forwarding)
}

// RedisID is the member's 40-hex-digit id as Redis Cluster clients expect it,
// derived from its node id so it stays the same across restarts.
func (m Member) RedisID() string {
	sum := sha1.Sum([]byte(m.ID))
	return hex.EncodeToString(sum[:])
}

// busPortOffset is how far above the client port the bus listens unless
// told otherwise, as Redis Cluster's bus does.
const busPortOffset = 10000

// ParseMembers parses a list of members: "n1@127.0.0.1:6381,n2@127.0.0.1:6382,...".
// A member's bus is its client port plus busPortOffset, unless the member
// names one, Redis Cluster style: "n1@127.0.0.1:6381@17381". Each member's
// host must be one the others reach it at (not 0.0.0.0), and no two members
// may share an id or an address. An error quotes the member at fault; the
// caller names the setting the list came from.
func ParseMembers(spec string) ([]Member, error) {
	var out []Member
	seen := map[string]bool{}
	for _, part := range strings.Split(spec, ",") {
		part = strings.TrimSpace(part)
		fields := strings.Split(part, "@")
		if len(fields) < 2 || len(fields) > 3 || fields[0] == "" {
			return nil, fmt.Errorf("%q is not id@host:port[@busport]", part)
		}
		id, addr := fields[0], fields[1]
		host, port, err := splitPort(addr)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", part, err)
		}
		if ip := net.ParseIP(host); host == "" || ip != nil && ip.IsUnspecified() {
			// Every node would name itself so: the others could not reach
			// it there, and Raft would take them all for one.
			return nil, fmt.Errorf("%q: %q is no address the other nodes can reach this node at: name its own (an IP or a host name)", part, host)
		}
		bus := port + busPortOffset
		if len(fields) == 3 {
			if bus, err = strconv.Atoi(fields[2]); err != nil || bus < 1 || bus > 65535 {
				return nil, fmt.Errorf("%q: the bus port must be from 1 to 65535", part)
			}
		} else if bus > 65535 {
			return nil, fmt.Errorf("%q: the bus port (client port + %d) would pass 65535; name one with @busport", part, busPortOffset)
		}
		busAddr := net.JoinHostPort(host, strconv.Itoa(bus))
		if seen[id] || seen[addr] || seen[busAddr] {
			return nil, fmt.Errorf("%q repeats an id or address", part)
		}
		seen[id], seen[addr], seen[busAddr] = true, true, true
		out = append(out, Member{ID: id, Client: addr, Bus: busAddr})
	}
	return out, nil
}

// splitPort splits host:port, requiring a port from 1 to 65535.
func splitPort(addr string) (string, int, error) {
	host, portText, err := net.SplitHostPort(addr)
	if err != nil {
		return "", 0, err
	}
	port, err := strconv.Atoi(portText)
	if err != nil || port < 1 || port > 65535 {
		return "", 0, fmt.Errorf("port %q must be from 1 to 65535", portText)
	}
	return host, port, nil
}

// MemberList is the membership as the data directory records it:
// "id@bus" for each member of a cluster, just the id for a single node.
func MemberList(members []Member) []string {
	if len(members) == 1 {
		return []string{members[0].ID}
	}
	out := make([]string, len(members))
	for i, m := range members {
		out[i] = m.ID + "@" + m.Bus
	}
	return out
}

// ClusterID identifies a cluster: every bus connection carries it, and
// nodes refuse connections from a node with another one, so a node of
// another cluster cannot join Raft groups it does not belong to.
type ClusterID [8]byte

// Fingerprint is the id of a cluster created from members with shards: a
// node configured with other members or another shard count has another.
func Fingerprint(members []Member, shards int) ClusterID {
	h := sha1.New()
	fmt.Fprintf(h, "%d", shards)
	for _, m := range MemberList(members) {
		fmt.Fprintf(h, ",%s", m)
	}
	var id ClusterID
	copy(id[:], h.Sum(nil))
	return id
}

// String is the id in hex, as the catalogue and the data directory write
// it.
func (id ClusterID) String() string { return hex.EncodeToString(id[:]) }

// ParseClusterID reads a cluster's id as String writes it.
func ParseClusterID(s string) (ClusterID, error) {
	var id ClusterID
	b, err := hex.DecodeString(s)
	if err != nil || len(b) != len(id) {
		return id, fmt.Errorf("a cluster id %q that does not read", s)
	}
	return ClusterID(b), nil
}

// MaxReplicas is how many nodes hold each shard at most.
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
