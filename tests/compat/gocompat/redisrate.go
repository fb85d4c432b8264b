package main

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/go-redis/redis_rate/v10"
	"github.com/redis/go-redis/v9"
)

// runRedisRate runs go-redis/redis_rate v10, unchanged, for the limiters
// stage of the suite (tests/compat/driver/limiters.go): its GCRA script
// (TIME, GET, SET EX, through EVALSHA with EVAL on NOSCRIPT) on go-redis's
// Client or ClusterClient, as LIMITER_MODE says. It prints the decisions,
// one per line, for the driver to compare with Redis's.
func runRedisRate() error {
	addrs := strings.Split(os.Getenv("LIMITER_ADDRS"), ",")
	prefix := os.Getenv("LIMITER_PREFIX")
	var rdb redis.UniversalClient
	if os.Getenv("LIMITER_MODE") == "cluster" {
		rdb = redis.NewClusterClient(&redis.ClusterOptions{Addrs: addrs, ClusterStateReloadInterval: time.Second})
	} else {
		rdb = redis.NewClient(&redis.Options{Addr: addrs[0]})
	}
	defer rdb.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fmt.Printf("VERSION\tredis_rate %s, go-redis %s\n", moduleVersion("github.com/go-redis/redis_rate/v10"), moduleVersion("github.com/redis/go-redis/v9"))
	decision := func(step string, res *redis_rate.Result, err error) error {
		if err != nil {
			return fmt.Errorf("%s: %w", step, err)
		}
		fmt.Printf("DECISION\t%s\tallowed=%d remaining=%d\n", step, res.Allowed, res.Remaining)
		return nil
	}
	limiter := redis_rate.NewLimiter(rdb)
	limit := redis_rate.PerMinute(5)
	for i := 1; i <= 8; i++ {
		res, err := limiter.Allow(ctx, prefix+"user1", limit)
		if err := decision(fmt.Sprintf("allow %d", i), res, err); err != nil {
			return err
		}
	}
	res, err := limiter.AllowN(ctx, prefix+"user2", limit, 3)
	if err := decision("allow 3", res, err); err != nil {
		return err
	}
	res, err = limiter.AllowAtMost(ctx, prefix+"user2", limit, 5)
	if err := decision("allow at most 5", res, err); err != nil {
		return err
	}
	if err := limiter.Reset(ctx, prefix+"user1"); err != nil {
		return fmt.Errorf("reset: %w", err)
	}
	res, err = limiter.Allow(ctx, prefix+"user1", limit)
	return decision("after reset", res, err)
}
