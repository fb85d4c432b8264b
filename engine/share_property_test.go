package engine

import (
	"math/rand/v2"
	"testing"
)

// randomShare is an RL.SHARE or RL.UNSHARE on key at now with random
// parameters, for the mixed workloads of randomCommands.
func randomShare(rng *rand.Rand, key []byte, now int64) Command {
	holder := []byte{"xyz"[rng.IntN(3)]}
	if rng.IntN(5) == 0 {
		return Command{Op: OpUnshare, Key: key, Value: holder}
	}
	q := ShareRequest{Holder: holder, Limit: 1 + rng.Int64N(20), Window: 100 + rng.Int64N(1900),
		Demand: rng.Int64N(30) - 1, TTL: 50 + rng.Int64N(3000)}
	q.Burst = rng.Int64N(q.Window + 1)
	if rng.IntN(2) == 0 {
		q.Ack = now<<leaseIDShift - rng.Int64N(3_000<<leaseIDShift)
	}
	return q.Command(key)
}

// Whatever holders ask, acknowledge, unshare or let expire, and in
// whatever order, the committed rates of a key's holders never add up to
// more than its limit, and every reply is consistent with it.
func TestPropertyShareNeverCommitsMoreThanTheLimit(t *testing.T) {
	for seed := range uint64(60) {
		rng := rand.New(rand.NewPCG(seed, 44))
		s := NewShard()
		limit, window := 1+rng.Int64N(2000), 1+rng.Int64N(5000)
		holders := 1 + rng.IntN(8)
		lastSeq := make([]int64, holders) // the latest grant each holder received
		var keySeq int64
		now := int64(1_700_000_000_000)
		for step := range 3000 {
			now += rng.Int64N(200)
			h := rng.IntN(holders)
			id := string(rune('a' + h))
			switch k := rng.IntN(20); {
			case k == 0:
				unshare(s, now, "k", id)
				continue
			case k == 1 && rng.IntN(10) == 0:
				apply(s, now, OpDel, "k")
				continue
			}
			q := shareReq(id, limit, window)
			q.TTL = 1 + rng.Int64N(2000)
			if rng.IntN(3) > 0 {
				q.Demand = rng.Int64N(2 * limit)
			}
			switch rng.IntN(4) {
			case 0: // no ACK
			case 1:
				q.Ack = lastSeq[h]
			default:
				q.Ack = max(lastSeq[h]-rng.Int64N(3), 1) + rng.Int64N(2)
			}
			got := share(t, s, now, "k", q)
			lastSeq[h] = got.seq
			if got.seq <= keySeq && apply(s, now, OpExists, "k").Int == 1 || got.rate > got.fair || got.rate > limit ||
				got.burst != shareBurst(got.rate, q.Burst, window) || got.holders < 1 || got.holders > int64(holders) {
				t.Fatalf("seed %d step %d: %+v after seq %d (limit %d)", seed, step, got, keySeq, limit)
			}
			keySeq = got.seq
			if c := committedOf(s, "k", now); c > limit {
				t.Fatalf("seed %d step %d: %d committed, limit %d", seed, step, c, limit)
			}
			if c := info(t, s, now, "k")["committed"].(int64); c > limit {
				t.Fatalf("seed %d step %d: RL.INFO says %d committed, limit %d", seed, step, c, limit)
			}
		}
	}
}

// simHolder is a holder that follows RL.SHARE's contract: it decides
// locally with a token bucket of its grant's rate, burst units deep, whose
// tokens it keeps across renewals (up to the new depth); its first grant
// fills the bucket, later ones never do; it admits only while its grant is
// in force, TTL from when it sent the request, and its bucket empties when
// the grant expires or it unshares (it then uses no grant a request sent
// before brings); it switches to a grant when the reply arrives, and
// acknowledges it with its next request.
type simHolder struct {
	id                string
	rate, burst       int64 // the grant in use
	seq, expires      int64
	tokens            int64 // units × window, to refill exactly
	granted           bool  // it has had a grant: its bucket never fills again
	sentAt, replyAt   int64 // the request in flight (replyAt 0: none)
	reply             shareReply
	serveAt           int64
	countedFrom       int64 // since when admitted and refused count
	period, demand    int64 // ms between renewals; requests per window it receives
	delay, startAt    int64 // how long a request takes to reach the shard, and its reply to come back; its first request's time
	gone, unshared    bool
	admitted, refused int64
}

