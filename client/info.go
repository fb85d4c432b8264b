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
	// "rl.log", "rl.token", "rl.leaky", "rl.gcra" or "cl.throttle".
	Algorithm string
	// Fields holds every integer field of the reply by its name: the
	// parameters of the key's latest granted call and its state
	// ("limit", "window_ms", "tokens", "tat_ms" ...; docs/commands.md).
	Fields map[string]int64
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
	info := Info{Fields: map[string]int64{}}
	set := func(name, value any) error {
		k, ok := name.(string)
		if !ok {
			return fmt.Errorf("%w: field name %T", ErrUnexpectedReply, name)
		}
		switch v := value.(type) {
		case string:
			if k != "algorithm" {
				return fmt.Errorf("%w: field %s is a string", ErrUnexpectedReply, k)
			}
			info.Algorithm = v
		case int64:
			info.Fields[k] = v
		default:
			return fmt.Errorf("%w: field %s is %T", ErrUnexpectedReply, k, value)
		}
		return nil
	}
	switch r := reply.(type) {
	case []any:
		if len(r)%2 != 0 {
			return Info{}, fmt.Errorf("%w: %d elements, not pairs", ErrUnexpectedReply, len(r))
		}
		for i := 0; i < len(r); i += 2 {
			if err := set(r[i], r[i+1]); err != nil {
				return Info{}, err
			}
		}
	case map[any]any:
		for k, v := range r {
			if err := set(k, v); err != nil {
				return Info{}, err
			}
		}
	default:
		return Info{}, fmt.Errorf("%w: %T", ErrUnexpectedReply, reply)
	}
	if info.Algorithm == "" {
		return Info{}, fmt.Errorf("%w: no algorithm field", ErrUnexpectedReply)
	}
	info.Remaining = info.Fields["remaining"]
	info.ResetAfter = msToDuration(info.Fields["reset_after_ms"])
	info.TTL = msToDuration(info.Fields["ttl_ms"])
	return info, nil
}
