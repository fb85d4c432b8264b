package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// balanceTimeout bounds the wait for every shard's leadership to be back on
// its preferred node after a restart (rlserver hands it back once the node
// has answered the health polls for 10 s, within about 12 s). Past it the
// run goes on with the leaders as they are.
const balanceTimeout = 20 * time.Second

// openLog opens (appending) the log file rlserver.log in dir, which it
// makes: the servers' logs are kept for the report.
func openLog(dir string) (*os.File, error) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	return os.OpenFile(filepath.Join(dir, "rlserver.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
}

// server is one durable rlserver node, logging to a file.
type server struct {
	*rlproc.Process
	log *os.File
}

// startSingle starts one durable node in dir on a free port, with a
// password unless pass is "".
func startSingle(name, dir, pass string) (*server, error) {
	logFile, err := openLog(dir)
	if err != nil {
		return nil, err
	}
	args := []string{"--bind", "127.0.0.1", "--port", "0", "--data-dir", "data"}
	if pass != "" {
		args = append(args, "--requirepass", pass)
	}
	p, err := rlproc.Start(rlproc.Config{Bin: *rlserverBin, Dir: dir, Args: args, Output: logFile}, rlproc.StartTimeout)
	if err != nil {
		logFile.Close()
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return &server{Process: p, log: logFile}, nil
}

// stop stops the node with SIGTERM and closes its log.
func (s *server) stop() {
	if _, err := s.Terminate(rlproc.StopTimeout); err != nil {
		logf("  %s: %v", s.Addr, err)
	}
	s.log.Close()
}

// cluster is three nodes on loopback forming one rlserver cluster, each
// logging to a file in its directory.
type cluster struct {
	*rlproc.Cluster
	name   string
	logs   []*os.File
	killed bool // a node was killed since the flag was last cleared
}

// startCluster starts a three-node cluster of shards shards with the given
// Raft heartbeat (0: rlserver's default), and waits until it is healthy.
// A port found free can be taken by another process before rlserver binds
// it: then it starts again on other ports, in a clean directory (a data
// directory remembers its members' addresses), three times at most.
func startCluster(name, dir, pass string, shards int, heartbeat time.Duration) (*cluster, error) {
	var err error
	for range 3 {
		if err = os.RemoveAll(dir); err != nil {
			return nil, err
		}
		var c *cluster
		if c, err = startClusterOnce(name, dir, pass, shards, heartbeat); !errors.Is(err, rlproc.ErrAddrInUse) {
			return c, err
		}
		logf("  %s: %v; starting again on other ports", name, err)
	}
	return nil, err
}

func startClusterOnce(name, dir, pass string, shards int, heartbeat time.Duration) (*cluster, error) {
	rc, err := rlproc.PlanCluster(rlproc.ClusterConfig{
		Bin: *rlserverBin, Dir: dir, Shards: shards, Heartbeat: heartbeat, Password: pass,
	})
	if err != nil {
		return nil, err
	}
	c := &cluster{Cluster: rc, name: name}
	for _, n := range rc.Nodes {
		f, err := openLog(n.Config.Dir)
		if err != nil {
			c.stop()
			return nil, err
		}
		c.logs = append(c.logs, f)
		n.Config.Output = f
	}
	if _, err := c.waitHealthy(); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

// stop stops every node with SIGTERM and closes the logs.
func (c *cluster) stop() {
	if err := c.Terminate(rlproc.StopTimeout); err != nil {
		logf("  %s: %v", c.name, err)
	}
	for _, f := range c.logs {
		f.Close()
	}
}

// waitHealthy restarts the nodes that are down, then waits until the
// cluster is healthy, and for a while for the leaderships to be balanced
// again; it reports whether they are.
func (c *cluster) waitHealthy() (balanced bool, err error) {
	if err := c.Start(rlproc.StartTimeout); err != nil {
		return false, fmt.Errorf("%s: %w", c.name, err)
	}
	if _, err := c.WaitHealthy(rlproc.HealthTimeout); err != nil {
		return false, fmt.Errorf("%s not healthy after (re)start: %w", c.name, err)
	}
	if err := c.WaitBalanced(balanceTimeout); err != nil {
		logf("  %s: leaders %v, not on their preferred nodes: %v", c.name, c.Leaders(context.Background()), err)
		return false, nil
	}
	return true, nil
}

// slotRange is one shard's slots and the node leading it, from CLUSTER SLOTS.
type slotRange struct {
	start, end int
	leader     string // client address
}

// slotRanges reads CLUSTER SLOTS from the first running node, sorted by
// slot.
func (c *cluster) slotRanges(ctx context.Context) ([]slotRange, error) {
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		slots, err := n.Client().ClusterSlots(ctx).Result()
		if err != nil {
			return nil, fmt.Errorf("CLUSTER SLOTS on %s/%s: %w", c.name, n.ID, err)
		}
		var out []slotRange
		for _, s := range slots {
			if len(s.Nodes) == 0 {
				return nil, fmt.Errorf("CLUSTER SLOTS on %s/%s: range %d-%d has no node", c.name, n.ID, s.Start, s.End)
			}
			out = append(out, slotRange{s.Start, s.End, s.Nodes[0].Addr})
		}
		sort.Slice(out, func(i, j int) bool { return out[i].start < out[j].start })
		return out, nil
	}
	return nil, errors.New("no node is running")
}

// shardKeys returns, for each slot range in order, a key of that range
// written as a hash tag, so that suffixes added to it keep its slot:
// "{<prefix>s<i>-<n>}".
func (c *cluster) shardKeys(ctx context.Context, prefix string) ([]string, error) {
	ranges, err := c.slotRanges(ctx)
	if err != nil {
		return nil, err
	}
	var keys []string
	for i, r := range ranges {
		found := false
		for n := range 100000 {
			tag := fmt.Sprintf("%ss%d-%d", prefix, i, n)
			if s := keySlot(tag); s >= r.start && s <= r.end {
				keys = append(keys, "{"+tag+"}")
				found = true
				break
			}
		}
		if !found {
			return nil, fmt.Errorf("no key for slots %d-%d", r.start, r.end)
		}
	}
	return keys, nil
}

// killLeaderOf kills (SIGKILL) the node leading key's shard and returns its
// name and address. It first waits until CLUSTER SLOTS and the node's own
// INFO raft agree that it leads.
func (c *cluster) killLeaderOf(key string) (string, error) {
	ctx := context.Background()
	slot := keySlot(key)
	killed := ""
	err := poll.Wait(rlproc.HealthTimeout, fmt.Sprintf("an agreed leader for slot %d", slot), func() (bool, error) {
		ranges, err := c.slotRanges(ctx)
		if err != nil {
			return false, err
		}
		leaders := c.Leaders(ctx)
		for i, r := range ranges {
			if slot < r.start || slot > r.end {
				continue
			}
			if i < len(leaders) && leaders[i] >= 0 && c.Nodes[leaders[i]].Addr == r.leader {
				n := c.Nodes[leaders[i]]
				c.killed = true
				n.Process().Kill()
				killed = fmt.Sprintf("%s/%s (%s, leader of shard %d, slot %d)", c.name, n.ID, n.Addr, i, slot)
				return true, nil
			}
		}
		return false, fmt.Errorf("leaders %v, ranges %v", leaders, ranges)
	})
	return killed, err
}

// keySlot is Redis Cluster's slot of key: CRC16-XMODEM of the key, or of
// its hash tag, mod 16384.
func keySlot(key string) int {
	if i := strings.IndexByte(key, '{'); i >= 0 {
		if j := strings.IndexByte(key[i+1:], '}'); j > 0 {
			key = key[i+1 : i+1+j]
		}
	}
	var crc uint16
	for k := 0; k < len(key); k++ {
		crc ^= uint16(key[k]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return int(crc) % 16384
}