// shareSim runs contract-following holders against one key, millisecond
// by millisecond, and records every admission.
type shareSim struct {
	s             *Shard
	limit, window int64
	burstMs, ttl  int64
	jitter        bool // delays are random up to each holder's, rather than exactly it
	holders       []*simHolder
	admitted      []int64 // admissions, by millisecond
	created       []int64 // units × window the first grants put in buckets, by millisecond
}

// step runs millisecond t: requests the shard serves now, replies that
// arrive now, then the holders' traffic.
func (m *shareSim) step(t *testing.T, rng *rand.Rand, now, t0 int64) {
	for _, h := range m.holders {
		if h.replyAt != 0 && h.serveAt == now {
			q := shareReq(h.id, m.limit, m.window)
			// Its demand: what it admitted and refused since it last
			// said, per window.
			q.TTL, q.Burst, q.Ack = m.ttl, m.burstMs, h.seq
			q.Demand = (h.admitted + h.refused) * m.window / max(now-h.countedFrom, 1)
			h.admitted, h.refused, h.countedFrom = 0, 0, now
			h.reply = share(t, m.s, now, "k", q)
			if c := committedOf(m.s, "k", now); c > m.limit {
				t.Fatalf("at %d: %d committed, limit %d", now, c, m.limit)
			}
		}
	}
	for _, h := range m.holders {
		if h.replyAt == now && h.replyAt != 0 {
			m.receive(h, now, t0)
		}
		if now >= h.expires && h.tokens > 0 {
			h.tokens = 0 // its grant expired: no admission on it, and no tokens kept for the next
		}
		if !h.gone && h.replyAt == 0 && now >= h.startAt && (h.seq == 0 || now-h.sentAt >= h.period) {
			h.sentAt, h.serveAt, h.replyAt = now, now+h.delay, now+2*h.delay
			if m.jitter {
				h.serveAt = now + 1 + rng.Int64N(h.delay)
				h.replyAt = h.serveAt + rng.Int64N(h.delay)
			}
		}
		if now < h.expires {
			h.tokens = min(h.tokens+h.rate, h.burst*m.window)
		}
		for range arrivals(rng, h.demand, m.window) {
			if now < h.expires && h.tokens >= m.window {
				h.tokens -= m.window
				h.admitted++
				m.admitted[now-t0]++
			} else {
				h.refused++
			}
		}
	}
}

// receive switches h to the grant its reply brings.
func (m *shareSim) receive(h *simHolder, now, t0 int64) {
	r := h.reply
	if h.unshared { // a grant made before it unshared: no longer its to use
		h.replyAt, h.unshared = 0, false
		return
	}
	h.replyAt, h.rate, h.burst, h.seq, h.expires = 0, r.rate, r.burst, r.seq, h.sentAt+r.ttl
	if !h.granted { // its bucket starts full, once
		h.tokens, h.granted = r.burst*m.window, true
		m.created[now-t0] += r.burst * m.window
	}
	h.tokens = min(h.tokens, h.burst*m.window)
}

// arrivals is how many requests arrive in one millisecond at demand per
// window: a Bernoulli draw per unit of the expected count.
func arrivals(rng *rand.Rand, demand, window int64) int64 {
	n := demand / window
	if rng.Int64N(window) < demand%window {
		n++
	}
	return n
}

