package cluster

import (
	"strings"
	"testing"
)

func TestParseMembers(t *testing.T) {
	m, err := ParseMembers("n1@127.0.0.1:6381,n2@127.0.0.1:6382,n3@127.0.0.1:6383")
	if err != nil || len(m) != 3 || m[1] != (Member{ID: "n2", Client: "127.0.0.1:6382", Bus: "127.0.0.1:16382"}) {
		t.Fatalf("%+v %v", m, err)
	}
	if m, err := ParseMembers("n1@10.0.0.1:6381@17000"); err != nil || m[0].Bus != "10.0.0.1:17000" {
		t.Fatalf("named bus port: %+v %v", m, err)
	}
	for _, bad := range []string{"", "n1", "n1@", "@127.0.0.1:1", "n1@127.0.0.1", "n1@h:0", "n1@h:60000",
		"n1@h:1@0", "n1@h:1@x", "n1@h:1@2@3", "n1@127.0.0.1:6381,n1@127.0.0.1:6382",
		"n1@127.0.0.1:6381,n2@127.0.0.1:6381", "n1@h:1@5,n2@h:2@5",
		// An address no other node can reach this one at: every node
		// would name itself so, and Raft would take them for one.
		"n1@0.0.0.0:6381", "n1@[::]:6381", "n1@:6381", "n1@h:1,n2@0.0.0.0:2"} {
		_, err := ParseMembers(bad)
		switch {
		case err == nil:
			t.Errorf("%q accepted", bad)
		case strings.Contains(err.Error(), "--"):
			t.Errorf("%q: %v names a flag; the caller knows where the list came from", bad, err)
		}
	}
	if id := m[0].RedisID(); len(id) != 40 || id == m[1].RedisID() {
		t.Errorf("redis id %q", id)
	}
}

func TestReplicasSpreadPreferredLeaders(t *testing.T) {
	m, _ := ParseMembers("a@h:1,b@h:2,c@h:3,d@h:4,e@h:5")
	leads := map[string]int{}
	for shard := range 10 {
		r := Replicas(m, shard)
		if len(r) != MaxReplicas {
			t.Fatalf("shard %d: %d replicas", shard, len(r))
		}
		leads[r[0].ID]++
	}
	for id, n := range leads {
		if n != 2 {
			t.Errorf("%s prefers to lead %d of 10 shards, want 2", id, n)
		}
	}
	if r := Replicas(m[:1], 3); len(r) != 1 || r[0].ID != "a" {
		t.Errorf("single node: %+v", r)
	}
}
