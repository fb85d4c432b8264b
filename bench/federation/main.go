// Command federation measures a federation of three regions, each a
// 3-node Raft cluster on this machine, joined through TCP proxies that
// delay every byte 50 ms each way (docs/federation.md#benchmark). It
// drives the skewed load (twice each limit, 60/20/20 then 80% in
// one region) on a strict token bucket, a strict sliding window and a
// relaxed sliding window, kills the leader of the strict keys' shard in
// one region (SIGKILL) a third of the way through, and then checks and
// reports: every aligned window of the strict window within its limit,
// the bucket within its bound, each home's ledger against the grants the
// clients saw (nothing granted twice), the relaxed overshoot, the rate
// used after the shift, and the latency of local decisions.
//
//	go run ./bench/federation                 # 24 s of load
//	go run ./bench/federation -duration 60s -delay 75ms
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/rlserver/rlserver/federation"
	"github.com/rlserver/rlserver/internal/rlproc"
	"github.com/rlserver/rlserver/internal/testnet"
)

const secret = "the benchmark federation's secret"

var regions = []string{"eu", "us", "ap"}

func main() {
	duration := flag.Duration("duration", 24*time.Second, "how long the load runs")
	delay := flag.Duration("delay", 50*time.Millisecond, "the delay of every link between regions, each way")
	kill := flag.Bool("kill", true, "kill the leader of the strict keys' shard in one region a third of the way through")
	flag.Parse()
	if err := run(*duration, *delay, *kill); err != nil {
		fmt.Fprintln(os.Stderr, "federation:", err)
		os.Exit(1)
	}
}

// fed is the running federation: each region's cluster, and the proxies
// by (from region, to region and node).
type fed struct {
	clusters map[string]*rlproc.Cluster
	proxies  map[[2]string]*testnet.DelayProxy
	delay    time.Duration
}

func run(duration, delay time.Duration, kill bool) error {
	work, err := os.MkdirTemp("", "bench-federation-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(work)
	bin := filepath.Join(work, "rlserver")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/rlserver").CombinedOutput(); err != nil {
		return fmt.Errorf("go build: %v\n%s", err, out)
	}
	f, err := start(work, bin, delay)
	defer f.stop()
	if err != nil {
		return err
	}
	b := newBench(f, duration)
	if kill {
		b.killAt = duration / 3
	}
	b.run()
	return b.report()
}

// start plans and starts every region's cluster and the proxies between
// them, and waits until every shard has a leader.
func start(work, bin string, delay time.Duration) (*fed, error) {
	f := &fed{clusters: map[string]*rlproc.Cluster{}, proxies: map[[2]string]*testnet.DelayProxy{}, delay: delay}
	for _, r := range regions {
		c, err := rlproc.PlanCluster(rlproc.ClusterConfig{Bin: bin, Dir: filepath.Join(work, r), Shards: 3})
		if err != nil {
			return f, err
		}
		f.clusters[r] = c
	}
	for _, from := range regions {
		for _, to := range regions {
			for _, n := range f.nodes(to) {
				if from == to {
					continue
				}
				p, err := testnet.NewDelayProxy(delay)
				if err != nil {
					return f, err
				}
				f.proxies[[2]string{from, to + "/" + n.ID}] = p
			}
		}
	}
	for _, r := range regions {
		var peers []string
		for _, to := range regions {
			for _, n := range f.nodes(to) {
				if to != r {
					peers = append(peers, to+"@"+f.proxies[[2]string{r, to + "/" + n.ID}].Addr())
				}
			}
		}
		for _, n := range f.nodes(r) {
			n.Config.Args = append(n.Config.Args, "--region", r, "--federation", strings.Join(peers, ","),
				"--federation-port", "0", "--federation-secret", secret)
		}
		if err := f.clusters[r].Start(rlproc.StartTimeout); err != nil {
			return f, err
		}
	}
	for _, r := range regions {
		if _, err := f.clusters[r].WaitHealthy(rlproc.HealthTimeout); err != nil {
			return f, fmt.Errorf("%s: %w", r, err)
		}
		for _, n := range f.nodes(r) {
			if err := f.target(r, n); err != nil {
				return f, err
			}
		}
	}
	return f, nil
}

var fedAddr = regexp.MustCompile(`msg="rlserver ready".* federation_addr=(\S+)`)

// target points the proxies to node n of region r at its federation port.
func (f *fed) target(r string, n *rlproc.Node) error {
	m := fedAddr.FindStringSubmatch(n.Process().Log())
	if m == nil {
		return fmt.Errorf("%s/%s logged no federation address", r, n.ID)
	}
	for k, p := range f.proxies {
		if k[1] == r+"/"+n.ID {
			p.SetTarget(m[1])
		}
	}
	return nil
}

// nodes are region r's nodes.
func (f *fed) nodes(r string) []*rlproc.Node { return f.clusters[r].Nodes }

// stop stops every node and proxy.
func (f *fed) stop() {
	for _, c := range f.clusters {
		c.Terminate(rlproc.StopTimeout)
	}
	for _, p := range f.proxies {
		p.Close()
	}
}

// home is key's home region.
func home(key string) string { return federation.Home([]byte(key), []string{"ap", "eu", "us"}) }

// leaderOf is the node of region r that leads key's shard.
func (f *fed) leaderOf(r, key string) (*rlproc.Node, error) {
	c := f.clusters[r]
	leaders := c.Leaders(context.Background())
	shard := shardOf(key, c.Shards)
	if l := leaders[shard]; l >= 0 {
		return c.Nodes[l], nil
	}
	return nil, fmt.Errorf("%s: shard %d has no leader", r, shard)
}
