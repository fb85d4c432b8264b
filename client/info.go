package client

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/redis/go-redis/v9"
)

// Info describes a limiter key, as RL.INFO reports it.
type Info struct {
	// Algorithm is the command that owns the key: "rl.sliding", "rl.fixed",
	// "rl.log", "rl.token", "rl.leaky", "rl.gcra", "rl.shape", "rl.quota",
	// "rl.lease" (RL.ACQUIRE's leases) or "cl.throttle".
	Algorithm string
	// Fields holds every integer field of the reply by its name: the
	// parameters of the key's latest granted call and its state
	// ("limit", "window_ms", "tokens", "tat_ms", "held" ...;
	// docs/commands.md).
	Fields map[string]int64
	// Strings holds the other string fields by name, such as RL.QUOTA's
	// "period" ("MONTH").
	Strings map[string]string
	// Remaining is what a peek with those parameters would report now.
	Remaining int64
	// ResetAfter is how long until the key is back to its full budget.
	ResetAfter time.Duration
	// TTL is how long until the key expires.
	TTL time.Duration
}

// Info describes key with RL.INFO. A key that does not exist (one at its
// full budget) gives an error matching ErrNoSuchKey.
func (c *Client) Info(ctx context.Context, key string) (Info, error) {
	reply, err := c.do(ctx, "RL.INFO", key)
	if errors.Is(err, redis.Nil) {
		return Info{}, fmt.Errorf("RL.INFO %s: %w", key, ErrNoSuchKey)
	}
	if err != nil {
		return Info{}, fmt.Errorf("RL.INFO %s: %w", key, err)
	}
	info, err := parseInfo(reply)
	if err != nil {
		return Info{}, fmt.Errorf("RL.INFO %s: %w", key, err)
	}
	return info, nil
}

// Reset gives key its full budget back (RL.RESET) and reports whether it
// existed.
func (c *Client) Reset(ctx context.Context, key string) (bool, error) {
	reply, err := c.do(ctx, "RL.RESET", key)
	if err != nil {
		return false, fmt.Errorf("RL.RESET %s: %w", key, err)
	}
	n, ok := reply.(int64)
	if !ok {
		return false, fmt.Errorf("RL.RESET %s: %w: %T", key, ErrUnexpectedReply, reply)
	}
	return n == 1, nil
}

// parseInfo reads RL.INFO's reply: a flat array of name/value pairs (RESP2)
// or a map (RESP3).
func parseInfo(reply any) (Info, error) {
	info := Info{Fields: map[string]int64{}, Strings: map[string]string{}}
	err := forEachPair(reply, func(k string, value any) error {
		switch v := value.(type) {
		case string:
			if k == "algorithm" {
				info.Algorithm = v
			} else {
				info.Strings[k] = v
			}
		case int64:
			info.Fields[k] = v
		default:
			return fmt.Errorf("%w: field %s is %T", ErrUnexpectedReply, k, value)
		}
		return nil
	})
	if err != nil {
		return Info{}, err
	}
	if info.Algorithm == "" {
		return Info{}, fmt.Errorf("%w: no algorithm field", ErrUnexpectedReply)
	}
	info.Remaining = info.Fields["remaining"]
	info.ResetAfter = msToDuration(info.Fields["reset_after_ms"])
	info.TTL = msToDuration(info.Fields["ttl_ms"])
	return info, nil
}

// forEachPair calls fn with each name and value of a reply that is a map
// in RESP3 and a flat array of name/value pairs in RESP2, as Redis sends
// maps to RESP2 clients. RESP3's order is lost in go-redis's Go map.
func forEachPair(reply any, fn func(name string, value any) error) error {
	pair := func(name, value any) error {
		k, ok := name.(string)
		if !ok {
			return fmt.Errorf("%w: field name %T", ErrUnexpectedReply, name)
		}
		return fn(k, value)
	}
	switch r := reply.(type) {
	case []any:
		if len(r)%2 != 0 {
			return fmt.Errorf("%w: %d elements, not pairs", ErrUnexpectedReply, len(r))
		}
		for i := 0; i < len(r); i += 2 {
			if err := pair(r[i], r[i+1]); err != nil {
				return err
			}
		}
	case map[any]any:
		for k, v := range r {
			if err := pair(k, v); err != nil {
				return err
			}
		}
	default:
		return fmt.Errorf("%w: %T", ErrUnexpectedReply, reply)
	}
	return nil
}
