package rlproc

import (
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
)

// HealthTimeout bounds the wait for a cluster to become healthy after a
// start: elections on a busy machine.
const HealthTimeout = 30 * time.Second

// ClusterConfig describes a cluster of rlserver nodes on loopback.
type ClusterConfig struct {
	// Bin is the rlserver binary.
	Bin string
	// Dir holds the nodes: node n<i> works in Dir/n<i>, its data in
	// Dir/n<i>/data.
	Dir string
	// Nodes is how many nodes; 0 means 3.
	Nodes int
	// Shards is --shards.
	Shards int
	// Heartbeat is --raft-heartbeat; 0 leaves rlserver's default.
	Heartbeat time.Duration
	// Password, if set, is --requirepass; the harness's own queries
	// authenticate with it.
	Password string
	// Args are more flags for every node.
	Args []string
	// Hosts, when set, gives each node (as many as Hosts) a host of its
	// own instead of a port on 127.0.0.1: every node then serves clients
	// on HostPort at its host's IP and listens for the bus on every
	// address at HostBusPort (--bus-listen 0.0.0.0:HostBusPort), as nodes
	// in containers do.
	Hosts []Host
}

// Host is a machine of its own for one node: the address the others reach
// it at, and the command prefix that runs a program there (ip netns exec
// NAME, for a network namespace a test made).
type Host struct {
	IP   string
	Wrap []string
}

// The ports every node on a Host of its own uses.
const (
	HostPort    = 6380
	HostBusPort = 16380
)

// Cluster is rlserver nodes on loopback forming one cluster. Shard s
// prefers node s mod len(Nodes) as its leader (cluster.Replicas orders the
// replicas so), and the cluster hands leadership back to it after a start.
type Cluster struct {
	// Shards is the number of shards.
	Shards int
	// Nodes are the members, in the order --cluster names them, then the
	// nodes Join added.
	Nodes []*Node

	cfg  ClusterConfig // as planned, Dir absolute
	next int           // the number of the next node Join plans
}

// Node is one member of a Cluster. Its identity, addresses and command
// line are fixed when the cluster is planned, so it restarts with the same
// settings and data; each start is a new Process.
type Node struct {
	// ID is its --node-id: n1, n2, ...
	ID string
	// Addr is the host:port it serves clients on.
	Addr string
	// BusAddr is its Raft bus address as --cluster names it.
	BusAddr string
	// Config is how it starts. A test may change it (add flags, a Wrap)
	// while the node is down.
	Config Config

	password string

	mu    sync.Mutex
	proc  *Process      // the latest start, nil before the first
	query *redis.Client // the harness's own client of the node, made on first use
}

// PlanCluster picks the ports of a cluster and each node's command line,
// and makes the nodes' directories, without starting anything.
func PlanCluster(cfg ClusterConfig) (*Cluster, error) {
	if len(cfg.Hosts) > 0 {
		return planOnHosts(cfg)
	}
	n := cfg.Nodes
	if n == 0 {
		n = 3
	}
	// Absolute: rlserver runs in the node's directory and names its data
	// directory in its messages.
	root, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	ports, err := freePorts(2 * n)
	if err != nil {
		return nil, err
	}
	var members []string
	for i := range n {
		members = append(members, memberSpec(fmt.Sprintf("n%d", i+1), ports[i], ports[n+i]))
	}
	cfg.Dir = root
	c := &Cluster{Shards: cfg.Shards, cfg: cfg, next: n + 1}
	for i := range n {
		node, err := c.planNode(fmt.Sprintf("n%d", i+1), "127.0.0.1", ports[i], members)
		if err != nil {
			return nil, err
		}
		node.BusAddr = loopback(ports[n+i])
		c.Nodes = append(c.Nodes, node)
	}
	return c, nil
}

