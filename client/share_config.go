package client

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"os"
	"time"
)

// Option configures a Client (see New).
type Option func(*Client)

// LeaseConfig tunes the budget leases of WithLeases. Zero fields take the
// defaults.
type LeaseConfig struct {
	// TTL is how long a grant lasts, counted from when its request was
	// sent (sent in whole milliseconds, rounded up; at most a day).
	// Default 10 s. It is also how long the client goes on deciding from
	// its lease when rlserver cannot be reached, and how long the share of
	// a client that died stays taken from the others.
	TTL time.Duration
	// Renew is how often a key's lease is renewed, reporting its demand.
	// Default 1 s, and at most TTL/2. A lease is renewed sooner (after a
	// tenth of Renew) when its demand has more than doubled or halved, when
	// its grant is below its fair share (the rest is still held by others'
	// older grants), and to acknowledge a grant that lowered its rate.
	Renew time.Duration
	// Burst is how much of its rate a lease's bucket holds, as a duration
	// of the rate (RL.SHARE's BURST, whole milliseconds, at most the
	// rule's window). Default 100 ms. It bounds how bursty the client's
	// admissions may be, and adds Limit × Burst / Window to the bound on
	// what all holders admit together (docs/go-client.md, "Leases").
	Burst time.Duration
	// Holder names this client to rlserver. Default: the host name, the
	// process id and 8 random bytes, unique per process. Two clients that
	// share a holder id share one grant and break the bound.
	Holder string
}

// The defaults of LeaseConfig.
const (
	defaultLeaseTTL   = 10 * time.Second
	defaultLeaseRenew = time.Second
	defaultLeaseBurst = 100 * time.Millisecond
	maxLeaseTTL       = 24 * time.Hour
	maxHolderLen      = 256
)

// withDefaults fills in the zero fields and brings Renew within TTL/2.
func (c LeaseConfig) withDefaults() (LeaseConfig, error) {
	if c.TTL <= 0 {
		c.TTL = defaultLeaseTTL
	}
	if c.TTL > maxLeaseTTL {
		return c, fmt.Errorf("client.WithLeases: TTL %v is above a day", c.TTL)
	}
	if c.Renew <= 0 {
		c.Renew = defaultLeaseRenew
	}
	c.Renew = min(c.Renew, c.TTL/2)
	if c.Burst <= 0 {
		c.Burst = defaultLeaseBurst
	}
	if c.Holder == "" {
		c.Holder = newHolderID()
	}
	if len(c.Holder) > maxHolderLen {
		return c, fmt.Errorf("client.WithLeases: Holder is %d bytes, more than %d", len(c.Holder), maxHolderLen)
	}
	return c, nil
}

// newHolderID is a holder id unique to this process: host name, pid and
// 8 random bytes (a process restarted under the same pid, in a container
// say, is still a new holder).
func newHolderID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "unknown"
	}
	var r [8]byte
	_, _ = rand.Read(r[:]) // never fails (crypto/rand)
	host = host[:min(len(host), maxHolderLen-40)]
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(r[:]))
}

// WithLeases makes the client decide the keys that keys selects locally,
// from budget leases (RL.SHARE), instead of asking rlserver for every
// decision: for hot keys, a global limit that one shard leader could not
// decide fast enough, or that every request should not pay a round trip
// for. nil selects every key.
//
// Only the rules that are a number of units per window are leased:
// SlidingWindow, FixedWindow and SlidingLog. A selected key decided under
// another rule, and every call but Allow, AllowN and Refund, goes to
// rlserver as usual. Every client deciding a leased key must lease it: on
// rlserver the key holds the shares, not a window, and a plain RL.SLIDING
// of it is refused with WRONGTYPE.
//
// The client holds one lease per key per process, renews it in the
// background, and gives them back on Close. docs/go-client.md ("Leases")
// states the bound on what all holders admit together, and what happens
// when rlserver cannot be reached. WithLeases panics if cfg is invalid
// (a TTL above a day, a holder id above 256 bytes): that is a program's
// error, not a runtime condition.
func WithLeases(keys func(key string) bool, cfg LeaseConfig) Option {
	cfg, err := cfg.withDefaults()
	if err != nil {
		panic(err)
	}
	return func(c *Client) {
		c.leases = newLeaseTable(keys, cfg, c.do, time.Now)
	}
}

// Errors of leased decisions; compare with errors.Is.
var (
	// ErrNoLease: a leased key has no grant in force, because rlserver
	// could not be reached (or refused RL.SHARE) and the last grant has
	// expired or there never was one. The error wraps the cause. A route
	// falls back to its FailMode.
	ErrNoLease = errors.New("rlserver: no lease in force")
	// ErrClosed: the client was closed, so it decides no leased key.
	ErrClosed = errors.New("rlserver: client closed")
)

// Grant is the budget lease a client holds for a key, as it uses it now.
type Grant struct {
	// Rate is how many units per Window this client may admit.
	Rate   int64
	Window time.Duration
	// Burst is the depth of the client's bucket, in units.
	Burst int64
	// Tokens is what the bucket holds now.
	Tokens int64
	// Expires is when the grant runs out, unless renewed before.
	Expires time.Time
	// Seq numbers the grant on its key.
	Seq int64
	// FairShare is the rate this client's demand entitles it to; a Rate
	// below it grows as other holders give up their older grants.
	FairShare int64
	// Holders is how many clients share the key.
	Holders int64
	// Holder is this client's holder id.
	Holder string
}

// Grant reports the lease the client holds for key, if it has one (a
// grant received, in force or not). It asks rlserver nothing.
func (c *Client) Grant(key string) (Grant, bool) {
	if c.leases == nil {
		return Grant{}, false
	}
	return c.leases.grant(key)
}

// Close gives back the client's budget leases (RL.UNSHARE), so that other
// holders may use their shares at once rather than when they expire, and
// stops deciding leased keys (ErrClosed). It aborts the renewals in
// flight and waits up to a second for the releases. It does not close the
// go-redis client, which belongs to the caller; without WithLeases it does
// nothing.
func (c *Client) Close() error {
	if c.leases == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), closeTimeout)
	defer cancel()
	return c.leases.close(ctx)
}

// closeTimeout bounds Close.
const closeTimeout = time.Second
