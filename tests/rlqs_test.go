package tests

import (
	"fmt"
	"math"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlqssim"
)

// Envoy's quota service (RLQS) proven with simulated Envoys
// (internal/rlqssim: Envoy's filter as it behaves) over the real gRPC API
// of the real binary. Time is scaled down: Envoys report every second
// (Envoy's own filter reports every 5 s), on a limit of 1,000 requests a
// second.

const (
	rlqsLimit    = 1000 // requests a second
	rlqsEnvoys   = 10
	rlqsInterval = time.Second
	// rlqsBurst is the documented bound on what the Envoys admit beyond
	// the limit in any period, per change of the split: their buckets,
	// 100 ms of each one's rate, at least a token each
	// (docs/envoy.md#the-bound).
	rlqsBurst = rlqsLimit/10 + rlqsEnvoys
)

// rlqsConfig is the domain the Envoys report to: one bucket of the limit.
var rlqsConfig = map[string]string{"edge.yaml": fmt.Sprintf(`domain: edge
quota:
  - bucket: {name: api}
    rate_limit: {unit: second, requests_per_unit: %d}
`, rlqsLimit)}

// rlqsBucket is the Envoys' bucket id.
var rlqsBucket = map[string]string{"name": "api"}

// dialGRPC is a gRPC connection to addr, closed with the test.
func dialGRPC(t testing.TB, addr string) *grpc.ClientConn {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn
}

// skewedDemand is the demand of the proof, Envoy i's at since: Envoy 0
// wants half the limit, Envoy 9 is idle until wake, the others want a
// tenth each.
func skewedDemand(wake time.Duration) func(i int, since time.Duration) float64 {
	return func(i int, since time.Duration) float64 {
		switch {
		case i == 0:
			return rlqsLimit / 2
		case i == rlqsEnvoys-1 && since < wake:
			return 0
		}
		return rlqsLimit / 10
	}
}

// sample is the rates every Envoy enforced at a moment.
type sample struct {
	at    time.Duration
	rates []float64
}

// sampleRates records the fleet's rates every 100 ms until stop closes.
func sampleRates(f *rlqssim.Fleet, stop <-chan struct{}) <-chan []sample {
	out := make(chan []sample, 1)
	go func() {
		var s []sample
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-stop:
				out <- s
				return
			case now := <-t.C:
				s = append(s, sample{at: f.Since(now), rates: f.Rates(now)})
			}
		}
	}()
	return out
}

// runFleet runs f under demand for d, and returns its samples.
func runFleet(t *testing.T, f *rlqssim.Fleet, demand func(i int, since time.Duration) float64, d time.Duration) []sample {
	t.Helper()
	start := time.Now()
	f.Start(func(i int, now time.Time) float64 { return demand(i, now.Sub(start)) })
	stop := make(chan struct{})
	samples := sampleRates(f, stop)
	poll.Until(t, d+10*time.Second, "the run to end", func() (bool, error) { return time.Since(start) >= d, nil })
	close(stop)
	f.Stop()
	return <-samples
}

// checkWindows checks every 10 s window of the run: admitted at most 10 s
// of the limit plus rlqsBurst for each of changes changes of the split,
// and from from on at least 95% of 10 s of it; it returns the least (from
// from) and the most admitted.
func checkWindows(t *testing.T, f *rlqssim.Fleet, from, to time.Duration, changes int) (least, most uint64) {
	t.Helper()
	capacity := uint64(rlqsLimit * rlqsWindow / time.Second)
	least = math.MaxUint64
	for s := from; s+rlqsWindow <= to; s += rlqssim.BinWidth {
		admitted, _ := f.Admitted(s, s+rlqsWindow)
		if admitted < capacity*95/100 {
			t.Errorf("%v to %v: %d admitted, below 95%% of %d while demand exceeds it", s, s+rlqsWindow, admitted, capacity)
		}
		least = min(least, admitted)
	}
	_, most = checkWindowsBound(t, f, to, changes)
	return least, most
}

// rlqsWindow is the span the proofs count admissions over.
const rlqsWindow = 10 * time.Second

// checkWindowsBound checks that no 10 s window of the run admitted more
// than 10 s of the limit plus rlqsBurst for each of changes changes of the
// split, and returns the least and the most admitted.
func checkWindowsBound(t *testing.T, f *rlqssim.Fleet, to time.Duration, changes int) (least, most uint64) {
	t.Helper()
	bound := uint64(rlqsLimit*rlqsWindow/time.Second) + uint64(rlqsBurst*(1+changes))
	least = math.MaxUint64
	for s := time.Duration(0); s+rlqsWindow <= to; s += rlqssim.BinWidth {
		admitted, _ := f.Admitted(s, s+rlqsWindow)
		if admitted > bound {
			t.Errorf("%v to %v: %d admitted, above %d (the limit and the burst bound)", s, s+rlqsWindow, admitted, bound)
		}
		least, most = min(least, admitted), max(most, admitted)
	}
	return least, most
}

