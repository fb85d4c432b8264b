package tests

import (
	"context"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/federation"
	"github.com/rlserver/rlserver/internal/fedload"
	"github.com/rlserver/rlserver/internal/rlproc"
	"github.com/rlserver/rlserver/internal/testnet"
)

// A federation of regions on this machine, each one rlserver --in-memory,
// joined through delay proxies (one for each direction of each pair, so a
// region can be cut off whole), and a load that records every grant.

// fedSecret is the test federations' shared secret.
const fedSecret = "the test federation's secret"

// fedRegion is one region of a test federation.
type fedRegion struct {
	name    string
	proc    *rlproc.Process
	client  *redis.Client
	fedAddr string
}

// fedRig is a running test federation.
type fedRig struct {
	regions []*fedRegion
	proxies map[[2]string]*testnet.DelayProxy // by (from, to)
}

var federationAddr = regexp.MustCompile(`msg="rlserver ready".* federation_addr=(\S+)`)

// startFederation starts regions named names, each link delayed by delay
// each way, every region with args besides.
func startFederation(t *testing.T, names []string, delay time.Duration, args ...string) *fedRig {
	t.Helper()
	return startFederationWith(t, names, delay, func(string) []string { return args })
}

// startFederationWith is startFederation with each region's own args.
func startFederationWith(t *testing.T, names []string, delay time.Duration, args func(region string) []string) *fedRig {
	t.Helper()
	rig := &fedRig{proxies: map[[2]string]*testnet.DelayProxy{}}
	for _, from := range names {
		for _, to := range names {
			if from != to {
				p, err := testnet.NewDelayProxy(delay)
				if err != nil {
					t.Fatal(err)
				}
				t.Cleanup(p.Close)
				rig.proxies[[2]string{from, to}] = p
			}
		}
	}
	for _, name := range names {
		var peers []string
		for _, to := range names {
			if to != name {
				peers = append(peers, to+"@"+rig.proxies[[2]string{name, to}].Addr())
			}
		}
		p := startServer(t, join([]string{"--region", name, "--federation", strings.Join(peers, ","),
			"--federation-port", "0", "--federation-secret", fedSecret}, args(name))...)
		m := federationAddr.FindStringSubmatch(p.Log())
		if m == nil {
			t.Fatalf("region %s logged no federation address:\n%s", name, p.Log())
		}
		rig.regions = append(rig.regions, &fedRegion{name: name, proc: p, client: p.Client(t, 2), fedAddr: m[1]})
	}
	for k, p := range rig.proxies {
		p.SetTarget(rig.region(k[1]).fedAddr)
	}
	return rig
}

// region is the region named name.
func (rig *fedRig) region(name string) *fedRegion {
	for _, r := range rig.regions {
		if r.name == name {
			return r
		}
	}
	return nil
}

// names are the regions' names, sorted.
func (rig *fedRig) names() []string {
	var out []string
	for _, r := range rig.regions {
		out = append(out, r.name)
	}
	slices.Sort(out)
	return out
}

// cut severs every link to and from region name; heal restores them.
func (rig *fedRig) cut(name string)  { rig.eachLink(name, (*testnet.DelayProxy).Cut) }
func (rig *fedRig) heal(name string) { rig.eachLink(name, (*testnet.DelayProxy).Heal) }

func (rig *fedRig) eachLink(name string, fn func(*testnet.DelayProxy)) {
	for k, p := range rig.proxies {
		if k[0] == name || k[1] == name {
			fn(p)
		}
	}
}

// setDelay sets every link's delay.
func (rig *fedRig) setDelay(d time.Duration) {
	for _, p := range rig.proxies {
		p.SetDelay(d)
	}
}

// keyHomedAt is a key named prefix-n whose home is region.
func keyHomedAt(prefix, region string, regions []string) string {
	for n := 0; ; n++ {
		if k := fmt.Sprintf("%s-%d", prefix, n); federation.Home([]byte(k), regions) == region {
			return k
		}
	}
}

// fedLoad drives decisions into every region and records the grants.
type fedLoad struct{ fedload.Recorder }

// drive sends, every 10 ms until ctx ends, the decisions rate(region, now)
// asks for per second (one pipeline a region), each built by cmd.
func (l *fedLoad) drive(ctx context.Context, rig *fedRig, key string, cmd []any, rate func(region int, now time.Time) float64) *sync.WaitGroup {
	var wg sync.WaitGroup
	for i, r := range rig.regions {
		wg.Add(1)
		go func() {
			defer wg.Done()
			t := time.NewTicker(10 * time.Millisecond)
			defer t.Stop()
			carry := 0.0
			for {
				select {
				case <-ctx.Done():
					return
				case now := <-t.C:
					carry += rate(i, now) / 100
					n := int(carry)
					carry -= float64(n)
					l.Send(r.client, i, key, cmd, n)
				}
			}
		}()
	}
	return &wg
}
