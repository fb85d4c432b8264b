package main

import (
	"context"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"
)

// goredisDo is the part of go-redis's API the cases share between Client
// and ClusterClient.
type goredisDo interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
	Ping(ctx context.Context) *redis.StatusCmd
	Pipeline() redis.Pipeliner
	TxPipeline() redis.Pipeliner
}

func goredisDecide(ctx context.Context, c goredisDo, args ...any) (decision, error) {
	v, err := c.Do(ctx, args...).Result()
	if err != nil {
		return decision{}, err
	}
	return toDecision(v)
}

func runGoRedis(s *scenario) {
	switch s.mode {
	case "single":
		goredisSingle(s)
	case "membership":
		goredisMembership(s)
	case "faults":
		goredisFaults(s)
	default:
		goredisCluster(s)
	}
}

// goredisMembership runs the membership scenario through a ClusterClient
// seeded with every original node, with the periodic reload of the slot
// map that the failover case needs too (see known.go, go-redis-reload).
func goredisMembership(s *scenario) {
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: s.addrs, ClusterStateReloadInterval: time.Second})
	defer c.Close()
	s.membership(memberClient{
		decide: func(ctx context.Context, key string, limit int64) (bool, int64, error) {
			d, err := goredisDecide(ctx, c, "RL.SLIDING", key, limit, window)
			return d.v[0] == 1, d.v[2], err
		},
		view: func(ctx context.Context, keys []string) []string {
			out := make([]string, len(keys))
			for i, k := range keys {
				if m, err := c.MasterForKey(ctx, k); err == nil {
					out[i] = m.Options().Addr
				}
			}
			return out
		},
		slotMap: true,
	}, "ClusterStateReloadInterval: 1s")
}

func goredisSingle(s *scenario) {
	c := redis.NewClient(&redis.Options{Addr: s.addrs[0]}) // default options: RESP3
	defer c.Close()
	s.run("connect", func(ctx context.Context) (string, error) {
		return "default options", goredisPing(ctx, c)
	})
	s.run("connect-auth", func(ctx context.Context) (string, error) {
		name := "compat-go-redis"
		a := redis.NewClient(&redis.Options{Addr: s.authAddrs[0], ClientName: name, Password: s.password, DB: 0})
		defer a.Close()
		if err := goredisPing(ctx, a); err != nil {
			return "", err
		}
		if got, err := a.Do(ctx, "CLIENT", "GETNAME").Text(); err != nil || got != name {
			return "", fmt.Errorf("CLIENT GETNAME = %q, %v; want %q", got, err, name)
		}
		d, err := goredisDecide(ctx, a, "RL.SLIDING", s.key("auth"), 10, window)
		if err != nil {
			return "", err
		}
		return "ClientName, Password, DB 0", d.want("", 1, 10, 9, 0, -1)
	})
	goredisCommon(s, c)
	s.run("transaction", func(ctx context.Context) (string, error) {
		k := s.key("tx")
		return "TxPipeline (MULTI/EXEC)", goredisPipeline(ctx, c.TxPipeline(), []string{k, k, k}, 10)
	})
	s.run("resp2", func(ctx context.Context) (string, error) {
		c2 := redis.NewClient(&redis.Options{Addr: s.addrs[0], Protocol: 2})
		defer c2.Close()
		d, err := goredisDecide(ctx, c2, "RL.SLIDING", s.key("resp2"), 10, window)
		if err != nil {
			return "", err
		}
		return "Protocol: 2, RL.SLIDING an array", d.want("array", 1, 10, 9, 0, -1)
	})
	s.run("error", func(ctx context.Context) (string, error) {
		err := c.Do(ctx, "RL.SLIDING", s.key("err"), 0, 1000).Err()
		if err == nil || !strings.HasPrefix(err.Error(), "ERR limit") {
			return "", fmt.Errorf("RL.SLIDING with limit 0: %v, want an ERR limit ... error", err)
		}
		return err.Error(), nil
	})
}

// goredisCommon are the cases run alike against a node and a cluster.
func goredisCommon(s *scenario, c goredisDo) {
	s.run("ping", func(ctx context.Context) (string, error) { return "", goredisPing(ctx, c) })
	key := s.key("sliding")
	if s.mode == "cluster" {
		key = s.shardKeys[0]
	}
	s.run("rl.sliding", func(ctx context.Context) (string, error) {
		d, err := goredisDecide(ctx, c, "RL.SLIDING", key, 10, window)
		if err != nil {
			return "", err
		}
		if err := d.want("map", 1, 10, 9, 0, -1); err != nil {
			return "", err
		}
		d, err = goredisDecide(ctx, c, "RL.SLIDING", key, 10, window)
		if err != nil {
			return "", err
		}
		return "Do(); RESP3 by default: a map", d.want("map", 1, 10, 8, 0, -1)
	})
	s.run("cl.throttle", func(ctx context.Context) (string, error) {
		d, err := goredisDecide(ctx, c, "CL.THROTTLE", key+":cell", 15, 30, 60)
		if err != nil {
			return "", err
		}
		return "Do(); an array in RESP3 too", d.want("array", 0, 16, 15, -1, 2)
	})
	s.run("pipeline-100", func(ctx context.Context) (string, error) {
		keys, limit := s.pipelineKeys("pipe", 100)
		return "Pipeline()", goredisPipeline(ctx, c.Pipeline(), keys, limit)
	})
}

