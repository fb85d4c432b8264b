package engine

import (
	"errors"
	"math/rand/v2"
	"testing"
)

// reserve is RL.RESERVE of estimate on key under op's params, for ttl ms.
func reserveCmd(op Op, key string, params []int64, estimate, ttl int64) Command {
	p := limitArgs(params)
	return ReserveCommand(op, []byte(key), [3]int64{p[0], p[1], p[2]}, estimate, ttl)
}

// settleCmd is RL.SETTLE of reservation seq of key at actual.
func settleCmd(key string, seq, actual int64) Command {
	return cmd(OpSettle, key, seq, actual)
}

// reserved applies a reservation and returns its reply and seq (0 when
// refused).
func reserved(t *testing.T, s *Shard, now int64, c Command) (Decision, int64) {
	t.Helper()
	r := run(s, now, c)[0]
	if r.Type != ResDecision {
		t.Fatalf("RL.RESERVE at %d: %+v", now, r)
	}
	return r.Decision, extra(t, r, ExtraReservation)
}

// The example through RL.RESERVE and RL.SETTLE, in every algorithm:
// 100 reserved, 1,200 actual, so the excess of 1,100 is charged as FORCE
// and leaves -200; the next request is refused as long as that debt
// implies.
func TestReserveThenSettleTheExample(t *testing.T) {
	for _, c := range debtCases {
		t.Run(c.name, func(t *testing.T) {
			s := NewShard()
			d, seq := reserved(t, s, debtT0, reserveCmd(c.op, "k", c.params, 100, 60_000))
			if !d.Allowed || d.Remaining != 900 || seq == 0 {
				t.Fatalf("RL.RESERVE 100: %+v, seq %d", d, seq)
			}
			r := run(s, debtT0, settleCmd("k", seq, 1200))[0]
			if r.Type != ResDecision || r.Decision != c.charge {
				t.Fatalf("RL.SETTLE 1200: %+v, want %+v", r, c.charge)
			}
			checkDebt(t, s, c.op, limitArgs(c.params), c.charge, c.next)
		})
	}
}