// checkShares checks that from from to to every Envoy's share, the mean of
// its rate over each report interval, is within 10% of its fair share of
// demands; it returns the largest deviations of those means and of any
// one sample (a moment between a change and its correction, or a machine
// too busy to run a report on time).
func checkShares(t *testing.T, samples []sample, from, to time.Duration, demands []float64) (worstMean, worstSample float64) {
	t.Helper()
	fair := rlqssim.FairShares(rlqsLimit, demands)
	off := func(r, f float64) float64 {
		if f == 0 {
			return math.Abs(r)
		}
		return math.Abs(r-f) / f
	}
	failures := 0
	for start := from; start+rlqsInterval <= to; start += rlqsInterval {
		sums, n := make([]float64, len(fair)), 0
		for _, s := range samples {
			if s.at < start || s.at >= start+rlqsInterval {
				continue
			}
			n++
			for i, r := range s.rates {
				sums[i] += r
				worstSample = math.Max(worstSample, off(r, fair[i]))
			}
		}
		for i := range sums {
			mean := sums[i] / float64(max(n, 1))
			worstMean = math.Max(worstMean, off(mean, fair[i]))
			if off(mean, fair[i]) > 0.1 && failures < 10 {
				failures++
				t.Errorf("from %v to %v Envoy %d enforced %.0f a second on average, its fair share %.0f (demands %v)",
					start, start+rlqsInterval, i, mean, fair[i], demands)
			}
		}
	}
	return worstMean, worstSample
}

// describeRates is a sample's rates, for logs.
func describeRates(s []float64) string {
	parts := make([]string, len(s))
	for i, r := range s {
		parts[i] = fmt.Sprintf("%.0f", r)
	}
	return strings.Join(parts, " ")
}

// startRLQS starts rlserver --in-memory serving files on a free gRPC port,
// with metrics on another, and returns a connection to the first and the
// base URL of the second.
func startRLQS(t *testing.T, files map[string]string) (*grpc.ClientConn, string) {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "rls")
	writeRLSConfig(t, dir, files)
	_, ports := startServerOnPorts(t, false, 2, func(ports []string) []string {
		return []string{"--grpc-port", ports[0], "--rls-config", dir, "--metrics-port", ports[1]}
	})
	return dialGRPC(t, "127.0.0.1:"+ports[0]), "http://127.0.0.1:" + ports[1]
}

// Ten Envoys with skewed demand share one limit: the one that wants half
// of it gets what the others leave, the idle one gets its share within two
// report intervals of waking, every share within 10% of its max-min fair
// share, and in every 10 s the fleet admits at most the limit (plus the
// documented burst bound) and at least 95% of it.
func TestRLQSSharesOneLimitAmongTenEnvoys(t *testing.T) {
	const settle, wake, end = 4 * time.Second, 14 * time.Second, 26 * time.Second
	conn, metricsURL := startRLQS(t, rlqsConfig)
	f := rlqssim.NewFleet(rlqsEnvoys, "edge", rlqsInterval, rlqssim.DenyAll, rlqsBucket,
		func(int) []grpc.ClientConnInterface { return []grpc.ClientConnInterface{conn} })
	demand := skewedDemand(wake)
	samples := runFleet(t, f, demand, end)
	demands := func(at time.Duration) []float64 {
		d := make([]float64, rlqsEnvoys)
		for i := range d {
			d[i] = demand(i, at)
		}
		return d
	}
	before, beforeSample := checkShares(t, samples, settle, wake, demands(0))
	after, afterSample := checkShares(t, samples, wake+2*rlqsInterval, end, demands(wake))
	least, most := checkWindows(t, f, settle, end, 1)
	sum, at, taken := f.MaxSum()
	if sum > rlqsLimit {
		t.Errorf("at %v the Envoys' rates added up to %.0f, above the limit of %d", at, sum, rlqsLimit)
	}
	c := f.Counts()
	if c.Expired > 0 {
		t.Errorf("%d requests decided after an assignment expired", c.Expired)
	}
	for _, s := range samples {
		if int(s.at/time.Millisecond)%500 < 100 {
			t.Logf("%5v  %s", s.at, describeRates(s.rates))
		}
	}
	var m series
	poll.Until(t, 5*time.Second, "the streams to end", func() (bool, error) {
		m = scrape(t, metricsURL)
		return m.sum("rlserver_rlqs_streams") == 0, nil
	})
	// Broken streams: their Envoys may go on with their assignments, so
	// their grants stay (TTL 4 s) after the streams end.
	if m.sum("rlserver_rlqs_streams_total") != rlqsEnvoys || m.sum("rlserver_rlqs_buckets") != 0 ||
		m.sum("rlserver_rlqs_assignments_total", `strategy="token_bucket"`) < float64(c.Applied)/2 ||
		m.sum("rlserver_rlqs_grants_total") < m.sum("rlserver_rlqs_reports_total") || m.sum("rlserver_share_holders") != rlqsEnvoys {
		t.Errorf("metrics: streams %v, buckets %v, assignments %v, grants %v, reports %v, share holders %v",
			m["rlserver_rlqs_streams_total"], m["rlserver_rlqs_buckets"], m["rlserver_rlqs_assignments_total"],
			m["rlserver_rlqs_grants_total"], m["rlserver_rlqs_reports_total"], m["rlserver_share_holders"])
	}
	// Per rule: no bucket holds an assignment any more, and what the
	// broken streams held is counted as left to expire, not given back.
	if m.sum("rlserver_rlqs_rule_holders") != 0 || m.sum("rlserver_rlqs_rule_assigned_rate") != 0 ||
		m.sum("rlserver_rlqs_rule_expired_total") == 0 || m.sum("rlserver_rlqs_rule_limit") != rlqsLimit {
		t.Errorf("rule metrics: holders %v, assigned %v, expired %v, limit %v", m["rlserver_rlqs_rule_holders"],
			m["rlserver_rlqs_rule_assigned_rate"], m["rlserver_rlqs_rule_expired_total"], m["rlserver_rlqs_rule_limit"])
	}
	t.Logf("shares off their fair share by at most %.1f%% before the wake-up, %.1f%% from two intervals after it (any one sample: %.1f%%, %.1f%%)",
		before*100, after*100, beforeSample*100, afterSample*100)
	t.Logf("admitted per 10 s: %d to %d (limit %d, burst bound %d); largest sum of rates %.0f (of %d sums); %+v",
		least, most, rlqsLimit*10, rlqsBurst, sum, taken, c)
}

