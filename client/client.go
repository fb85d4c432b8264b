package client

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Client asks rlserver for rate-limit decisions. It is safe for concurrent
// use; it holds no state of its own beyond the go-redis client.
type Client struct {
	rdb redis.UniversalClient
}

// New returns a Client over rdb: a *redis.Client for a single node (or any
// node of a cluster, which forwards), a *redis.ClusterClient to go straight
// to each key's shard leader. RESP2 and RESP3 connections both work.
//
// Two go-redis options matter for a limiter (docs/go-client.md):
// ContextTimeoutEnabled, so a deadline on ctx also bounds the socket I/O
// (otherwise go-redis waits up to its ReadTimeout however short the
// deadline); and MaxRetries, because go-redis retries TRYAGAIN and network
// errors, and a retried decision may be counted twice.
func New(rdb redis.UniversalClient) *Client {
	return &Client{rdb: rdb}
}

// Allow asks whether key may spend one unit under rule, and spends it if so.
func (c *Client) Allow(ctx context.Context, key string, rule Rule) (Decision, error) {
	return c.AllowN(ctx, key, rule, 1)
}

// AllowN asks whether key may spend cost units under rule, all or nothing,
// and spends them if so. A cost of 0 is a peek: it reports the key's state
// and spends nothing.
func (c *Client) AllowN(ctx context.Context, key string, rule Rule, cost int64) (Decision, error) {
	if rule == nil {
		return Decision{}, ErrNoRule
	}
	args := rule.command(key, cost)
	reply, err := c.do(ctx, args...)
	if err != nil {
		return Decision{}, fmt.Errorf("%s %s: %w", args[0], key, err)
	}
	d, err := rule.parse(reply)
	if err != nil {
		return Decision{}, fmt.Errorf("%s %s: %w", args[0], key, err)
	}
	return d, nil
}

// do sends one keyed command, the key being its first argument.
func (c *Client) do(ctx context.Context, args ...any) (any, error) {
	cmd := redis.NewCmd(ctx, args...)
	// Say where the key is, so a ClusterClient routes by it without first
	// asking the server for COMMAND INFO.
	cmd.SetFirstKeyPos(1)
	_ = c.rdb.Process(ctx, cmd)
	return cmd.Result()
}
