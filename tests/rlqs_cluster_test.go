package tests

import (
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"google.golang.org/grpc"

	"github.com/rlserver/rlserver/internal/rlproc"
	"github.com/rlserver/rlserver/internal/rlqssim"
)

// The leader of the bucket's shard killed (kill -9) while ten Envoys,
// spread over a three-node cluster, share its limit: the new leader knows
// every grant in force and grants none of it again, so the rates the
// Envoys enforce never add up to more than the limit, before, during or
// after the failover, and no 10 s admits more than the limit and the
// burst bound. The Envoys of the killed node go on with their last
// assignments, open a stream on the next node at their next report, and
// get their share back once their old grants have expired.
func TestRLQSLeaderKilledGrantsNothingTwice(t *testing.T) {
	const kill, end = 10 * time.Second, 24 * time.Second
	tc := newCluster(t, 1)
	dir := filepath.Join(t.TempDir(), "rls")
	writeRLSConfig(t, dir, rlqsConfig)
	ports := rlproc.Ports(t, len(tc.Nodes))
	for i, n := range tc.Nodes {
		n.Config.Args = append(n.Config.Args, "--grpc-port", strconv.Itoa(ports[i]), "--rls-config", dir)
	}
	tc.Launch(t)
	victim := tc.waitLeaders()[0]
	conns := make([]grpc.ClientConnInterface, len(tc.Nodes))
	for i := range tc.Nodes {
		conns[i] = dialGRPC(t, "127.0.0.1:"+strconv.Itoa(ports[i]))
	}
	f := rlqssim.NewFleet(rlqsEnvoys, "edge", rlqsInterval, rlqssim.DenyAll, rlqsBucket,
		func(i int) []grpc.ClientConnInterface { // Envoy i on node i % 3, then the next
			return []grpc.ClientConnInterface{conns[i%3], conns[(i+1)%3], conns[(i+2)%3]}
		})
	demand := skewedDemand(0) // the idle one awake from the start
	killed := make(chan struct{})
	time.AfterFunc(kill, func() { // the scenario's schedule (runFleet starts now)
		tc.kill(victim)
		close(killed)
	})
	samples := runFleet(t, f, demand, end)
	<-killed
	sum, at, taken := f.MaxSum()
	if sum > rlqsLimit {
		t.Errorf("at %v the Envoys' rates added up to %.0f, above the limit of %d", at, sum, rlqsLimit)
	}
	least, most := checkWindowsBound(t, f, end, 3)
	for _, s := range samples {
		if s.at >= kill-time.Second && int(s.at/time.Millisecond)%500 < 100 {
			t.Logf("%5v  %s", s.at, describeRates(s.rates))
		}
	}
	before, _ := f.Admitted(kill-5*time.Second, kill)
	during, _ := f.Admitted(kill, kill+5*time.Second)
	after, _ := f.Admitted(end-5*time.Second, end)
	t.Logf("killed n%d (the leader) at %v; admitted per 5 s: %d before, %d after the kill, %d at the end (limit 5,000); per 10 s %d to %d; largest sum of rates %.0f (of %d sums); %+v",
		victim+1, kill, before, during, after, least, most, sum, taken, f.Counts())
}