// Holders that follow the contract admit, over any span of T ms, at most
// limit × (T + BURST) / window, plus one unit per holder (a bucket is at
// least one unit deep), plus the bursts the holders' first grants put in
// their buckets within the span. Holders here come and go, change their
// demand, renew at their own pace and see their requests and replies
// delayed.
func TestShareContractBoundsWhatHoldersAdmit(t *testing.T) {
	for seed := range uint64(12) {
		rng := rand.New(rand.NewPCG(seed, 45))
		m := &shareSim{s: NewShard(), limit: 50 + rng.Int64N(2000), window: 100 + rng.Int64N(1000), ttl: 200 + rng.Int64N(800),
			jitter: true}
		m.burstMs = rng.Int64N(m.window + 1)
		if seed%2 == 0 {
			m.burstMs /= 10
		}
		m.admitted, m.created = make([]int64, simSpan), make([]int64, simSpan)
		for j := range 2 + rng.IntN(6) {
			m.holders = append(m.holders, &simHolder{id: string(rune('a' + j)), period: 20 + rng.Int64N(300),
				demand: rng.Int64N(3 * m.limit), delay: 1 + rng.Int64N(200)})
		}
		for now := simStart; now < simStart+simSpan; now++ {
			if rng.IntN(100) == 0 { // demand changes; a holder goes, or comes back
				h := m.holders[rng.IntN(len(m.holders))]
				h.demand = rng.Int64N(3 * m.limit)
				h.gone = rng.IntN(3) == 0
				if h.gone && rng.IntN(2) == 0 {
					// It stops using its grant, and the one a request in
					// flight may bring, then gives them back.
					h.tokens, h.expires, h.unshared = 0, 0, h.replyAt != 0
					unshare(m.s, now, "k", h.id)
				}
			}
			m.step(t, rng, now, simStart)
		}
		m.checkBound(t, seed, int64(len(m.holders)))
	}
}

// The span a simulation runs, from its first millisecond.
const simStart, simSpan = int64(1_700_000_000_000), int64(6000)

// A holder whose replies are slow goes on using its larger grant for as
// long as its smaller one takes to reach it: until it acknowledges that
// one, the larger stays committed, and a holder whose replies are quick
// gets none of it.
func TestShareSlowHolderKeepsItsGrantCommitted(t *testing.T) {
	m := &shareSim{s: NewShard(), limit: 1000, window: 1000, ttl: 5000, burstMs: 100}
	m.holders = []*simHolder{
		{id: "slow", period: 1000, demand: 3000, delay: 400},
		{id: "quick", period: 50, demand: 3000, delay: 1, startAt: simStart + 2000},
	}
	m.admitted, m.created = make([]int64, simSpan), make([]int64, simSpan)
	rng := rand.New(rand.NewPCG(1, 46))
	for now := simStart; now < simStart+simSpan; now++ {
		m.step(t, rng, now, simStart)
	}
	m.checkBound(t, 0, 2)
	if q := m.holders[1]; q.rate != 500 {
		t.Fatalf("the quick holder's grant: %d, want half", q.rate)
	}
}

// checkBound checks every span of the run against the bound.
func (m *shareSim) checkBound(t *testing.T, seed uint64, holders int64) {
	n := int64(len(m.admitted))
	var total int64
	for _, a := range m.admitted {
		total += a
	}
	if total == 0 {
		t.Fatalf("seed %d: nothing admitted", seed)
	}
	for from := int64(0); from < n; from++ {
		var admitted, created int64
		for to := from; to < n; to++ {
			admitted, created = admitted+m.admitted[to], created+m.created[to]
			length := to - from + 1
			// admitted ≤ limit × (length + burst) / window + holders + created / window
			if admitted*m.window > m.limit*(length+m.burstMs)+holders*m.window+created {
				t.Fatalf("seed %d: %d admitted in %d ms from %d: limit %d per %d ms, burst %d ms, %d holders, first bursts %d",
					seed, admitted, length, from, m.limit, m.window, m.burstMs, holders, created/m.window)
			}
		}
	}
}