// planOnHosts plans a cluster whose nodes each have a host of their own
// (cfg.Hosts), on the same ports.
func planOnHosts(cfg ClusterConfig) (*Cluster, error) {
	root, err := filepath.Abs(cfg.Dir)
	if err != nil {
		return nil, err
	}
	var members []string
	for i, h := range cfg.Hosts {
		members = append(members, fmt.Sprintf("n%d@%s@%d", i+1, net.JoinHostPort(h.IP, strconv.Itoa(HostPort)), HostBusPort))
	}
	cfg.Dir = root
	c := &Cluster{Shards: cfg.Shards, cfg: cfg, next: len(cfg.Hosts) + 1}
	for i, h := range cfg.Hosts {
		node, err := c.planNode(fmt.Sprintf("n%d", i+1), h.IP, HostPort, members)
		if err != nil {
			return nil, err
		}
		node.BusAddr = net.JoinHostPort(h.IP, strconv.Itoa(HostBusPort))
		node.Config.Wrap = h.Wrap
		node.Config.Args = append(node.Config.Args, "--bus-listen", fmt.Sprintf("0.0.0.0:%d", HostBusPort))
		c.Nodes = append(c.Nodes, node)
	}
	return c, nil
}

// planNode makes node id's directory and command line: it serves clients
// at host:port, and is one of members (--cluster).
func (c *Cluster) planNode(id, host string, port int, members []string) (*Node, error) {
	dir := filepath.Join(c.cfg.Dir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	args := []string{
		"--node-id", id, "--bind", host, "--port", strconv.Itoa(port),
		"--data-dir", filepath.Join(dir, "data"), "--cluster", strings.Join(members, ","),
		"--shards", strconv.Itoa(c.cfg.Shards),
	}
	if c.cfg.Heartbeat != 0 {
		args = append(args, "--raft-heartbeat", c.cfg.Heartbeat.String())
	}
	if c.cfg.Password != "" {
		args = append(args, "--requirepass", c.cfg.Password)
	}
	return &Node{
		ID:       id,
		Addr:     net.JoinHostPort(host, strconv.Itoa(port)),
		Config:   Config{Bin: c.cfg.Bin, Dir: dir, Args: append(args, c.cfg.Args...)},
		password: c.cfg.Password,
	}, nil
}

// loopback is the address of port on 127.0.0.1.
func loopback(port int) string { return fmt.Sprintf("127.0.0.1:%d", port) }

// memberSpec is a node as --cluster names it: id@host:port@busport.
func memberSpec(id string, port, bus int) string {
	return fmt.Sprintf("%s@%s@%d", id, loopback(port), bus)
}

// replan gives every node other ports and an empty data directory, for a
// first start that found a planned port taken (ErrAddrInUse): a port free
// when planned can be taken before a node binds it. Every node must be
// down. The flags a test added are kept; --port and --cluster change.
func (c *Cluster) replan() error {
	if len(c.cfg.Hosts) > 0 {
		return errors.New("replan: nodes on hosts of their own use the same ports, which were taken")
	}
	n := len(c.Nodes)
	ports, err := freePorts(2 * n)
	if err != nil {
		return err
	}
	var members []string
	for i, node := range c.Nodes {
		members = append(members, memberSpec(node.ID, ports[i], ports[n+i]))
	}
	for i, node := range c.Nodes {
		if node.Running() {
			return fmt.Errorf("replan: %s is running", node.ID)
		}
		node.closeClient()
		node.Addr, node.BusAddr = loopback(ports[i]), loopback(ports[n+i])
		args := node.Config.Args
		for j := 0; j+1 < len(args); j++ {
			switch args[j] {
			case "--port":
				args[j+1] = strconv.Itoa(ports[i])
			case "--cluster":
				args[j+1] = strings.Join(members, ",")
			}
		}
		// What a node that did start wrote names the old addresses.
		if err := os.RemoveAll(node.DataDir()); err != nil {
			return err
		}
	}
	return nil
}

// Join plans a new node, n<next>, that joins the cluster through the
// running node via (--join, with the cluster's settings and Args, and
// extra), appends it to Nodes and returns it, without starting it.
func (c *Cluster) Join(via *Node, extra ...string) (*Node, error) {
	ports, err := freePorts(2)
	if err != nil {
		return nil, err
	}
	return c.join(via, "127.0.0.1", ports[0], ports[1], nil, extra)
}

// JoinOnHost is Join for a node on a host of its own, h, on the same ports
// as the nodes of a cluster planned on Hosts: it listens for the bus on
// every address of its host.
func (c *Cluster) JoinOnHost(via *Node, h Host, extra ...string) (*Node, error) {
	extra = append([]string{"--bus-listen", fmt.Sprintf("0.0.0.0:%d", HostBusPort)}, extra...)
	return c.join(via, h.IP, HostPort, HostBusPort, h.Wrap, extra)
}

// join plans node n<next>, serving clients at host:port and the bus at
// host:bus, run through wrap.
func (c *Cluster) join(via *Node, host string, port, bus int, wrap, extra []string) (*Node, error) {
	id := fmt.Sprintf("n%d", c.next)
	c.next++
	dir := filepath.Join(c.cfg.Dir, id)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	addr := net.JoinHostPort(host, strconv.Itoa(port))
	_, viaBus, err := net.SplitHostPort(via.BusAddr)
	if err != nil {
		return nil, fmt.Errorf("%s's bus address: %w", via.ID, err)
	}
	args := []string{
		"--node-id", id, "--bind", host, "--port", strconv.Itoa(port),
		"--data-dir", filepath.Join(dir, "data"), "--join", via.Addr + "@" + viaBus,
		"--announce", fmt.Sprintf("%s@%d", addr, bus),
	}
	if c.cfg.Heartbeat != 0 {
		args = append(args, "--raft-heartbeat", c.cfg.Heartbeat.String())
	}
	if c.cfg.Password != "" {
		args = append(args, "--requirepass", c.cfg.Password)
	}
	args = append(append(args, c.cfg.Args...), extra...)
	n := &Node{
		ID:       id,
		Addr:     addr,
		BusAddr:  net.JoinHostPort(host, strconv.Itoa(bus)),
		Config:   Config{Bin: c.cfg.Bin, Dir: dir, Wrap: wrap, Args: args},
		password: c.cfg.Password,
	}
	c.Nodes = append(c.Nodes, n)
	return n, nil
}

// Start starts the node as its Config says and returns once it is ready,
// as the package's Start does; the error also says when it serves on
// another address than Addr (it is then stopped).
func (n *Node) Start(timeout time.Duration) (*Process, error) {
	p, err := Start(n.Config, timeout)
	if p != nil {
		n.mu.Lock()
		n.proc = p
		n.mu.Unlock()
	}
	if err != nil {
		return p, fmt.Errorf("%s: %w", n.ID, err)
	}
	if p.Addr != n.Addr {
		_, _ = p.Terminate(StopTimeout) // the mismatch is the error to report
		return p, fmt.Errorf("%s serves on %s, not %s", n.ID, p.Addr, n.Addr)
	}
	return p, nil
}

// Process is the node's latest start, nil before the first.
func (n *Node) Process() *Process {
	n.mu.Lock()
	defer n.mu.Unlock()
	return n.proc
}

// Running reports whether the node's process runs.
func (n *Node) Running() bool {
	p := n.Process()
	return p != nil && p.running()
}

// DataDir is the node's data directory.
func (n *Node) DataDir() string { return filepath.Join(n.Config.Dir, "data") }

// RaftState is one shard's replica on a node, as its INFO raft says.
type RaftState struct {
	State string // leader, follower, candidate
	Term  int64
}

var raftLine = regexp.MustCompile(`shard_(\d+):state=(\w+),term=(\d+),`)

// RaftStates reads the node's INFO raft, per shard. It waits a second at
// most, so a frozen or cut off node does not hold its caller up.
func (n *Node) RaftStates(ctx context.Context) (map[int]RaftState, error) {
	info, err := n.Client().Info(ctx, "raft").Result()
	if err != nil {
		return nil, fmt.Errorf("%s: INFO raft: %w", n.ID, err)
	}
	out := map[int]RaftState{}
	for _, m := range raftLine.FindAllStringSubmatch(info, -1) {
		shard, _ := strconv.Atoi(m[1])
		term, _ := strconv.ParseInt(m[3], 10, 64)
		out[shard] = RaftState{State: m[2], Term: term}
	}
	return out, nil
}

// Client is the harness's own client of the node, for questions such as
// INFO or CLUSTER SLOTS: RESP2, the cluster's password, no retries, short
// timeouts. It is made once and kept, so that polling opens no connection
// per question, and closed by Terminate (or when the test ends).
func (n *Node) Client() *redis.Client {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.query == nil {
		n.query = redis.NewClient(&redis.Options{
			Addr: n.Addr, Password: n.password, Protocol: 2, MaxRetries: -1,
			DialTimeout: time.Second, ReadTimeout: time.Second, WriteTimeout: time.Second,
		})
	}
	return n.query
}

// closeClient closes the harness's client of the node.
func (n *Node) closeClient() {
	n.mu.Lock()
	defer n.mu.Unlock()
	if n.query != nil {
		n.query.Close()
		n.query = nil
	}
}

// Addrs are the nodes' client addresses.
func (c *Cluster) Addrs() []string {
	var out []string
	for _, n := range c.Nodes {
		out = append(out, n.Addr)
	}
	return out
}

// Start starts every node that is not running, all at once, and returns
// once each is ready; the error joins every node's that is not. It does not
// wait for leaders (see WaitHealthy).
func (c *Cluster) Start(timeout time.Duration) error {
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		if !n.Running() {
			wg.Go(func() { _, errs[i] = n.Start(timeout) })
		}
	}
	wg.Wait()
	return errors.Join(errs...)
}