func TestSettle(t *testing.T) {
	token := []int64{1000, 1000, 60_000}
	t.Run("a refund of the difference, once; a repeat answers the first outcome", func(t *testing.T) {
		s := NewShard()
		_, seq := reserved(t, s, 0, reserveCmd(OpToken, "k", token, 100, 60_000))
		info := apply(s, 0, OpInfo, "k").Fields
		if f := info[len(info)-2:]; f[0] != (Field{Name: "reservations", Int: 1}) || f[1] != (Field{Name: "reserved", Int: 100}) {
			t.Fatalf("RL.INFO: %+v", info)
		}
		first := run(s, 10, settleCmd("k", seq, 40))[0]
		if !first.Decision.Allowed || first.Decision.Remaining != 960 {
			t.Fatalf("settled at 40: %+v", first)
		}
		again := run(s, 20, settleCmd("k", seq, 500), settleCmd("k", seq, 0))
		if again[0].Decision != first.Decision || again[1].Decision != first.Decision {
			t.Fatalf("repeated: %+v, want the first outcome %+v", again, first.Decision)
		}
		if d := decision(t, s, 20, OpToken, "k", 1000, 1000, 60_000, 0); d.Remaining != 960 {
			t.Fatalf("the repeats changed the key: %+v", d)
		}
		if info := apply(s, 20, OpInfo, "k").Fields; info[len(info)-1].Name == "reserved" {
			t.Fatalf("a settled reservation is not outstanding: %+v", info)
		}
	})
	t.Run("a refusal reserves nothing", func(t *testing.T) {
		s := NewShard()
		d, seq := reserved(t, s, 0, reserveCmd(OpFixed, "k", []int64{10, 1000}, 11, 60_000))
		if d.Allowed || seq != 0 || len(s.res.byID) != 0 {
			t.Fatalf("%+v, seq %d, %d kept", d, seq, len(s.res.byID))
		}
	})
	t.Run("at its TTL it is settled at its estimate, later forgotten", func(t *testing.T) {
		s := NewShard()
		_, seq := reserved(t, s, 0, reserveCmd(OpToken, "k", token, 100, 1000))
		if r := run(s, 1000, settleCmd("k", seq, 10))[0]; !errors.Is(r.Err, ErrReservationExpired) {
			t.Fatalf("settled at its TTL: %+v", r)
		}
		if d := decision(t, s, 1000, OpToken, "k", 1000, 1000, 60_000, 0); d.Remaining != 900+16 {
			t.Fatalf("the estimate stays charged (less what refilled): %+v", d)
		}
		if st := s.Stats(); st.ReservationsExpired != 1 || st.ReservationsPending != 0 {
			t.Fatalf("stats: %+v", st)
		}
		if r := run(s, 1000+reservationKept, settleCmd("k", seq, 10))[0]; !errors.Is(r.Err, ErrNoReservation) || len(s.res.byID) != 0 || s.res.bytes != 0 {
			t.Fatalf("forgotten: %+v, %d kept, %d bytes", r, len(s.res.byID), s.res.bytes)
		}
	})
	t.Run("an id names its key", func(t *testing.T) {
		s := NewShard()
		_, seq := reserved(t, s, 0, reserveCmd(OpToken, "k", token, 100, 1000))
		for _, c := range []Command{settleCmd("other", seq, 1), settleCmd("k", seq+1, 1)} {
			if r := run(s, 1, c)[0]; !errors.Is(r.Err, ErrNoReservation) {
				t.Fatalf("%s %d: %+v", c.Key, c.Args[0], r)
			}
		}
	})
	t.Run("FLUSHALL forgets them with the keys", func(t *testing.T) {
		s := NewShard()
		_, seq := reserved(t, s, 0, reserveCmd(OpToken, "k", token, 100, 1000))
		run(s, 1, Command{Op: OpFlush})
		if r := run(s, 2, settleCmd("k", seq, 1))[0]; !errors.Is(r.Err, ErrNoReservation) || s.res.bytes != 0 {
			t.Fatalf("%+v", r)
		}
		if _, next := reserved(t, s, 2, reserveCmd(OpToken, "k", token, 1, 1000)); next <= seq {
			t.Fatalf("seq %d after %d", next, seq)
		}
	})
	t.Run("a key of another algorithm leaves it pending", func(t *testing.T) {
		s := NewShard()
		_, seq := reserved(t, s, 0, reserveCmd(OpToken, "k", token, 100, 1000))
		run(s, 1, cmd(OpDel, "k"), cmd(OpFixed, "k", 10, 1000, 0, 1))
		if r := run(s, 2, settleCmd("k", seq, 1))[0]; !errors.Is(r.Err, ErrWrongType) {
			t.Fatalf("%+v", r)
		}
		if n, _ := s.res.outstanding([]byte("k"), 2); n != 1 {
			t.Fatalf("%d pending", n)
		}
	})
}

// A settlement gives back only what the estimate's charge still weighs: a
// window that has passed gives nothing back, and units others spent since
// are theirs.
func TestSettleRefundsWhatTheChargeStillWeighs(t *testing.T) {
	s := NewShard()
	fixed := []int64{100, 1000}
	_, seq := reserved(t, s, 500, reserveCmd(OpFixed, "k", fixed, 60, 10_000))
	decision(t, s, 1200, OpFixed, "k", 100, 1000, 0, 30) // the next window: 30 spent by others
	if d := run(s, 1300, settleCmd("k", seq, 0))[0].Decision; d.Remaining != 70 {
		t.Fatalf("settled in the next window: %+v, want the 30 others spent kept", d)
	}
	s = NewShard() // each from the start: a shard's clock never goes back
	sliding := []int64{100, 1000}
	_, seq = reserved(t, s, 500, reserveCmd(OpSliding, "s", sliding, 60, 10_000))
	decision(t, s, 1200, OpSliding, "s", 100, 1000, 0, 10)
	// At 1500 the 60 weigh 30 and the 10 their whole: 60 remain. Settled at
	// 20, the reservation gives back 40 of the previous window's 60: they
	// weigh 20, so 80 remain.
	if d := run(s, 1500, settleCmd("s", seq, 20))[0].Decision; d.Remaining != 80 {
		t.Fatalf("sliding: %+v, want 80", d)
	}
	s = NewShard()
	logParams := []int64{100, 1000}
	decision(t, s, 100, OpLog, "l", 100, 1000, 0, 5)
	_, seq = reserved(t, s, 200, reserveCmd(OpLog, "l", logParams, 50, 10_000))
	decision(t, s, 300, OpLog, "l", 100, 1000, 0, 7)
	if d := run(s, 400, settleCmd("l", seq, 10))[0].Decision; d.Remaining != 100-5-10-7 {
		t.Fatalf("log: %+v, want the 40 taken from the reservation's entry only", d)
	}
}

