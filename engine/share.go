package engine

import (
	"math"

	"github.com/rlserver/rlserver/internal/wire"
)

// RL.SHARE hands out budget leases: shares of one limit's rate, each
// granted to a holder (an Envoy, a client process, a region) that decides
// locally with a token bucket of that rate until the grant expires. It is
// Doorman's design, made exact and replicated: every grant is a write
// through the shard's log, so a new leader knows every grant still in
// force and never hands the same budget out twice.
//
// A share key's record holds the limit and the window (params), and the
// last sequence number granted and the latest expiry of any reservation
// (state); its holders live in its chunk's extras (extras.go), sorted by id. A holder's
// reservations are the grants it may still be using: each until its TTL
// passes, or until the holder acknowledges a newer grant (ACK). Its
// committed rate is the largest of them, since it uses one grant at a
// time. The shard never lets the committed rates of a key's holders add up
// to more than its limit (docs/algorithms.md, "RL.SHARE — budget leases").

// Bounds and defaults of RL.SHARE.
const (
	// UnknownDemand is a holder's demand when it did not say (no DEMAND):
	// it wants as much as it can get.
	UnknownDemand = -1
	// DefaultShareTTL is a grant's TTL without the TTL option, in ms.
	DefaultShareTTL = 10_000
	// DefaultShareBurst is the BURST without the option, in ms of the
	// granted rate (or the window, when that is shorter).
	DefaultShareBurst = 100
	// MaxShareTTL bounds a grant's TTL: a day. A holder that crashed
	// keeps its share committed until its grants expire, so a longer TTL
	// would only let a dead holder starve the living.
	MaxShareTTL = 86_400_000
	// MaxShareHolders bounds the holders of one key: each request
	// splits the key's budget among all of them, in O(holders log
	// holders), about 35 µs at this bound (BenchmarkShare).
	MaxShareHolders = 1000
	// MaxHolderLen bounds a holder's id, in bytes.
	MaxHolderLen = 256
	// maxReservations bounds a holder's reservations: past it, its two
	// oldest are merged into one that covers both (see addReservation).
	maxReservations = 16
)

// ShareOptions are RL.SHARE's options, in the order the command documents
// them: DEMAND, TTL, BURST and ACK. Their Check speaks of what the caller
// wrote ("ttl must be an integer from 1 to 86400000"); BURST is further
// bounded by the window (ShareRequest's check).
var ShareOptions = []Param{
	{Name: "demand", Keyword: "DEMAND", Min: 0, Max: MaxCount},
	{Name: "ttl", Keyword: "TTL", Min: 1, Max: MaxShareTTL},
	{Name: "burst", Keyword: "BURST", Min: 0, Max: MaxDuration},
	{Name: "ack", Keyword: "ACK", Min: 1, Max: math.MaxInt64},
}

// shareParams are RL.SHARE's parameters, in Args[0] and Args[1].
var shareParams = []Param{pLimit, pWindow}

// ShareRequest is what RL.SHARE asks beyond its key. Its Command carries
// the limit, the window, the TTL and the demand in Args, and in Value the
// holder, packed, followed by BURST and ACK as varints.
type ShareRequest struct {
	Holder        []byte
	Limit, Window int64
	Demand        int64 // units per window, allowed and refused; UnknownDemand when not given
	TTL           int64 // ms the grant lasts
	Burst         int64 // ms of the granted rate a full bucket holds, at most Window
	Ack           int64 // the seq of the grant the holder now uses; 0: none
}

// Command is the engine command that asks for q on key.
func (q *ShareRequest) Command(key []byte) Command {
	v := AppendPacked(make([]byte, 0, len(q.Holder)+2+2*wire.VarintLen(math.MaxInt64)), q.Holder)
	v = wire.AppendVarints(v, q.Burst, q.Ack)
	return Command{Op: OpShare, Key: key, Value: v, Args: [4]int64{q.Limit, q.Window, q.TTL, q.Demand}}
}

// shareRequestOf decodes what Command encoded; false if c's value is not
// such an encoding.
func shareRequestOf(c *Command) (ShareRequest, bool) {
	holder, rest, ok := nextPacked(c.Value)
	if !ok {
		return ShareRequest{}, false
	}
	r := wire.NewReader(rest, errNotPacked)
	burst, ack := r.Varint(), r.Varint()
	if r.Err() != nil || r.Len() != 0 {
		return ShareRequest{}, false
	}
	return ShareRequest{Holder: holder, Limit: c.Args[0], Window: c.Args[1], TTL: c.Args[2], Demand: c.Args[3],
		Burst: burst, Ack: ack}, true
}

// CheckHolder returns nil when id may name a holder, and otherwise the
// error that says why.
func CheckHolder(id []byte) error {
	if len(id) < 1 || len(id) > MaxHolderLen {
		return paramError("holder must be 1 to %d bytes long", MaxHolderLen)
	}
	return nil
}

// checkShare checks what the bounds of RL.SHARE's two parameters cannot:
// the holder and the options.
func checkShare(c Command) error {
	q, ok := shareRequestOf(&c)
	if !ok {
		return paramError("malformed RL.SHARE request")
	}
	if err := CheckHolder(q.Holder); err != nil {
		return err
	}
	if q.Demand != UnknownDemand {
		if err := ShareOptions[0].Check(q.Demand); err != nil {
			return err
		}
	}
	if err := ShareOptions[1].Check(q.TTL); err != nil {
		return err
	}
	if q.Burst < 0 || q.Burst > q.Window {
		return paramError("burst must be an integer from 0 to %d (window_ms)", q.Window)
	}
	if q.Ack != 0 {
		return ShareOptions[3].Check(q.Ack)
	}
	return nil
}

// checkUnshare checks RL.UNSHARE's holder, in Value.
func checkUnshare(c Command) error { return CheckHolder(c.Value) }

// ShareReply is RL.SHARE's reply, in its fields' order: the grant's rate
// (units per window), its bucket size, its TTL and seq; the holder's fair
// share; and how many holders share the key.
var ShareReply = []string{"rate", "burst", "ttl_ms", "seq", "fair_share", "holders"}

// shareBurst is the bucket a grant of rate units per window fills: burst
// ms of the rate, at least one unit when the rate is not 0.
func shareBurst(rate, burstMs, window int64) int64 {
	if rate == 0 {
		return 0
	}
	return max(mulDivFloor(rate, burstMs, window), 1)
}
