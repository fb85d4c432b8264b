package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// Bounds on waiting for rlserver processes.
const (
	startTimeout  = 20 * time.Second
	stopTimeout   = 15 * time.Second
	healthTimeout = 30 * time.Second
	// balanceTimeout bounds the wait for every shard's leadership to be back
	// on its preferred node after a restart (rlserver hands it back within a
	// few seconds). Past it the run goes on with the leaders as they are.
	balanceTimeout = 20 * time.Second
)

// readyLine is the log line rlserver writes once it accepts clients.
var readyLine = regexp.MustCompile(`msg="rlserver ready".* addr=(\S+)`)

// node is one rlserver process, restartable with the same flags and data.
type node struct {
	name string
	args []string
	dir  string // working directory and data
	addr string // client address, host:port
	pass string // --requirepass, or ""

	mu    sync.Mutex
	cmd   *exec.Cmd
	done  chan struct{}
	log   *os.File
	ready chan string
}

func newNode(name, dir, addr, pass string, args []string) *node {
	return &node{name: name, dir: dir, addr: addr, pass: pass, args: args}
}

// start runs the process and waits for its ready line.
func (n *node) start() error {
	if err := os.MkdirAll(n.dir, 0o755); err != nil {
		return err
	}
	logf, err := os.OpenFile(filepath.Join(n.dir, "rlserver.log"), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return err
	}
	ready := make(chan string, 1)
	cmd := exec.Command(*rlserverBin, n.args...)
	cmd.Dir = n.dir
	cmd.Stdout = logf
	cmd.Stderr = &readyWatcher{w: logf, ready: ready}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return fmt.Errorf("start %s: %w", n.name, err)
	}
	done := make(chan struct{})
	go func() {
		cmd.Wait()
		logf.Close()
		close(done)
	}()
	n.mu.Lock()
	n.cmd, n.done, n.log = cmd, done, logf
	n.mu.Unlock()
	select {
	case addr := <-ready:
		if addr != n.addr {
			return fmt.Errorf("%s listens on %s, want %s", n.name, addr, n.addr)
		}
		return nil
	case <-done:
		return fmt.Errorf("%s exited before it was ready (%v); log: %s", n.name, cmd.ProcessState, n.logTail())
	case <-time.After(startTimeout):
		return fmt.Errorf("%s not ready after %v; log: %s", n.name, startTimeout, n.logTail())
	}
}

// running reports whether the process is up.
func (n *node) running() bool {
	n.mu.Lock()
	done := n.done
	n.mu.Unlock()
	if done == nil {
		return false
	}
	select {
	case <-done:
		return false
	default:
		return true
	}
}

// kill stops the process as kill -9 does and waits for it to exit.
func (n *node) kill() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGKILL)
	<-done
}

// stop sends SIGTERM and waits for the exit, killing it past stopTimeout.
func (n *node) stop() {
	n.mu.Lock()
	cmd, done := n.cmd, n.done
	n.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-done:
	case <-time.After(stopTimeout):
		cmd.Process.Kill()
		<-done
	}
}

// logTail is the end of the node's log, for error messages.
func (n *node) logTail() string {
	b, _ := os.ReadFile(filepath.Join(n.dir, "rlserver.log"))
	if len(b) > 2000 {
		b = b[len(b)-2000:]
	}
	return string(b)
}

// client is a go-redis client of the node for the driver's own queries:
// RESP2, no retries, short timeouts.
func (n *node) client() *redis.Client {
	return redis.NewClient(&redis.Options{
		Addr: n.addr, Password: n.pass, Protocol: 2, MaxRetries: -1,
		DialTimeout: time.Second, ReadTimeout: 5 * time.Second, WriteTimeout: time.Second,
	})
}

// readyWatcher copies the log and reports the address of the ready line.
type readyWatcher struct {
	w     *os.File
	ready chan string
	buf   []byte
	found bool
}

func (r *readyWatcher) Write(p []byte) (int, error) {
	r.w.Write(p)
	if r.found {
		return len(p), nil
	}
	r.buf = append(r.buf, p...)
	for {
		i := bytes.IndexByte(r.buf, '\n')
		if i < 0 {
			return len(p), nil
		}
		if m := readyLine.FindSubmatch(r.buf[:i]); m != nil {
			r.found = true
			r.ready <- string(m[1])
			r.buf = nil
			return len(p), nil
		}
		r.buf = r.buf[i+1:]
	}
}

