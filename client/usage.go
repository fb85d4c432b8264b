package client

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/redis/go-redis/v9"
)

// Charging by usage: what a request cost known only once it is done (the
// tokens a model generated, the bytes streamed). Charge counts it after
// the fact, whether it fits or not (FORCE); Reserve and Settle agree on an
// estimate first, then charge the actual cost, exactly once
// (docs/commands.md#charging-by-usage).

// Errors of Settle; compare with errors.Is.
var (
	// ErrNoSuchReservation: rlserver knows no reservation of that id: it was
	// never made, or was settled or expired more than 30 s ago.
	ErrNoSuchReservation = errors.New("rlserver: no such reservation")
	// ErrReservationExpired: the reservation's TTL ended before it was
	// settled, and it was settled at its estimate; the actual cost was not
	// counted.
	ErrReservationExpired = errors.New("rlserver: reservation expired")
)

// The error texts rlserver answers RL.SETTLE with: ERRs, which only their
// text tells apart.
const (
	noSuchReservation  = "ERR no such reservation"
	reservationExpired = "ERR reservation expired"
)

// Reservation is what Reserve answers: the decision on the estimate, and,
// when it was granted, the reservation's id.
type Reservation struct {
	Decision
	// ID names the reservation for Settle; "" when the decision refused
	// (nothing was reserved).
	ID string
}

// Charge spends n units of key under rule whether they fit or not (FORCE),
// for work already done: Allowed reports whether they fitted, and when
// they did not, Remaining is below zero by the debt, RetryAfter the time
// until it is paid off, and every request is refused until then. A cost of
// 0 peeks; a negative one refunds. Throttle is not supported.
func (c *Client) Charge(ctx context.Context, key string, rule Rule, n int64) (Decision, error) {
	if rule == nil {
		return Decision{}, ErrNoRule
	}
	word, _, ok := rule.limit()
	args := append(rule.command(key, n), "FORCE")
	if !ok {
		return Decision{}, fmt.Errorf("%s %s FORCE: %w", args[0], key, ErrNotSupported)
	}
	reply, err := c.do(ctx, args...)
	var d Decision
	if err == nil {
		d, err = parseDecision(reply, ruleExtras(word)...)
	}
	if err != nil {
		return Decision{}, fmt.Errorf("%s %s FORCE: %w", args[0], key, err)
	}
	return d, nil
}

// Reserve decides estimate units of key under rule, as AllowN does, and
// when they are granted keeps them as a reservation for ttl (0: rlserver's
// default, 60 s), to be settled at the actual cost with Settle. A
// reservation not settled within its TTL is settled at its estimate: pick a
// ttl above the longest the work can take. The estimate must be positive.
// Throttle is not supported.
func (c *Client) Reserve(ctx context.Context, key string, rule Rule, estimate int64, ttl time.Duration) (Reservation, error) {
	if rule == nil {
		return Reservation{}, ErrNoRule
	}
	word, params, ok := rule.limit()
	args := append(append([]any{"RL.RESERVE", word, key}, params...), "COST", estimate)
	if !ok {
		return Reservation{}, fmt.Errorf("RL.RESERVE %s: %w", key, ErrNotSupported)
	}
	if ttl > 0 {
		args = append(args, "TTL", durationMs(ttl))
	}
	reply, err := c.doAt(ctx, 2, args...)
	var r Reservation
	if err == nil {
		r, err = parseReservation(reply, ruleExtras(word)...)
	}
	if err != nil {
		return Reservation{}, fmt.Errorf("RL.RESERVE %s %s: %w", word, key, err)
	}
	return r, nil
}

// Settle settles the reservation id at the actual cost: the difference from
// its estimate is refunded (what the estimate still weighs) or charged
// (always counted, as Charge). It is settled once: a repeat, from a retry
// or another client, answers the first settlement's decision and changes
// nothing, so Settle may be retried safely. A reservation rlserver does not
// know gives ErrNoSuchReservation; one whose TTL ended first,
// ErrReservationExpired.
func (c *Client) Settle(ctx context.Context, id string, actual int64) (Decision, error) {
	// The id begins with a hash tag of its key's slot: a ClusterClient
	// routes it by its first argument.
	reply, err := c.doAt(ctx, 1, "RL.SETTLE", id, actual)
	var d Decision
	if err == nil {
		d, err = parseDecision(reply)
	}
	if err != nil {
		return Decision{}, fmt.Errorf("RL.SETTLE %s %d: %w", id, actual, settleError(err))
	}
	return d, nil
}

// settleError adds ErrNoSuchReservation or ErrReservationExpired to the
// error replies that say so, keeping the reply itself for errors.As.
func settleError(err error) error {
	var reply redis.Error
	if !errors.As(err, &reply) {
		return err
	}
	switch text := reply.Error(); {
	case strings.HasPrefix(text, noSuchReservation):
		return fmt.Errorf("%w: %w", ErrNoSuchReservation, err)
	case strings.HasPrefix(text, reservationExpired):
		return fmt.Errorf("%w: %w", ErrReservationExpired, err)
	}
	return err
}

// parseReservation reads RL.RESERVE's reply: a decision reply whose last
// field is the id, a string or nil (RESP2: the last element; RESP3: the
// map's reservation_id).
func parseReservation(reply any, extras ...string) (Reservation, error) {
	var idv any
	switch m := reply.(type) {
	case []any:
		if len(m) < 6 {
			return Reservation{}, fmt.Errorf("%w: an array of %d elements, not 6 or more", ErrUnexpectedReply, len(m))
		}
		reply, idv = m[:len(m)-1], m[len(m)-1]
	case map[any]any:
		idv, reply = m[fieldReservationID], without(m, any(fieldReservationID))
	case map[string]any:
		idv, reply = m[fieldReservationID], without(m, fieldReservationID)
	}
	d, err := parseDecision(reply, extras...)
	if err != nil {
		return Reservation{}, err
	}
	id, isString := idv.(string)
	if (idv != nil && !isString) || (id != "") != d.Allowed {
		return Reservation{}, fmt.Errorf("%w: reservation id %T %v with allowed %v", ErrUnexpectedReply, idv, idv, d.Allowed)
	}
	return Reservation{Decision: d, ID: id}, nil
}

// fieldReservationID names the id in RL.RESERVE's RESP3 reply.
const fieldReservationID = "reservation_id"

// without is a copy of m without key.
func without[K comparable](m map[K]any, key K) map[K]any {
	out := make(map[K]any, len(m))
	for k, v := range m {
		if k != key {
			out[k] = v
		}
	}
	return out
}