func goredisPing(ctx context.Context, c goredisDo) error {
	got, err := c.Ping(ctx).Result()
	if err != nil {
		return err
	}
	if got != "PONG" {
		return fmt.Errorf("PING = %q", got)
	}
	return nil
}

// goredisPipeline sends a decision on each of keys in pipe and checks the
// replies.
func goredisPipeline(ctx context.Context, pipe redis.Pipeliner, keys []string, limit int64) error {
	cmds := make([]*redis.Cmd, len(keys))
	for i, k := range keys {
		cmds[i] = pipe.Do(ctx, "RL.SLIDING", k, limit, window)
	}
	if _, err := pipe.Exec(ctx); err != nil {
		return err
	}
	ds := make([]decision, len(cmds))
	for i, cmd := range cmds {
		d, err := toDecision(cmd.Val())
		if err != nil {
			return err
		}
		ds[i] = d
	}
	return checkSequence(keys, ds, limit)
}

func goredisCluster(s *scenario) {
	// Seeded with one node: the others are discovered.
	c := redis.NewClusterClient(&redis.ClusterOptions{Addrs: s.addrs[:1]})
	defer c.Close()
	s.run("discovery", func(ctx context.Context) (string, error) {
		c.ReloadState(ctx)
		if err := goredisPing(ctx, c); err != nil {
			return "", err
		}
		// Every node, whatever it leads: ForEachShard visits masters and
		// replicas.
		var mu sync.Mutex
		nodes := map[string]bool{}
		err := c.ForEachShard(ctx, func(ctx context.Context, n *redis.Client) error {
			mu.Lock()
			defer mu.Unlock()
			nodes[n.Options().Addr] = true
			return nil
		})
		if err != nil {
			return "", err
		}
		if len(nodes) != len(s.addrs) {
			return "", fmt.Errorf("nodes %v, want the %d nodes", nodes, len(s.addrs))
		}
		for i, k := range s.shardKeys {
			m, err := c.MasterForKey(ctx, k)
			if err != nil {
				return "", err
			}
			if m.Options().Addr != s.leaders[i] {
				return "", fmt.Errorf("MasterForKey(%s) = %s, want the shard's leader %s", k, m.Options().Addr, s.leaders[i])
			}
		}
		return fmt.Sprintf("seeded with 1 node, found the %d nodes; each shard's key maps to its leader", len(nodes)), nil
	})
	s.run("connect-auth", func(ctx context.Context) (string, error) {
		name := "compat-go-redis"
		a := redis.NewClusterClient(&redis.ClusterOptions{Addrs: s.authAddrs[:1], ClientName: name, Password: s.password})
		defer a.Close()
		if err := goredisPing(ctx, a); err != nil {
			return "", err
		}
		for _, k := range s.shardKeys {
			if _, err := goredisDecide(ctx, a, "RL.SLIDING", k+":auth", 10, window); err != nil {
				return "", fmt.Errorf("%s: %w", k, err)
			}
		}
		return "ClientName, Password (ClusterOptions has no DB); a decision on every shard", nil
	})
	goredisCommon(s, c)
	s.run("spread", func(ctx context.Context) (string, error) {
		return goredisSpread(ctx, c, s.shardKeys)
	})
	s.run("failover-default", func(ctx context.Context) (string, error) {
		return s.failover(ctx, s.shardKeys[1]+":fo1", func(ctx context.Context, k string) error {
			_, err := goredisDecide(ctx, c, "RL.SLIDING", k, 1000, window)
			return err
		})
	})
	if _, err := s.control("restart"); err != nil {
		s.result("failover", "FAIL", err.Error())
		return
	}
	r := redis.NewClusterClient(&redis.ClusterOptions{Addrs: s.addrs, ClusterStateReloadInterval: time.Second})
	defer r.Close()
	decide := func(ctx context.Context, k string) error {
		_, err := goredisDecide(ctx, r, "RL.SLIDING", k, 1000, window)
		return err
	}
	s.run("failover", func(ctx context.Context) (string, error) {
		detail, err := s.failover(ctx, s.shardKeys[1]+":fo2", decide)
		return "ClusterStateReloadInterval: 1s; " + detail, err
	})
	s.run("failback", func(ctx context.Context) (string, error) {
		return s.failback(ctx, s.shardKeys[1]+":fo2", decide)
	})
}

// goredisSpread asks twice for every shard's key and checks each was
// counted on its own.
func goredisSpread(ctx context.Context, c goredisDo, keys []string) (string, error) {
	for round := int64(1); round <= 2; round++ {
		for _, k := range keys {
			d, err := goredisDecide(ctx, c, "RL.SLIDING", k+":spread", 10, window)
			if err != nil {
				return "", fmt.Errorf("%s: %w", k, err)
			}
			if err := d.want("", 1, 10, 10-round, 0, -1); err != nil {
				return "", fmt.Errorf("%s: %w", k, err)
			}
		}
	}
	return fmt.Sprintf("%d shards, 2 decisions each", len(keys)), nil
}