// Terminate stops every running node with SIGTERM, all at once, and closes
// the harness's clients of the nodes; the error joins every node's that did
// not exit 0.
func (c *Cluster) Terminate(timeout time.Duration) error {
	errs := make([]error, len(c.Nodes))
	var wg sync.WaitGroup
	for i, n := range c.Nodes {
		if p := n.Process(); p != nil && p.running() {
			wg.Go(func() {
				code, err := p.Terminate(timeout)
				if err == nil && code != 0 {
					err = fmt.Errorf("exited %d after SIGTERM", code)
				}
				if err != nil {
					errs[i] = fmt.Errorf("%s: %w", n.ID, err)
				}
			})
		}
	}
	wg.Wait()
	c.closeClients()
	return errors.Join(errs...)
}

// closeClients closes the harness's clients of every node.
func (c *Cluster) closeClients() {
	for _, n := range c.Nodes {
		n.closeClient()
	}
}

// preferred is the node shard prefers as its leader.
func (c *Cluster) preferred(shard int) int { return shard % len(c.Nodes) }

// Leaders returns, per shard, the index of the node that leads it by its
// own INFO raft: -1 if no running node does, -2 if several do (a term is
// changing). A node that is down or does not answer is passed over.
func (c *Cluster) Leaders(ctx context.Context) []int {
	out := make([]int, c.Shards)
	for i := range out {
		out[i] = -1
	}
	for i, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		states, err := n.RaftStates(ctx)
		if err != nil {
			continue
		}
		for shard, st := range states {
			if st.State != "leader" || shard >= len(out) {
				continue
			}
			if out[shard] == -1 {
				out[shard] = i
			} else {
				out[shard] = -2
			}
		}
	}
	return out
}