// handedOut are the ports freePorts has returned in this run, never
// returned twice: clusters started at the same time get distinct ports.
var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// freePorts returns n loopback ports free at the time of asking.
func freePorts(n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		lns = append(lns, ln)
		if p := ln.Addr().(*net.TCPAddr).Port; !handedOut[p] {
			handedOut[p] = true
			ports = append(ports, p)
		}
	}
	return ports, nil
}

// retryOnPortClash starts something on free ports up to three times: a
// port found free can be taken by another process before rlserver binds
// it. Each attempt starts in a clean directory (a data directory remembers
// its members' addresses).
func retryOnPortClash[T any](name, dir string, start func() (T, error)) (T, error) {
	var v T
	var err error
	for range 3 {
		if err = os.RemoveAll(dir); err != nil {
			return v, err
		}
		if v, err = start(); err == nil || !strings.Contains(err.Error(), "address already in use") {
			return v, err
		}
		logf("  %s: %v; starting again on other ports", name, err)
	}
	return v, err
}

// startSingle starts one durable node, with a password unless pass is "".
func startSingle(name, dir, pass string) (*node, error) {
	return retryOnPortClash(name, dir, func() (*node, error) { return startSingleOnce(name, dir, pass) })
}

func startSingleOnce(name, dir, pass string) (*node, error) {
	ports, err := freePorts(1)
	if err != nil {
		return nil, err
	}
	addr := fmt.Sprintf("127.0.0.1:%d", ports[0])
	args := []string{"--bind", "127.0.0.1", "--port", strconv.Itoa(ports[0]), "--data-dir", filepath.Join(dir, "data")}
	if pass != "" {
		args = append(args, "--requirepass", pass)
	}
	n := newNode(name, dir, addr, pass, args)
	if err := n.start(); err != nil {
		n.stop()
		return nil, err
	}
	return n, nil
}

// cluster is three nodes on loopback forming one rlserver cluster.
type cluster struct {
	name   string
	nodes  []*node
	shards int
	killed bool // a node was killed since the flag was last cleared
}

// startCluster starts a three-node cluster of shards shards with the given
// Raft heartbeat (0: rlserver's default), and waits until it is healthy.
func startCluster(name, dir, pass string, shards int, heartbeat time.Duration) (*cluster, error) {
	return retryOnPortClash(name, dir, func() (*cluster, error) { return startClusterOnce(name, dir, pass, shards, heartbeat) })
}

func startClusterOnce(name, dir, pass string, shards int, heartbeat time.Duration) (*cluster, error) {
	ports, err := freePorts(6)
	if err != nil {
		return nil, err
	}
	var members []string
	for i := range 3 {
		members = append(members, fmt.Sprintf("n%d@127.0.0.1:%d@%d", i+1, ports[i], ports[3+i]))
	}
	c := &cluster{name: name, shards: shards}
	for i := range 3 {
		args := []string{
			"--node-id", fmt.Sprintf("n%d", i+1), "--bind", "127.0.0.1", "--port", strconv.Itoa(ports[i]),
			"--data-dir", "data", "--cluster", strings.Join(members, ","),
			"--shards", strconv.Itoa(shards),
		}
		if heartbeat != 0 {
			args = append(args, "--raft-heartbeat", heartbeat.String())
		}
		if pass != "" {
			args = append(args, "--requirepass", pass)
		}
		c.nodes = append(c.nodes, newNode(fmt.Sprintf("%s/n%d", name, i+1),
			filepath.Join(dir, fmt.Sprintf("n%d", i+1)), fmt.Sprintf("127.0.0.1:%d", ports[i]), pass, args))
	}
	errs := make(chan error, 3)
	for _, n := range c.nodes {
		go func() { errs <- n.start() }()
	}
	for range c.nodes {
		if err := <-errs; err != nil {
			c.stop()
			return nil, err
		}
	}
	if _, err := c.waitHealthy(); err != nil {
		c.stop()
		return nil, err
	}
	return c, nil
}

func (c *cluster) addrs() []string {
	var out []string
	for _, n := range c.nodes {
		out = append(out, n.addr)
	}
	return out
}

func (c *cluster) stop() {
	var wg sync.WaitGroup
	for _, n := range c.nodes {
		wg.Go(n.stop)
	}
	wg.Wait()
}

var shardLine = regexp.MustCompile(`shard_(\d+):state=(\w+),`)

