package main

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

func runRueidis(s *scenario) {
	switch s.mode {
	case "membership":
		rueidisMembership(s)
		return
	case "faults":
		rueidisFaults(s)
		return
	}
	// Default options: RESP3, client-side caching on (CLIENT TRACKING ON
	// OPTIN), the mode found with CLUSTER SLOTS. In a cluster, seeded with
	// one node.
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: s.addrs[:1]})
	if err != nil {
		s.result("connect", "FAIL", err.Error())
		return
	}
	defer c.Close()
	wantMode := rueidis.ClientModeStandalone
	if s.mode == "cluster" {
		wantMode = rueidis.ClientModeCluster
	}
	s.run("connect", func(ctx context.Context) (string, error) {
		if c.Mode() != wantMode {
			return "", fmt.Errorf("client mode %s, want %s", c.Mode(), wantMode)
		}
		return fmt.Sprintf("default options (caching on), %s mode", c.Mode()), rueidisPing(ctx, c)
	})
	if s.mode == "cluster" {
		s.run("discovery", func(ctx context.Context) (string, error) {
			nodes := c.Nodes()
			if len(nodes) != len(s.addrs) {
				return "", fmt.Errorf("nodes %v, want the %d nodes", keysOf(nodes), len(s.addrs))
			}
			return fmt.Sprintf("seeded with 1 node, found %d nodes", len(nodes)), nil
		})
	}
	s.run("connect-auth", func(ctx context.Context) (string, error) {
		name := "compat-rueidis"
		a, err := rueidis.NewClient(rueidis.ClientOption{
			InitAddress: s.authAddrs[:1], ClientName: name, Password: s.password, SelectDB: 0,
		})
		if err != nil {
			return "", err
		}
		defer a.Close()
		if a.Mode() != wantMode {
			return "", fmt.Errorf("client mode %s, want %s", a.Mode(), wantMode)
		}
		if err := rueidisPing(ctx, a); err != nil {
			return "", err
		}
		keys := []string{s.key("auth")}
		if s.mode == "cluster" {
			keys = s.shardKeys
		}
		for addr, n := range a.Nodes() {
			got, err := n.Do(ctx, n.B().ClientGetname().Build()).ToString()
			if err != nil || got != name {
				return "", fmt.Errorf("CLIENT GETNAME on %s = %q, %v; want %q", addr, got, err, name)
			}
		}
		for _, k := range keys {
			if s.mode == "cluster" {
				k += ":auth"
			}
			d, err := rueidisDecide(ctx, a, "RL.SLIDING", k, "10", strconv.Itoa(window))
			if err != nil {
				return "", fmt.Errorf("%s: %w", k, err)
			}
			if err := d.want("map", 1, 10, 9, 0, -1); err != nil {
				return "", err
			}
		}
		return "ClientName, Password, SelectDB 0", nil
	})
	s.run("ping", func(ctx context.Context) (string, error) { return "", rueidisPing(ctx, c) })
	key := s.key("sliding")
	if s.mode == "cluster" {
		key = s.shardKeys[0]
	}
	s.run("rl.sliding", func(ctx context.Context) (string, error) {
		for want := int64(9); want >= 8; want-- {
			d, err := rueidisDecide(ctx, c, "RL.SLIDING", key, "10", strconv.Itoa(window))
			if err != nil {
				return "", err
			}
			if err := d.want("map", 1, 10, want, 0, -1); err != nil {
				return "", err
			}
		}
		return "B().Arbitrary(); RESP3: a map", nil
	})
	s.run("cl.throttle", func(ctx context.Context) (string, error) {
		d, err := rueidisDecide(ctx, c, "CL.THROTTLE", key+":cell", "15", "30", "60")
		if err != nil {
			return "", err
		}
		return "B().Arbitrary(); an array in RESP3 too", d.want("array", 0, 16, 15, -1, 2)
	})
	s.run("pipeline-100", func(ctx context.Context) (string, error) {
		keys, limit := s.pipelineKeys("pipe", 100)
		cmds := make(rueidis.Commands, len(keys))
		for i, k := range keys {
			cmds[i] = rlSliding(c, k, limit)
		}
		ds := make([]decision, len(keys))
		for i, r := range c.DoMulti(ctx, cmds...) {
			d, err := rueidisDecision(r)
			if err != nil {
				return "", fmt.Errorf("decision %d: %w", i+1, err)
			}
			ds[i] = d
		}
		return "DoMulti()", checkSequence(keys, ds, limit)
	})
	s.run("client-side-cache", func(ctx context.Context) (string, error) {
		// DoCache sends CLIENT CACHING YES, MULTI, PTTL, PTTL, EXEC.
		k := key + ":cached"
		if _, err := rueidisDecide(ctx, c, "RL.SLIDING", k, "10", "60000"); err != nil {
			return "", err
		}
		var hits int
		for range 2 {
			r := c.DoCache(ctx, c.B().Pttl().Key(k).Cache(), time.Minute)
			ms, err := r.AsInt64()
			if err != nil {
				return "", fmt.Errorf("DoCache(PTTL): %w", err)
			}
			if ms <= 0 || ms > 120000 {
				return "", fmt.Errorf("DoCache(PTTL) = %d, want 1 to 120000", ms)
			}
			if r.IsCacheHit() {
				hits++
			}
		}
		return fmt.Sprintf("DoCache(PTTL) twice: %d served from the client's cache", hits), nil
	})
	s.run("cache-invalidation", func(ctx context.Context) (string, error) {
		return rueidisInvalidation(ctx, c, key+":inval")
	})
	s.run("cache-disabled", func(ctx context.Context) (string, error) {
		d, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: s.addrs[:1], DisableCache: true})
		if err != nil {
			return "", err
		}
		defer d.Close()
		detail, err := rueidisInvalidation(ctx, d, key+":nocache")
		return "DisableCache: true; " + detail, err
	})
	if s.mode == "single" {
		s.run("transaction", func(ctx context.Context) (string, error) {
			k := s.key("tx")
			cmds := rueidis.Commands{c.B().Multi().Build()}
			for range 3 {
				cmds = append(cmds, rlSliding(c, k, 10))
			}
			cmds = append(cmds, c.B().Exec().Build())
			var ds []decision
			err := c.Dedicated(func(d rueidis.DedicatedClient) error {
				rs := d.DoMulti(ctx, cmds...)
				arr, err := rs[len(rs)-1].ToArray()
				if err != nil {
					return fmt.Errorf("EXEC: %w", err)
				}
				for _, m := range arr {
					v, err := m.ToAny()
					if err != nil {
						return err
					}
					dec, err := toDecision(v)
					if err != nil {
						return err
					}
					ds = append(ds, dec)
				}
				return nil
			})
			if err != nil {
				return "", err
			}
			return "Dedicated(): MULTI, 3 decisions, EXEC", checkSequence([]string{k, k, k}, ds, 10)
		})
		s.run("error", func(ctx context.Context) (string, error) {
			err := c.Do(ctx, rlSliding(c, s.key("err"), 0)).Error()
			// rueidis drops the "ERR " of error messages.
			if err == nil || !strings.HasPrefix(err.Error(), "limit must be") {
				return "", fmt.Errorf("RL.SLIDING with limit 0: %v, want a \"limit must be ...\" error", err)
			}
			return err.Error(), nil
		})
		return
	}
	s.run("spread", func(ctx context.Context) (string, error) {
		for round := int64(1); round <= 2; round++ {
			for _, k := range s.shardKeys {
				d, err := rueidisDecide(ctx, c, "RL.SLIDING", k+":spread", "10", strconv.Itoa(window))
				if err != nil {
					return "", fmt.Errorf("%s: %w", k, err)
				}
				if err := d.want("", 1, 10, 10-round, 0, -1); err != nil {
					return "", fmt.Errorf("%s: %w", k, err)
				}
			}
		}
		return fmt.Sprintf("%d shards, 2 decisions each", len(s.shardKeys)), nil
	})
	decide := func(ctx context.Context, k string) error {
		_, err := rueidisDecide(ctx, c, "RL.SLIDING", k, "1000", strconv.Itoa(window))
		return err
	}
	s.run("failover", func(ctx context.Context) (string, error) {
		return s.failover(ctx, s.shardKeys[1]+":fo", decide)
	})
	s.run("failback", func(ctx context.Context) (string, error) {
		return s.failback(ctx, s.shardKeys[1]+":fo", decide)
	})
}

