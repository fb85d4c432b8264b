package engine

import "github.com/rlserver/rlserver/internal/wire"

// RL.RESERVE decides as its algorithm's command does, and when it grants,
// keeps a reservation of what it charged: the estimate. RL.SETTLE, once the
// work is done and its cost known, refunds the difference or charges the
// excess (as FORCE: always counted), exactly once; a reservation not
// settled within its TTL is settled at its estimate, which is already
// charged. Reservations are replicated state like keys: in the log, in
// snapshots (sections.go), in the digest.

// Bounds of RL.RESERVE and RL.SETTLE.
const (
	// DefaultReservationTTL is a reservation's TTL without the TTL option.
	DefaultReservationTTL = 60_000
	// MaxReservationTTL bounds a reservation's TTL: a day, as RL.SHARE's.
	MaxReservationTTL = 86_400_000
	// reservationKept is how long a reservation is kept once settled or
	// expired, for a repeated RL.SETTLE (a retry after a failover, or a
	// concurrent one) to be answered the first outcome; later it is
	// forgotten.
	reservationKept = 30_000
)

// ExtraReservation is the extra field of RL.RESERVE's reply that holds the
// reservation's seq (0 when refused); the server replies the id, built
// from it and the key.
const ExtraReservation = "reservation_id"

// Errors of RL.SETTLE.
var (
	ErrNoReservation      = &Error{CodeNoReservation, "no such reservation (never made, or settled or expired more than 30 s ago)"}
	ErrReservationExpired = &Error{CodeExpired, "reservation expired: its TTL ended and it was settled at its estimate"}
)

// ReserveOptions is RL.RESERVE's TTL option.
var ReserveOptions = []Param{{Name: "ttl", Keyword: "TTL", Min: 1, Max: MaxReservationTTL}}

// ReserveCommand is the engine command RL.RESERVE asks: decide estimate
// units of op's algorithm on key under params, and keep the reservation for
// ttl ms. The op and TTL travel in Value, as varints.
func ReserveCommand(op Op, key []byte, params [3]int64, estimate, ttl int64) Command {
	v := wire.AppendVarints(make([]byte, 0, 2*wire.VarintLen(MaxReservationTTL)), int64(op), ttl)
	return Command{Op: OpReserve, Key: key, Value: v, Args: [4]int64{params[0], params[1], params[2], estimate}}
}

// reserveRequestOf decodes what ReserveCommand encoded: the algorithm's op
// and the TTL.
func reserveRequestOf(c *Command) (Op, int64, bool) {
	r := wire.NewReader(c.Value, errNotPacked)
	op, ttl := r.Varint(), r.Varint()
	if r.Err() != nil || r.Len() != 0 || op < 0 || op >= int64(opCount) {
		return opNone, 0, false
	}
	return Op(op), ttl, true
}

// checkReserve checks RL.RESERVE: an algorithm a policy may run (the
// decisions with the common reply), its parameters with the estimate as
// their cost, and the TTL.
func checkReserve(c Command) error {
	op, ttl, ok := reserveRequestOf(&c)
	if !ok || !policyOp(op) {
		return paramError("malformed RL.RESERVE request")
	}
	if err := ReserveOptions[0].Check(ttl); err != nil {
		return err
	}
	run := Command{Op: op, Args: c.Args}
	return run.Check()
}

// reserve applies RL.RESERVE: the decision of its algorithm, and when it
// grants, a reservation with the shard's next seq, which the reply's extra
// field ExtraReservation carries (0 when refused).
func (s *Shard) reserve(now int64, c *Command, r *Result) {
	op, ttl, _ := reserveRequestOf(c) // Valid: commands and the codec checked it
	if err := s.admit(now, 1, nil); err != nil {
		r.Type, r.Err = ResError, err
		return
	}
	run := Command{Op: op, Key: c.Key, Args: c.Args}
	if s.decide(now, &run, r); r.Type != ResDecision {
		return
	}
	seq := int64(0)
	if r.Decision.Allowed {
		seq = leaseID(s.res.last, now)
		s.res.add(seq, &reservedCharge{key: string(c.Key), op: op, params: [3]int64{c.Args[0], c.Args[1], c.Args[2]},
			estimate: c.Args[3], at: now, until: now + ttl}, now)
		s.res.made++
	}
	r.addExtra(ExtraReservation, seq)
}

// settle applies RL.SETTLE of reservation Args[0] on Key at the actual cost
// Args[1]: the difference from the estimate is refunded (only what the
// estimate's charge still weighs) or charged as FORCE, under the
// reservation's algorithm and parameters. The reply is the decision that
// makes, or, for a reservation settled already, the one its settlement
// made. A settlement the key refuses (WRONGTYPE, OOM) leaves it pending.
func (s *Shard) settle(now int64, c *Command, r *Result) {
	seq, actual := c.Args[0], c.Args[1]
	res := s.res.find(c.Key, seq, now)
	switch {
	case res == nil:
		r.Type, r.Err = ResError, ErrNoReservation
		return
	case res.settled:
		r.Type, r.Decision = ResDecision, res.outcome
		return
	case now >= res.until:
		r.Type, r.Err = ResError, ErrReservationExpired
		return
	}
	run := Command{Op: res.op, Key: c.Key, Args: [4]int64{res.params[0], res.params[1], res.params[2], actual - res.estimate}}
	if run.Args[3] > 0 {
		run.Flags = FlagForce
	}
	v, err := s.applyDecision(now, &run, res.at)
	if err != nil {
		r.Type, r.Err = ResError, err
		return
	}
	s.res.settle(seq, res, now, actual, v.d)
	r.Type, r.Decision = ResDecision, v.d
}

// reservationFields appends to an RL.INFO the key's reservedCharges pending
// at now, when it has some: how many, and the units their estimates hold.
func (s *Shard) reservationFields(f []Field, key []byte, now int64) []Field {
	n, units := s.res.outstanding(key, now)
	if n == 0 {
		return f
	}
	return append(f, Field{Name: "reservations", Int: n}, Field{Name: "reserved", Int: units})
}