// randomReservation is an RL.RESERVE or an RL.SETTLE on key at now with
// random parameters, for the mixed workloads of randomCommands: a settle
// names a seq handed out up to 3 s earlier (one reservation a millisecond
// gets the millisecond's first seq).
func randomReservation(rng *rand.Rand, key []byte, now int64) Command {
	if rng.IntN(2) == 0 {
		return Command{Op: OpSettle, Key: key, Args: [4]int64{(now - rng.Int64N(3000)) << leaseIDShift, rng.Int64N(8)}}
	}
	op := []Op{OpSliding, OpFixed, OpLog, OpToken, OpLeaky, OpGCRA, OpShape}[rng.IntN(7)]
	p := [3]int64{1 + rng.Int64N(10), 1 + rng.Int64N(5), 100 + rng.Int64N(2000)}
	return ReserveCommand(op, key, p, 1+rng.Int64N(4), 1+rng.Int64N(3000))
}

// Whatever the order of reserves, settles (at any actual cost, repeated or
// late) and expiries, a key's total is what its settled reservations
// actually cost plus the estimates of the others, settled at their
// estimate or still pending: in a window that never rolls, and in a bucket
// that drains less than a unit.
func TestPropertyReservationsAddUp(t *testing.T) {
	limits := []struct {
		op     Op
		params []int64
	}{{OpFixed, []int64{5000, 1_000_000_000_000}}, {OpToken, []int64{1000, 1, 100_000_000}}}
	type model struct {
		key              string
		seq, estimate    int64
		until, settledAt int64
		settled          bool
		actual           int64
	}
	for seed := range uint64(40) {
		rng := rand.New(rand.NewPCG(seed, 46))
		l := limits[seed%2]
		s := NewShard()
		var made []*model
		now := int64(1_700_000_000_000)
		for step := range 2000 {
			now += rng.Int64N(40)
			key := []string{"a", "b"}[rng.IntN(2)]
			if rng.IntN(2) == 0 || len(made) == 0 {
				estimate, ttl := 1+rng.Int64N(100), 1+rng.Int64N(2000)
				if d, seq := reserved(t, s, now, reserveCmd(l.op, key, l.params, estimate, ttl)); d.Allowed {
					made = append(made, &model{key: key, seq: seq, estimate: estimate, until: now + ttl})
				}
			} else {
				m := made[rng.IntN(len(made))]
				actual := rng.Int64N(300)
				r := run(s, now, settleCmd(m.key, m.seq, actual))[0]
				switch {
				case !m.settled && now < m.until:
					m.settled, m.settledAt, m.actual = true, now, actual
					fallthrough
				case m.settled && now < m.settledAt+reservationKept:
					if r.Type != ResDecision {
						t.Fatalf("seed %d step %d: settling %+v: %+v", seed, step, m, r)
					}
				default:
					if r.Type != ResError {
						t.Fatalf("seed %d step %d: settling %+v after its TTL, or forgotten: %+v", seed, step, m, r)
					}
				}
			}
			for _, key := range []string{"a", "b"} {
				var want, pending int64
				for _, m := range made {
					switch {
					case m.key != key:
					case m.settled:
						want += m.actual
					default:
						want += m.estimate
						if now < m.until {
							pending++
						}
					}
				}
				args := append(limitArgs(l.params), 0)
				d := decision(t, s, now, l.op, key, args...)
				if got := d.Limit - d.Remaining; got != want {
					t.Fatalf("seed %d step %d: key %s holds %d, settled and estimated add up to %d", seed, step, key, got, want)
				}
				if n, _ := s.res.outstanding([]byte(key), now); n != pending {
					t.Fatalf("seed %d step %d: key %s: %d pending, want %d", seed, step, key, n, pending)
				}
			}
		}
	}
}
