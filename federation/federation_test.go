package federation

import (
	"context"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/poll"
)

const testSecret = "a secret of the test federation"

// region is one region of a test federation: its shards and federation.
type region struct {
	name   string
	shards *cluster.MemoryShards
	fed    *Federation
	addr   string
}

// startRegions starts regions named names on loopback, each with two
// memory shards, linked to each other.
func startRegions(t *testing.T, names []string, tweak func(*Config)) []*region {
	t.Helper()
	var rs []*region
	lns := map[string]net.Listener{}
	for _, n := range names {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		lns[n] = ln
	}
	for _, n := range names {
		shards, err := cluster.NewMemoryShards(cluster.MemoryConfig{Shards: 2, Clock: cluster.SystemClock{}})
		if err != nil {
			t.Fatal(err)
		}
		cfg := Config{Region: n, Secret: testSecret, Sync: 20 * time.Millisecond, LeaseTTL: 500 * time.Millisecond}
		for _, o := range names {
			if o != n {
				cfg.Peers = append(cfg.Peers, Peer{Name: o, Addrs: []string{lns[o].Addr().String()}})
			}
		}
		if tweak != nil {
			tweak(&cfg)
		}
		fed, err := New(cfg, shards)
		if err != nil {
			t.Fatal(err)
		}
		go fed.Serve(lns[n])
		fed.Start()
		r := &region{name: n, shards: shards, fed: fed, addr: lns[n].Addr().String()}
		t.Cleanup(func() {
			fed.Close()
			shards.Close()
		})
		rs = append(rs, r)
	}
	return rs
}

// decide runs one decision on r and returns it.
func (r *region) decide(t *testing.T, c engine.Command) engine.Decision {
	t.Helper()
	res, err := cluster.Do(context.Background(), r.shards, r.shards.ShardOf(cluster.Slot(c.Key)), c)
	if err != nil || res[0].Type != engine.ResDecision {
		t.Fatalf("%+v: %+v %v", c, res, err)
	}
	return res[0].Decision
}

// info is RL.INFO of key on r, by name.
func (r *region) info(t *testing.T, key string) map[string]any {
	t.Helper()
	res, err := cluster.Do(context.Background(), r.shards, r.shards.ShardOf(cluster.Slot([]byte(key))),
		engine.Command{Op: engine.OpInfo, Key: []byte(key)})
	if err != nil {
		t.Fatal(err)
	}
	m := map[string]any{}
	for _, f := range res[0].Fields {
		if f.Text != "" {
			m[f.Name] = f.Text
		} else {
			m[f.Name] = f.Int
		}
	}
	return m
}

func TestStrictKeyAcrossThreeRegions(t *testing.T) {
	rs := startRegions(t, []string{"eu", "us", "ap"}, nil)
	c := engine.Command{Op: engine.OpFixed, Key: []byte("user:ada"), Flags: engine.FlagGlobal, Args: [4]int64{300, 60_000, 0, 1}}
	home := Home(c.Key, rs[0].fed.regionNames())
	// Every region asks until it is granted, then spends what it can.
	admitted := map[string]int{}
	deadline := time.Now().Add(10 * time.Second)
	for time.Now().Before(deadline) && admitted["eu"]+admitted["us"]+admitted["ap"] < 300 {
		for _, r := range rs {
			if r.decide(t, c).Allowed {
				admitted[r.name]++
			}
		}
	}
	total := admitted["eu"] + admitted["us"] + admitted["ap"]
	if total != 300 {
		for _, r := range rs {
			t.Logf("%s: %+v %v", r.name, r.fed.Stats(), r.info(t, "user:ada"))
		}
		t.Fatalf("admitted %v, %d in all, want the limit, 300", admitted, total)
	}
	// Nothing more, anywhere, in this window.
	for range 50 {
		for _, r := range rs {
			if r.decide(t, c).Allowed {
				t.Fatalf("region %s admitted past the limit", r.name)
			}
		}
	}
	var h *region
	for _, r := range rs {
		if r.name == home {
			h = r
		}
	}
	// The home's ledger: every region's reports arrive, and reconcile.
	poll.Until(t, 10*time.Second, "the home's ledger matches what each region admitted", func() (bool, error) {
		f := h.info(t, "user:ada")
		for _, r := range rs {
			if f["region:"+r.name+":used"] != int64(admitted[r.name]) {
				return false, nil
			}
		}
		return true, nil
	})
}