// rueidisInvalidation checks that DoCache never serves a reply the server
// has made stale: it caches PTTL of a limiter key, deletes the key, and
// waits up to two seconds for DoCache(PTTL) to say -2 (no key), as it does
// once the server sends the invalidation Redis sends; then the same with
// GET of a string changed by SET.
func rueidisInvalidation(ctx context.Context, c rueidis.Client, key string) (string, error) {
	if _, err := rueidisDecide(ctx, c, "RL.SLIDING", key, "10", "60000"); err != nil {
		return "", err
	}
	// A built command is used once: rueidis recycles it.
	pttl := func() rueidis.Cacheable { return c.B().Pttl().Key(key).Cache() }
	if ms, err := c.DoCache(ctx, pttl(), time.Minute).AsInt64(); err != nil || ms <= 0 {
		return "", fmt.Errorf("DoCache(PTTL) = %d, %v; want a positive TTL", ms, err)
	}
	if err := c.Do(ctx, c.B().Del().Key(key).Build()).Error(); err != nil {
		return "", err
	}
	var stale []string
	if err := waitCached(ctx, func() (bool, string) {
		ms, err := c.DoCache(ctx, pttl(), time.Minute).AsInt64()
		return err == nil && ms == -2, fmt.Sprintf("%d, %v", ms, err)
	}); err != nil {
		stale = append(stale, fmt.Sprintf("RL.SLIDING %s, DoCache(PTTL), DEL %s: DoCache(PTTL) still %v", key, key, err))
	}
	str := key + ":str"
	if err := c.Do(ctx, c.B().Set().Key(str).Value("v1").Build()).Error(); err != nil {
		return "", err
	}
	get := func() rueidis.Cacheable { return c.B().Get().Key(str).Cache() }
	if v, err := c.DoCache(ctx, get(), time.Minute).ToString(); err != nil || v != "v1" {
		return "", fmt.Errorf("DoCache(GET) = %q, %v; want v1", v, err)
	}
	if err := c.Do(ctx, c.B().Set().Key(str).Value("v2").Build()).Error(); err != nil {
		return "", err
	}
	if err := waitCached(ctx, func() (bool, string) {
		v, err := c.DoCache(ctx, get(), time.Minute).ToString()
		return err == nil && v == "v2", fmt.Sprintf("%q, %v", v, err)
	}); err != nil {
		stale = append(stale, fmt.Sprintf("SET %s v1, DoCache(GET), SET %s v2: DoCache(GET) still %v", str, str, err))
	}
	if len(stale) > 0 {
		return "", errors.New(strings.Join(stale, "; "))
	}
	return "DoCache(PTTL) after DEL, DoCache(GET) after SET: fresh", nil
}

