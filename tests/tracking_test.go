package tests

import (
	"strings"
	"testing"
)

// Client-side caching in a cluster: a connection tracking a key on any
// node hears of a write to it sent to any other node (forwarded to the
// shard's leader): on the leader, its replica applies the write before the
// writer's reply; on a follower, moments later.
func TestTrackingInvalidatesAcrossTheCluster(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 3)
	const shard = 1
	key := keyOnShard(t, tc.client(0), "cached", shard, tc.Shards)
	leader := tc.waitLeaders()[shard]
	writer := (leader + 2) % 3
	var readers []*rawConn
	for _, i := range []int{leader, (leader + 1) % 3} {
		c := dialRaw(t, tc.Nodes[i].Addr)
		c.send(command("HELLO", "3"))
		if got := c.reply(); !strings.HasPrefix(got, "%{") {
			t.Fatalf("node %d HELLO 3: %q", i+1, got)
		}
		for _, step := range [][2]string{
			{command("CLIENT", "TRACKING", "ON"), "+OK"},
			{command("GET", key), "_"},
		} {
			c.send(step[0])
			if got := c.reply(); got != step[1] {
				t.Fatalf("node %d %q: %q, want %q", i+1, step[0], got, step[1])
			}
		}
		readers = append(readers, c)
	}
	if err := tc.client(writer).Set(ctx(t), key, "v", 0).Err(); err != nil {
		t.Fatal(err)
	}
	want := ">[$invalidate *[$" + key + "]]"
	for i, c := range readers {
		if got := c.reply(); got != want {
			t.Fatalf("reader %d (leader first) got %q, want %q", i, got, want)
		}
	}
}