// What the quota service saves, measured side by side: the same ten
// Envoys given the whole limit each (what a quota server that does not
// split it, such as jukie/rlqs's static policy, assigns) admit what they
// are asked, up to ten times the limit; sharing it through rlserver, they
// admit the limit.
func TestRLQSComparedWithTheWholeLimitToEveryEnvoy(t *testing.T) {
	const settle, end = 3 * time.Second, 8 * time.Second
	conn, _ := startRLQS(t, rlqsConfig)
	saturating := func(int, time.Duration) float64 { return 2 * rlqsLimit }
	whole := rlqssim.Strategy{Kind: rlqssim.TokenBucket, MaxTokens: rlqsLimit / 10, TokensPerFill: rlqsLimit, FillSeconds: 1}
	static := func() *rlqssim.Fleet {
		f := rlqssim.NewFleet(rlqsEnvoys, "edge", rlqsInterval, rlqssim.DenyAll, rlqsBucket,
			func(int) []grpc.ClientConnInterface { return nil })
		for _, e := range f.Envoys {
			e.Assign(rlqsBucket, whole, time.Hour, time.Now())
		}
		return f
	}
	fleets := []struct {
		name   string
		f      *rlqssim.Fleet
		demand func(int, time.Duration) float64
		min    float64 // admitted a second, in limits, at least
		max    float64 // and at most
	}{
		{"the whole limit each, skewed demand", static(), skewedDemand(0), 1.35, 1.45},
		{"the whole limit each, every Envoy at twice the limit", static(), saturating, 9.5, 10.1},
		{"shared by rlserver, every Envoy at twice the limit", rlqssim.NewFleet(rlqsEnvoys, "edge", rlqsInterval, rlqssim.DenyAll,
			rlqsBucket, func(int) []grpc.ClientConnInterface { return []grpc.ClientConnInterface{conn} }), saturating, 0.95, 1.02},
	}
	done := make(chan struct{}, len(fleets))
	for _, fl := range fleets {
		go func() {
			runFleet(t, fl.f, fl.demand, end)
			done <- struct{}{}
		}()
	}
	for range fleets {
		<-done
	}
	for _, fl := range fleets {
		admitted, offered := fl.f.Admitted(settle, end)
		secs := (end - settle).Seconds()
		perSec := float64(admitted) / secs
		t.Logf("%s: %.0f admitted a second (%.2f limits) of %.0f asked", fl.name, perSec, perSec/rlqsLimit, float64(offered)/secs)
		if r := perSec / rlqsLimit; r < fl.min || r > fl.max {
			t.Errorf("%s: %.2f limits a second, want %.2f to %.2f", fl.name, r, fl.min, fl.max)
		}
	}
}
