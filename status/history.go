package status

import "time"

// historyLen is how many one-second samples the chart keeps: five minutes.
const historyLen = 300

// sample is the decision counters of this node's replicas at one time.
type sample struct {
	at              time.Time
	allowed, denied int64
}

// history is a ring of samples, the oldest first once full.
type history struct {
	ring  [historyLen + 1]sample
	next  int
	count int
}

// add records a sample.
func (h *history) add(s sample) {
	h.ring[h.next] = s
	h.next = (h.next + 1) % len(h.ring)
	h.count = min(h.count+1, len(h.ring))
}

// rates are the decisions per second between consecutive samples, oldest
// first, and the time of the last sample. A counter that went down (a
// replica's counters start again from zero when it is sent a snapshot)
// gives no rate for that step rather than a negative one.
func (h *history) rates() (allowed, denied []float64, until time.Time) {
	if h.count < 2 {
		return []float64{}, []float64{}, time.Time{}
	}
	first := (h.next - h.count + len(h.ring)) % len(h.ring)
	prev := h.ring[first]
	for i := 1; i < h.count; i++ {
		cur := h.ring[(first+i)%len(h.ring)]
		dt := cur.at.Sub(prev.at).Seconds()
		allowed = append(allowed, rate(cur.allowed-prev.allowed, dt))
		denied = append(denied, rate(cur.denied-prev.denied, dt))
		prev = cur
	}
	return allowed, denied, prev.at
}

func rate(delta int64, seconds float64) float64 {
	if delta < 0 || seconds <= 0 {
		return 0
	}
	return float64(delta) / seconds
}
