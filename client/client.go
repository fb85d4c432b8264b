package client

import (
	"context"
	"fmt"

	"github.com/redis/go-redis/v9"
)

// Client asks rlserver for rate-limit decisions. It is safe for concurrent
// use. It holds no state of its own beyond the go-redis client, unless
// WithLeases gives it budget leases to decide hot keys from (then Close
// gives them back).
type Client struct {
	rdb    redis.UniversalClient
	leases *leaseTable // WithLeases; nil without
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
//
// Options: WithLeases, to decide hot keys in the client from budget leases.
func New(rdb redis.UniversalClient, opts ...Option) *Client {
	c := &Client{rdb: rdb}
	for _, o := range opts {
		o(c)
	}
	return c
}

// Allow asks whether key may spend one unit under rule, and spends it if so.
func (c *Client) Allow(ctx context.Context, key string, rule Rule) (Decision, error) {
	return c.AllowN(ctx, key, rule, 1)
}

// AllowN asks whether key may spend cost units under rule, all or nothing,
// and spends them if so. A cost of 0 is a peek: it reports the key's state
// and spends nothing. A negative cost is a refund (see Refund).
//
// A key leased by WithLeases is decided from the client's lease, without a
// round trip: the decision's Remaining and ResetAfter are those of the
// client's own bucket, its Limit the rule's.
func (c *Client) AllowN(ctx context.Context, key string, rule Rule, cost int64) (Decision, error) {
	if rule == nil {
		return Decision{}, ErrNoRule
	}
	if limit, windowMs, ok := c.leases.selects(key, rule); ok {
		return c.leases.allowN(ctx, key, limit, windowMs, cost)
	}
	args := rule.command(key, cost)
	if _, _, ok := rule.limit(); !ok && cost < 0 {
		return Decision{}, fmt.Errorf("%s %s: refund: %w", args[0], key, ErrNotSupported)
	}
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

// Refund gives n units back to key under rule, e.g. for a request that was
// allowed but failed before it did its work. It is AllowN with cost -n: it
// is always allowed, never takes the key above its full budget, and the
// decision reports the budget after it. Refunding a key that does not exist
// (one at its full budget) changes nothing. Every rule but Throttle takes
// refunds; a negative n is refused with ErrNotSupported rather than spent.
//
// What a refund gives back depends on the algorithm: a window takes the
// units off its count (the sliding window from the current window's count
// first, then the previous one's), the log removes its newest entries, a
// bucket gets tokens back (or its level lowered), a quota takes them off the
// current period. A window or period that has passed has nothing to refund.
func (c *Client) Refund(ctx context.Context, key string, rule Rule, n int64) (Decision, error) {
	if n < 0 {
		return Decision{}, fmt.Errorf("refund of %d units: %w", n, ErrNotSupported)
	}
	return c.AllowN(ctx, key, rule, -n)
}

// AllowPartial asks for up to n units of key under rule and spends what is
// available (PARTIAL), returning how many were granted. For example a
// worker that wants a batch of 100 but may process fewer. When none is
// available the decision is a refusal whose RetryAfter is the wait for one
// unit, and granted is 0. A Shape's Delay is the wait before the granted
// units proceed. Throttle is not supported (ErrNotSupported).
func (c *Client) AllowPartial(ctx context.Context, key string, rule Rule, n int64) (granted int64, d Decision, err error) {
	if rule == nil {
		return 0, Decision{}, ErrNoRule
	}
	args := append(rule.command(key, n), "PARTIAL")
	word, _, ok := rule.limit()
	if !ok {
		return 0, Decision{}, fmt.Errorf("%s %s PARTIAL: %w", args[0], key, ErrNotSupported)
	}
	reply, err := c.do(ctx, args...)
	if err == nil {
		granted, d, err = parsePartial(reply, ruleExtras(word)...)
	}
	if err != nil {
		return 0, Decision{}, fmt.Errorf("%s %s PARTIAL: %w", args[0], key, err)
	}
	return granted, d, nil
}

// parsePartial reads the reply of a decision asked with PARTIAL: the
// common fields, granted, then the rule's own extras.
func parsePartial(reply any, extras ...string) (int64, Decision, error) {
	r, err := readDecision(reply)
	if err != nil {
		return 0, Decision{}, err
	}
	if err := r.name(append([]string{extraGranted}, extras...)...); err != nil {
		return 0, Decision{}, err
	}
	return r.extras[extraGranted], r.decision(), nil
}

// do sends one keyed command, the key being its first argument.
func (c *Client) do(ctx context.Context, args ...any) (any, error) {
	return c.doAt(ctx, 1, args...)
}

// doAt sends a command whose first key is argument keyPos (0: it has none).
func (c *Client) doAt(ctx context.Context, keyPos int, args ...any) (any, error) {
	cmd := redis.NewCmd(ctx, args...)
	// Say where the key is, so a ClusterClient routes by it without first
	// asking the server for COMMAND INFO.
	if keyPos > 0 {
		cmd.SetFirstKeyPos(int8(keyPos))
	}
	_ = c.rdb.Process(ctx, cmd)
	return cmd.Result()
}
