package server

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
)

// MemoryLimit is --maxmemory and --maxmemory-policy: the bytes the keys of
// all shards may hold (0: no limit), split evenly among the shards, and what
// a shard at its share does with a command that would create a key. The
// limit is replicated state (engine.OpMemoryLimit goes through each shard's
// log), so every replica refuses or evicts alike; the server sets it at
// start-up and on CONFIG SET, and give every node the same setting.
type MemoryLimit struct {
	Bytes  int64
	Policy engine.MemoryPolicy
}

// perShard is the engine command that sets a shard's share of l.
func (l MemoryLimit) perShard(shards int) engine.Command {
	share := int64(0)
	if l.Bytes > 0 {
		share = max(l.Bytes/int64(shards), 1)
	}
	return engine.Command{Op: engine.OpMemoryLimit, Args: [4]int64{share, int64(l.Policy)}}
}

// ParseMemoryPolicy reads a --maxmemory-policy name.
func ParseMemoryPolicy(name string) (engine.MemoryPolicy, error) {
	for p, n := range engine.MemoryPolicyNames {
		if strings.EqualFold(name, n) {
			return engine.MemoryPolicy(p), nil
		}
	}
	return 0, fmt.Errorf("%w %q: use noeviction or volatile-ttl", errMemoryPolicy, name)
}

var (
	errMemoryPolicy = errors.New("unknown maxmemory-policy")
	errMemorySize   = errors.New("invalid memory size")
)

// ParseMemorySize reads a size as Redis's configuration does: bytes, or
// with a unit k, kb, m, mb, g, gb (k = 1000, kb = 1024, ...).
func ParseMemorySize(s string) (int64, error) {
	units := []struct {
		suffix string
		n      int64
	}{{"kb", 1 << 10}, {"mb", 1 << 20}, {"gb", 1 << 30}, {"k", 1e3}, {"m", 1e6}, {"g", 1e9}, {"b", 1}}
	lower, mul := strings.ToLower(strings.TrimSpace(s)), int64(1)
	for _, u := range units {
		if strings.HasSuffix(lower, u.suffix) {
			lower, mul = strings.TrimSuffix(lower, u.suffix), u.n
			break
		}
	}
	n, err := strconv.ParseInt(lower, 10, 64)
	if err != nil || n < 0 || n > (1<<62)/mul {
		return 0, fmt.Errorf("%w %q: bytes, or a number with k, kb, m, mb, g or gb", errMemorySize, s)
	}
	return n * mul, nil
}

// memoryLimit is the limit in force, as last configured.
func (s *Server) memoryLimit() MemoryLimit {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.cfg.MaxMemory
}

// syncMemoryLimit gives every shard whose replicated limit differs from the
// configured one its share. It runs once, when Serve starts, until done or
// Close. A shard may have no leader yet (elections run at start): the
// cluster waits for one before it gives up on a request (cluster.Do), so an
// attempt that failed has already waited, and the next one starts at once.
// It stops for good when the shards shut down, and on an error no retry
// can mend (a replica that halted, a peer's reply that does not decode).
func (s *Server) syncMemoryLimit() {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go func() {
		select {
		case <-s.stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	cmd := s.memoryLimit().perShard(s.shards.Shards())
	for shard := range s.shards.Shards() {
		for {
			if st := s.shards.Stats(shard); st.MemoryLimit == cmd.Args[0] && int64(st.MemoryPolicy) == cmd.Args[1] {
				break
			}
			_, err := cluster.Do(ctx, s.shards, shard, cmd)
			if err == nil {
				break
			}
			if !errors.Is(err, cluster.ErrNotApplied) && !errors.Is(err, cluster.ErrMayHaveBeenCounted) {
				return
			}
		}
	}
}

// setMemoryLimit is CONFIG SET maxmemory or maxmemory-policy: every shard
// gets the new share through its log.
func (c *conn) setMemoryLimit(param, value string) error {
	limit := c.srv.memoryLimit()
	var err error
	if param == "maxmemory" {
		limit.Bytes, err = ParseMemorySize(value)
	} else {
		limit.Policy, err = ParseMemoryPolicy(value)
	}
	if err != nil {
		return fmt.Errorf("ERR CONFIG SET failed (possibly related to argument '%s') - %v", param, err)
	}
	if _, err := c.everyShard(limit.perShard(c.srv.shards.Shards())); err != nil {
		return err
	}
	c.srv.mu.Lock()
	c.srv.cfg.MaxMemory = limit
	c.srv.mu.Unlock()
	return nil
}