// waitCached polls fresh for two seconds, the time an invalidation has to
// arrive; it returns what the last poll saw if it never held.
func waitCached(ctx context.Context, fresh func() (bool, string)) error {
	deadline := time.Now().Add(2 * time.Second)
	for {
		ok, saw := fresh()
		if ok {
			return nil
		}
		if time.Now().After(deadline) || ctx.Err() != nil {
			return fmt.Errorf("%s 2s later (a stale reply from the client-side cache)", saw)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func rlSliding(c rueidis.Client, key string, limit int64) rueidis.Completed {
	return c.B().Arbitrary("RL.SLIDING").Keys(key).Args(strconv.FormatInt(limit, 10), strconv.Itoa(window)).Build()
}

func rueidisDecide(ctx context.Context, c rueidis.Client, cmd, key string, args ...string) (decision, error) {
	return rueidisDecision(c.Do(ctx, c.B().Arbitrary(cmd).Keys(key).Args(args...).Build()))
}

func rueidisDecision(r rueidis.RedisResult) (decision, error) {
	v, err := r.ToAny()
	if err != nil {
		return decision{}, err
	}
	return toDecision(v)
}

func rueidisPing(ctx context.Context, c rueidis.Client) error {
	got, err := c.Do(ctx, c.B().Ping().Build()).ToString()
	if err != nil {
		return err
	}
	if got != "PONG" {
		return fmt.Errorf("PING = %q", got)
	}
	return nil
}

func keysOf(m map[string]rueidis.Client) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	return out
}

// rueidisMembership runs the membership scenario through rueidis's cluster
// client, seeded with every original node. rueidis has no slot map to
// show: its view is the nodes it knows (Nodes()). It reads the topology
// again only after a MOVED or an error, and rlserver forwards the commands
// of connections that did not ask for the topology: without a periodic
// refresh it learns of nodes that joined only when a node it uses fails
// (docs/clients.md).
func rueidisMembership(s *scenario) {
	c, err := rueidis.NewClient(rueidis.ClientOption{
		InitAddress: s.addrs, ClusterOption: rueidis.ClusterOption{ShardsRefreshInterval: 2 * time.Second},
	})
	if err != nil {
		s.result("grow", "FAIL", err.Error())
		return
	}
	defer c.Close()
	s.membership(memberClient{
		decide: func(ctx context.Context, key string, limit int64) (bool, int64, error) {
			d, err := rueidisDecide(ctx, c, "RL.SLIDING", key, strconv.FormatInt(limit, 10), strconv.Itoa(window))
			return d.v[0] == 1, d.v[2], err
		},
		view: func(ctx context.Context, keys []string) []string {
			return keysOf(c.Nodes())
		},
	}, "ShardsRefreshInterval: 2s")
}
