package engine

import "slices"

// slidingLog is the exact sliding window: it remembers when each granted unit
// was spent and counts those spent in the last Window milliseconds, so it
// never errs, at the price of memory that grows with the limit (one 16-byte
// entry per distinct millisecond with grants; see MaxLogLimit).
type slidingLog struct {
	Limit  int64 // units per window, 1..MaxLogLimit
	Window int64 // window length in ms, 1..MaxDuration
}

// logEntry records N units granted at the instant At.
type logEntry struct {
	At, N int64
}

// live returns the suffix of entries (sorted by At, At distinct) still inside
// the window that ends at now.
func (l slidingLog) live(entries []logEntry, now int64) []logEntry {
	i := 0
	for i < len(entries) && entries[i].At <= now-l.Window {
		i++
	}
	return entries[i:]
}

// used sums the units in entries.
func (l slidingLog) used(entries []logEntry) int64 {
	var n int64
	for _, e := range entries {
		n += e.N
	}
	return n
}

// decide grants or refuses cost against the units spent in the last Window
// ms. It changes nothing: it returns the live entries, and a granted cost is
// recorded by record, when the decision is committed.
func (l slidingLog) decide(entries []logEntry, now, cost int64) ([]logEntry, Decision) {
	entries = l.live(entries, now)
	used := l.used(entries)
	available := l.Limit - used
	var d Decision
	switch {
	case cost > l.Limit:
		d = denied(l.Limit, available, RetryNever)
	case cost <= available:
		d = granted(l.Limit, available, cost)
	default:
		d = denied(l.Limit, available, l.retryAfter(entries, now, used-(l.Limit-cost)))
	}
	last := int64(-1) // the newest entry once a granted cost is recorded
	if n := len(entries); n > 0 {
		last = entries[n-1].At
	}
	if d.Allowed && cost > 0 {
		last = max(last, now)
	}
	if last >= 0 {
		d.ResetAfter = last + l.Window - now
	}
	return entries, d
}

// refund takes up to n units back, newest first, and returns the entries
// left (in a new array: the old one may be shared with a decision pending).
// A reservation's settlement (since not noSince) takes them only from the
// entry that holds its charge, made at since: the first at or after it.
func (l slidingLog) refund(entries []logEntry, n, since int64) []logEntry {
	out := append([]logEntry(nil), entries...)
	if since != noSince {
		j := slices.IndexFunc(out, func(e logEntry) bool { return e.At >= since })
		if j < 0 {
			return out
		}
		if out[j].N -= min(out[j].N, n); out[j].N == 0 {
			out = slices.Delete(out, j, j+1)
		}
		return out
	}
	for len(out) > 0 && n > 0 {
		last := &out[len(out)-1]
		take := min(last.N, n)
		last.N -= take
		n -= take
		if last.N == 0 {
			out = out[:len(out)-1]
		}
	}
	return out
}

// charge records a refused cost at now all the same (FORCE), on a copy of
// the live entries, which it returns with the units to record on commit:
// the cost, capped so that the log holds at most MaxCount units. A log of
// MaxLogLimit entries first merges its two oldest into the later one's
// instant (its units then count longer, never shorter), so that no key
// holds more entries than MaxLogLimit, however it is charged.
func (l slidingLog) charge(entries []logEntry, now, cost int64) ([]logEntry, int64) {
	out := slices.Clone(entries)
	if n := len(out); n >= MaxLogLimit && out[n-1].At < now {
		out[1].N = min(out[0].N+out[1].N, MaxCount)
		out = out[1:]
	}
	return out, max(min(cost, MaxCount-l.used(out)), 0)
}

// retryAfter is the time until the oldest entries holding at least excess
// units have left the window.
func (l slidingLog) retryAfter(entries []logEntry, now, excess int64) int64 {
	for _, e := range entries {
		excess -= e.N
		if excess <= 0 {
			return max(e.At+l.Window-now, 1)
		}
	}
	return 1 // unreachable: the entries hold every used unit
}

// recordLog adds cost units at now, merging with an entry at the same
// instant (or a later one: entries made before a backwards DEBUG CLOCK SET
// stay ahead of now, and the new units join the last, which keeps At
// sorted). It changes entries' array: call it only to commit.
func recordLog(entries []logEntry, now, cost int64) []logEntry {
	if cost == 0 {
		return entries
	}
	if n := len(entries); n > 0 && entries[n-1].At >= now {
		entries[n-1].N += cost
		return entries
	}
	// When the live suffix fills its array, append moves just that suffix to
	// a new one, so trimmed entries never pin more than one array's memory.
	return append(entries, logEntry{At: now, N: cost})
}

// expiresAt is when the newest entry leaves the window.
func (l slidingLog) expiresAt(entries []logEntry) int64 {
	if len(entries) == 0 {
		return 0
	}
	return entries[len(entries)-1].At + l.Window
}

// logAlgorithm is RL.LOG: a record holds the limit and the window's length,
// and its log the units granted at each instant still in the window.
// Timestamps are absolute, so new parameters need no conversion.
type logAlgorithm struct{}

func (ks *keyspace) slidingLog(i int32) (slidingLog, []logEntry) {
	p := ks.paramsOf(i)
	return slidingLog{Limit: p[0], Window: p[1]}, ks.log(i)
}

func (logAlgorithm) evaluate(ks *keyspace, now int64, p [3]int64, i int32, cost int64, v *verdict) {
	l := slidingLog{Limit: p[0], Window: p[1]}
	var entries []logEntry
	if i >= 0 {
		entries = ks.log(i)
	}
	if cost < 0 {
		entries = l.refund(l.live(entries, now), -cost, v.since)
	}
	v.log, v.d = l.decide(entries, now, max(cost, 0))
	counted := v.counts(cost)
	if counted {
		v.log, v.logCost = l.charge(v.log, now, cost)
		after := recordLog(slices.Clone(v.log), now, v.logCost)
		_, peek := l.decide(after, now, 0)
		_, again := l.decide(after, now, cost)
		v.d = v.chargedReply(v.d, peek, again)
	}
	v.write, v.params = keepState(i >= 0, cost, false, v.d.Allowed || counted), [3]int64{l.Limit, l.Window}
	if v.d.Allowed && cost > 0 {
		v.logCost = cost
	}
}

func (logAlgorithm) expiresAt(ks *keyspace, i int32) int64 {
	l, entries := ks.slidingLog(i)
	return l.expiresAt(entries)
}

func (logAlgorithm) describe(ks *keyspace, i int32, now int64, f []Field) []Field {
	l, entries := ks.slidingLog(i)
	entries, d := l.decide(entries, now, 0)
	f = append(f, Field{Name: "limit", Int: l.Limit}, Field{Name: "window_ms", Int: l.Window},
		Field{Name: "count", Int: l.used(entries)}, Field{Name: "entries", Int: int64(len(entries))})
	return budgetFields(f, d, ks.expiresAt(i)-now)
}

// valid checks a log: instants in range and increasing, counts positive.
func (logAlgorithm) valid(params, st [3]int64, log []logEntry) bool {
	prev := int64(-1)
	for _, le := range log {
		if le.At <= prev || !validTime(le.At) || le.N < 1 || !validCount(le.N) {
			return false
		}
		prev = le.At
	}
	return validArgs(OpLog, params) && st == [3]int64{}
}

// liveLog is the part of record i's log a snapshot keeps: the entries still
// in the window at now.
func (logAlgorithm) liveLog(ks *keyspace, i int32, now int64) []logEntry {
	l, entries := ks.slidingLog(i)
	return l.live(entries, now)
}