func TestRelaxedKeyCountsEveryRegion(t *testing.T) {
	rs := startRegions(t, []string{"eu", "us", "ap"}, nil)
	c := engine.Command{Op: engine.OpSliding, Key: []byte("k"), Flags: engine.FlagGlobal | engine.FlagRelaxed,
		Args: [4]int64{1000, 600_000, 0, 1}}
	for i, r := range rs {
		for range 10 * (i + 1) {
			if !r.decide(t, c).Allowed {
				t.Fatal("refused under the limit")
			}
		}
	}
	poll.Until(t, 10*time.Second, "every region counts the others' admissions", func() (bool, error) {
		for i, r := range rs {
			f := r.info(t, "k")
			if f["own_count"] != int64(10*(i+1)) || f["others_count"] != int64(60-10*(i+1)) {
				return false, nil
			}
		}
		return true, nil
	})
	if f := rs[0].info(t, "k"); f["overshoot_bound"].(int64) <= 0 || f["regions_reporting"] != int64(2) {
		t.Fatalf("info: %v", f)
	}
	if st := rs[0].fed.Stats(); st.CountsSent == 0 || st.CountsReceived == 0 {
		t.Fatalf("stats: %+v", st)
	}
}

func TestAWrongSecretIsRefused(t *testing.T) {
	rs := startRegions(t, []string{"eu", "us"}, func(cfg *Config) {
		if cfg.Region == "us" {
			cfg.Secret = "another secret, of the same length"
		}
	})
	c := engine.Command{Op: engine.OpFixed, Key: []byte("k"), Flags: engine.FlagGlobal, Args: [4]int64{10, 60_000, 0, 1}}
	home, away := rs[0], rs[1]
	if Home(c.Key, []string{"eu", "us"}) != "eu" {
		home, away = away, home
	}
	poll.Until(t, 10*time.Second, "the home refuses the other region", func() (bool, error) {
		away.decide(t, c)
		h, a := home.fed.Stats(), away.fed.Stats()
		return h.AuthFailures > 0 && !a.Links[0].Up && strings.Contains(a.Links[0].LastError, "authentication failed"), nil
	})
	if d := away.decide(t, c); d.Allowed {
		t.Fatal("a region that cannot reach the home admitted")
	}
}

func TestHomeIsTheSameEverywhere(t *testing.T) {
	regions := []string{"ap", "eu", "us"}
	count := map[string]int{}
	for i := range 3000 {
		key := []byte("user:" + strconv.Itoa(i))
		h := Home(key, regions)
		if Home(key, []string{"us", "ap", "eu"}) != h {
			t.Fatalf("%s: the order of the regions changed its home", key)
		}
		count[h]++
		// A fourth region takes some keys and moves no other.
		if h4 := Home(key, []string{"ap", "eu", "us", "sa"}); h4 != h && h4 != "sa" {
			t.Fatalf("%s moved from %s to %s", key, h, h4)
		}
	}
	for _, r := range regions {
		if count[r] < 850 || count[r] > 1150 {
			t.Errorf("%s is home to %d of 3000 keys", r, count[r])
		}
	}
}

func TestSettings(t *testing.T) {
	peers, err := ParsePeers("us@10.0.0.1:7000,eu@10.0.1.1:7000,us@10.0.0.2:7000")
	if err != nil || len(peers) != 2 || peers[0].Name != "us" || len(peers[0].Addrs) != 2 || peers[1].Addrs[0] != "10.0.1.1:7000" {
		t.Fatalf("%+v %v", peers, err)
	}
	for _, bad := range []string{"us", "us@host", "u s@h:1", "@h:1"} {
		if _, err := ParsePeers(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	for in, want := range map[string]Floor{"0": {}, "share": {Share: true}, "10%": {Percent: 10}} {
		if f, err := ParseFloor(in); err != nil || f != want || f.String() != in {
			t.Errorf("%q: %+v %v", in, f, err)
		}
	}
	for _, bad := range []string{"-1%", "101%", "half", "5"} {
		if _, err := ParseFloor(bad); err == nil {
			t.Errorf("%q parsed", bad)
		}
	}
	cfg := Config{Region: "eu", Peers: peers, Secret: "short"}
	if _, err := New(cfg, nil); err == nil {
		t.Error("a short secret accepted")
	}
	cfg.Secret, cfg.Peers = testSecret, []Peer{{Name: "eu", Addrs: []string{"h:1"}}}
	if _, err := New(cfg, nil); err == nil {
		t.Error("this region among the peers accepted")
	}
}