// health returns the shards' leaders (see Leaders), and an error that says
// what is wrong unless every shard has one leader and every running node
// knows a leader for every slot (CLUSTER INFO says cluster_state:ok).
func (c *Cluster) health(ctx context.Context) ([]int, error) {
	for _, n := range c.Nodes {
		if !n.Running() {
			continue
		}
		info, err := n.Client().ClusterInfo(ctx).Result()
		if err != nil {
			return nil, fmt.Errorf("%s: CLUSTER INFO: %w", n.ID, err)
		}
		if !strings.HasPrefix(info, "cluster_state:ok") {
			return nil, fmt.Errorf("%s: %s", n.ID, strings.TrimSpace(strings.SplitN(info, "\n", 2)[0]))
		}
	}
	leaders := c.Leaders(ctx)
	for shard, l := range leaders {
		if l < 0 {
			return leaders, fmt.Errorf("shard %d has no single leader (leaders %v)", shard, leaders)
		}
	}
	return leaders, nil
}

// WaitHealthy waits until the cluster is healthy (see health) and returns
// the shards' leaders.
func (c *Cluster) WaitHealthy(timeout time.Duration) ([]int, error) {
	var leaders []int
	err := poll.Wait(timeout, "every shard of the cluster to have a leader", func() (bool, error) {
		var err error
		leaders, err = c.health(context.Background())
		return err == nil, err
	})
	return leaders, err
}

// WaitBalanced waits until the cluster is healthy and every shard is led
// by its preferred node, where the cluster brings leadership after a
// start: from then on it moves only when something makes it.
func (c *Cluster) WaitBalanced(timeout time.Duration) error {
	return poll.Wait(timeout, "every shard to be led by its preferred node", func() (bool, error) {
		leaders, err := c.health(context.Background())
		if err != nil {
			return false, err
		}
		for shard, l := range leaders {
			if l != c.preferred(shard) {
				return false, fmt.Errorf("leaders %v", leaders)
			}
		}
		return true, nil
	})
}
