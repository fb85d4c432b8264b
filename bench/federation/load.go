package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/fedload"
)

// The keys, their limits, and the load: twice each limit's rate, 60/20/20
// among the regions, then 10/10/80 from halfway.
const (
	tokenKey, tokenCap, tokenRate = "bench:token", 500, 1000 // a second
	slidingKey, window, limit     = "bench:sliding", 2000, 1000
	relaxedKey                    = "bench:relaxed" // as the sliding one
	interval, ttl                 = 100 * time.Millisecond, time.Second
)

// bench is one run's load and what it saw.
type bench struct {
	f                *fed
	duration, killAt time.Duration
	start, shift     time.Time

	load    fedload.Recorder
	mu      sync.Mutex     // guards what follows
	maybe   map[string]int // requests that may have been counted, by region
	errs    map[string]int // by first word
	probe   []time.Duration
	killed  string
	bounded int64 // the largest overshoot bound RL.INFO stated
}

func newBench(f *fed, duration time.Duration) *bench {
	b := &bench{f: f, duration: duration, maybe: map[string]int{}, errs: map[string]int{}}
	b.load.OnError = func(region int, err error) {
		b.mu.Lock()
		defer b.mu.Unlock()
		b.noteError(regions[region], err)
	}
	return b
}

// run drives the load until the duration is over.
func (b *bench) run() {
	b.start = time.Now()
	b.shift = b.start.Add(b.duration / 2)
	ctx, cancel := context.WithDeadline(context.Background(), b.start.Add(b.duration))
	defer cancel()
	var wg sync.WaitGroup
	for i, r := range regions {
		for _, k := range []struct {
			key  string
			rate float64
			cmd  []any
		}{
			{tokenKey, 2 * tokenRate, []any{"RL.TOKEN", tokenKey, tokenCap, tokenRate, 1000, "GLOBAL"}},
			{slidingKey, 2 * limit * 1000 / window, []any{"RL.SLIDING", slidingKey, limit, window, "GLOBAL"}},
			{relaxedKey, 2 * limit * 1000 / window, []any{"RL.SLIDING", relaxedKey, limit, window, "GLOBAL", "RELAXED"}},
		} {
			wg.Go(func() { b.drive(ctx, i, r, k.key, k.cmd, k.rate) })
		}
	}
	wg.Go(func() { b.probeLatency(ctx) })
	wg.Go(func() { b.sampleBound(ctx) })
	if b.killAt > 0 {
		time.Sleep(b.killAt) // the load runs meanwhile: this is the run's timeline
		b.kill()
	}
	wg.Wait()
}

// drive sends region's share of rate on key every 10 ms, one pipeline,
// through its nodes in turn.
func (b *bench) drive(ctx context.Context, region int, r, key string, cmd []any, rate float64) {
	t := time.NewTicker(10 * time.Millisecond)
	defer t.Stop()
	carry, next := 0.0, 0
	for {
		select {
		case <-ctx.Done():
			return
		case now := <-t.C:
			shares := []float64{0.6, 0.2, 0.2}
			if !now.Before(b.shift) {
				shares = []float64{0.1, 0.1, 0.8}
			}
			carry += rate * shares[region] / 100
			n := int(carry)
			carry -= float64(n)
			nodes := b.f.nodes(r)
			next = (next + 1) % len(nodes)
			if n > 0 && nodes[next].Running() {
				b.load.Send(nodes[next].Client(), region, key, cmd, n)
			}
		}
	}
}

// noteError counts err by its first word, and a request that may have
// been counted by region. b.mu is held.
func (b *bench) noteError(region string, err error) {
	word, _, _ := strings.Cut(err.Error(), " ")
	b.errs[word]++
	if strings.Contains(err.Error(), "may have been counted") || !strings.HasPrefix(err.Error(), "TRYAGAIN") {
		b.maybe[region]++ // a lost connection may have been counted too
	}
}

// probeLatency times single decisions on the token key in the first
// region, 200 a second, each recorded like the load's.
func (b *bench) probeLatency(ctx context.Context) {
	t := time.NewTicker(5 * time.Millisecond)
	defer t.Stop()
	cmd := []any{"RL.TOKEN", tokenKey, tokenCap, tokenRate, 1000, "GLOBAL"}
	for i := 0; ; i++ {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		n := b.f.nodes(regions[0])[i%3]
		if !n.Running() {
			continue
		}
		send := time.Now()
		v, err := n.Client().Do(context.Background(), cmd...).Slice()
		recv := time.Now()
		b.mu.Lock()
		b.probe = append(b.probe, recv.Sub(send))
		if err != nil {
			b.noteError(regions[0], err)
		}
		b.mu.Unlock()
		if err == nil && v[0] == int64(1) {
			b.load.Add(fedload.Grant{Region: 0, Key: tokenKey, Send: send, Recv: recv, Reset: v[4].(int64)})
		}
	}
}

// sampleBound reads the relaxed key's overshoot bound in every region.
func (b *bench) sampleBound(ctx context.Context) {
	t := time.NewTicker(250 * time.Millisecond)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		for _, r := range regions {
			if f, err := b.info(r, relaxedKey); err == nil {
				if v, ok := f["overshoot_bound"].(int64); ok {
					b.mu.Lock()
					b.bounded = max(b.bounded, v)
					b.mu.Unlock()
				}
			}
		}
	}
}

// kill kills, in the token key's home region, the node leading its shard.
func (b *bench) kill() {
	r := home(tokenKey)
	n, err := b.f.leaderOf(r, tokenKey)
	if err != nil {
		b.killed = "nothing: " + err.Error()
		return
	}
	n.Process().Kill()
	b.killed = fmt.Sprintf("%s/%s at %v", r, n.ID, time.Since(b.start).Round(time.Millisecond))
}

// info is RL.INFO of key in region r, through its first running node.
func (b *bench) info(r, key string) (map[string]any, error) {
	for _, n := range b.f.nodes(r) {
		if !n.Running() {
			continue
		}
		v, err := n.Client().Do(context.Background(), "RL.INFO", key).Slice()
		if err != nil {
			if errors.Is(err, redis.Nil) {
				return map[string]any{}, nil
			}
			continue
		}
		m := map[string]any{}
		for i := 0; i+1 < len(v); i += 2 {
			m[fmt.Sprint(v[i])] = v[i+1]
		}
		return m, nil
	}
	return nil, errors.New("no node answers")
}

// shardOf is the shard of key in a cluster of shards.
func shardOf(key string, shards int) int {
	return cluster.ShardOfSlot(cluster.Slot([]byte(key)), shards)
}