// leaders returns, per shard, the index of the node that leads it by its
// own INFO raft (-1 if none or several).
func (c *cluster) leaders(ctx context.Context) []int {
	out := make([]int, c.shards)
	for i := range out {
		out[i] = -1
	}
	for i, n := range c.nodes {
		if !n.running() {
			continue
		}
		cl := n.client()
		info, err := cl.Info(ctx, "raft").Result()
		cl.Close()
		if err != nil {
			continue
		}
		for _, m := range shardLine.FindAllStringSubmatch(info, -1) {
			if m[2] != "leader" {
				continue
			}
			s, _ := strconv.Atoi(m[1])
			if s < len(out) {
				if out[s] != -1 {
					out[s] = -2 // two nodes believe they lead: a term is changing
				} else {
					out[s] = i
				}
			}
		}
	}
	return out
}

// healthy reports whether every node runs, every shard has one leader and
// every node's CLUSTER INFO says ok; balanced, whether every shard is led
// by its preferred node (shard s by node s mod 3).
func (c *cluster) healthy(ctx context.Context) (healthy, balanced bool) {
	for _, n := range c.nodes {
		if !n.running() {
			return false, false
		}
		cl := n.client()
		info, err := cl.ClusterInfo(ctx).Result()
		cl.Close()
		if err != nil || !strings.HasPrefix(info, "cluster_state:ok") {
			return false, false
		}
	}
	balanced = true
	for s, l := range c.leaders(ctx) {
		if l < 0 {
			return false, false
		}
		if l != s%len(c.nodes) {
			balanced = false
		}
	}
	return true, balanced
}

// waitHealthy restarts the nodes that are down, then waits until the
// cluster is healthy, and for a while for the leaderships to be balanced
// again; it reports whether they are.
func (c *cluster) waitHealthy() (balanced bool, err error) {
	for _, n := range c.nodes {
		if !n.running() {
			if err := n.start(); err != nil {
				return false, err
			}
		}
	}
	ctx := context.Background()
	start := time.Now()
	for {
		h, b := c.healthy(ctx)
		if h && (b || time.Since(start) > balanceTimeout) {
			if !b {
				logf("  %s: leaders %v, not on their preferred nodes after %v", c.name, c.leaders(ctx), balanceTimeout)
			}
			return b, nil
		}
		if !h && time.Since(start) > healthTimeout {
			return false, fmt.Errorf("%s not healthy %v after (re)start; leaders %v", c.name, healthTimeout, c.leaders(ctx))
		}
		time.Sleep(50 * time.Millisecond) // polling, with the deadlines above
	}
}

// slotRange is one shard's slots and the node leading it, from CLUSTER SLOTS.
type slotRange struct {
	start, end int
	leader     string // client address
}

// slotRanges reads CLUSTER SLOTS from the first running node, sorted by
// slot.
func (c *cluster) slotRanges(ctx context.Context) ([]slotRange, error) {
	for _, n := range c.nodes {
		if !n.running() {
			continue
		}
		cl := n.client()
		slots, err := cl.ClusterSlots(ctx).Result()
		cl.Close()
		if err != nil {
			return nil, fmt.Errorf("CLUSTER SLOTS on %s: %w", n.name, err)
		}
		var out []slotRange
		for _, s := range slots {
			if len(s.Nodes) == 0 {
				return nil, fmt.Errorf("CLUSTER SLOTS on %s: range %d-%d has no node", n.name, s.Start, s.End)
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
// name and address. It first checks that the node's INFO raft agrees.
func (c *cluster) killLeaderOf(key string) (string, error) {
	ctx := context.Background()
	slot := keySlot(key)
	deadline := time.Now().Add(healthTimeout)
	for {
		ranges, err := c.slotRanges(ctx)
		if err != nil {
			return "", err
		}
		leaders := c.leaders(ctx)
		for i, r := range ranges {
			if slot < r.start || slot > r.end {
				continue
			}
			if i < len(leaders) && leaders[i] >= 0 && c.nodes[leaders[i]].addr == r.leader {
				n := c.nodes[leaders[i]]
				c.killed = true
				n.kill()
				return fmt.Sprintf("%s (%s, leader of shard %d, slot %d)", n.name, n.addr, i, slot), nil
			}
		}
		if time.Now().After(deadline) {
			return "", fmt.Errorf("no agreed leader for slot %d within %v (leaders %v, ranges %v)", slot, healthTimeout, leaders, ranges)
		}
		time.Sleep(50 * time.Millisecond)
	}
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
