package engine

import (
	"time"

	"github.com/rlserver/rlserver/internal/calendar"
)

// maxQuotaOffset bounds a quota's offset from UTC: the time zones in use
// span UTC-12 to UTC+14.
const maxQuotaOffset = 14 * 3600 * 1000

// quota counts units in calendar periods: days, weeks, months or years, in
// UTC shifted by Offset (ms east of UTC, e.g. +03:00 is 10,800,000), so that
// "a million requests a month" resets when the month turns, not 30 days
// after the first request.
type quota struct {
	Limit  int64           // units per period, 1..MaxCount
	Period calendar.Period // calendar.Daily .. calendar.Yearly
	Offset int64           // ms east of UTC, -maxQuotaOffset..maxQuotaOffset
}

// bounds returns the start and end (ms, end excluded) of the period that
// contains now.
func (q quota) bounds(now int64) (start, end int64) {
	from, to := q.Period.Containing(time.UnixMilli(now + q.Offset).UTC())
	return from.UnixMilli() - q.Offset, to.UnixMilli() - q.Offset
}

// decide grants or refuses cost in the period that contains now; like a fixed
// window whose windows are calendar periods.
func (q quota) decide(st windowCount, now, cost int64) (windowCount, Decision) {
	now = max(now, st.Start)
	start, end := q.bounds(now)
	return decideInWindow(q.Limit, st, start, end, now, cost)
}

// periodEnd is when st's period ends.
func (q quota) periodEnd(st windowCount) int64 {
	_, end := q.bounds(st.Start)
	return end
}

// expiresAt is when st is back to "never seen": at once when nothing is
// counted (a refund gave everything back), else when its period ends.
func (q quota) expiresAt(st windowCount) int64 {
	if st.Count == 0 {
		return st.Start
	}
	return q.periodEnd(st)
}

// adopt converts state kept under old to q's: a new limit needs nothing; a
// new period or offset carries the count of a period still in progress into
// the current new one.
func (q quota) adopt(old quota, st windowCount, now int64) windowCount {
	if old.Period == q.Period && old.Offset == q.Offset {
		return st
	}
	now = max(now, st.Start)
	if now >= old.periodEnd(st) {
		return windowCount{}
	}
	start, _ := q.bounds(now)
	return windowCount{Start: start, Count: st.Count}
}

// refund takes up to n units back from the period in progress; a
// reservation's settlement (since not noSince) only while the period that
// holds its charge is in progress.
func (q quota) refund(st windowCount, now, n, since int64) windowCount {
	if max(now, st.Start) >= q.periodEnd(st) {
		return windowCount{}
	}
	if since == noSince || since >= st.Start {
		st.Count = max(st.Count-n, 0)
	}
	return st
}

// quotaAlgorithm is RL.QUOTA: a record holds the limit, the period and the
// offset, and the count of the period it was written in.
type quotaAlgorithm struct{}

// quotaParams are RL.QUOTA's parameters as a command holds them: the period
// as a calendar.Period, which the command names by its word, and the offset
// in ms, which the command takes in minutes after OFFSET, or not at all.
var quotaParams = []Param{
	pLimit,
	{Name: "period", Min: int64(calendar.Daily), Max: int64(calendar.Yearly), Role: RolePeriod, Words: periodWords()},
	{Name: "offset_ms", Min: -maxQuotaOffset, Max: maxQuotaOffset, Keyword: "OFFSET", Unit: 60_000},
}

// periodWords are the periods' words, from the first period to the last.
func periodWords() []string {
	var w []string
	for p := calendar.Daily; p <= calendar.Yearly; p++ {
		w = append(w, p.String())
	}
	return w
}

func (ks *keyspace) quota(i int32) (quota, windowCount) {
	p, st := ks.paramsOf(i), &ks.records.at(i).state
	return quota{Limit: p[0], Period: calendar.Period(p[1]), Offset: p[2]}, windowCount{Start: st[0], Count: st[1]}
}

func (quotaAlgorithm) evaluate(ks *keyspace, now int64, p [3]int64, i int32, cost int64, v *verdict) {
	q := quota{Limit: p[0], Period: calendar.Period(p[1]), Offset: p[2]}
	var st windowCount
	converted := false
	if i >= 0 {
		old, ost := ks.quota(i)
		st, converted = q.adopt(old, ost, now), old != q
	}
	if cost < 0 {
		st = q.refund(st, now, -cost, v.since)
	}
	v.params = [3]int64{q.Limit, int64(q.Period), q.Offset}
	st, v.d = q.decide(st, now, max(cost, 0))
	counted := v.counts(cost)
	if counted {
		st = v.chargeInWindow(q.Limit, st, q.periodEnd(st), now, cost)
	}
	v.write, v.state = keepState(i >= 0, cost, converted, v.d.Allowed || counted), [3]int64{st.Start, st.Count}
}

func (quotaAlgorithm) expiresAt(ks *keyspace, i int32) int64 {
	q, st := ks.quota(i)
	return q.expiresAt(st)
}

func (quotaAlgorithm) describe(ks *keyspace, i int32, now int64, f []Field) []Field {
	q, st := ks.quota(i)
	_, d := q.decide(st, now, 0)
	f = append(f, Field{Name: "limit", Int: q.Limit}, Field{Name: "period", Text: q.Period.String()},
		Field{Name: "offset_minutes", Int: q.Offset / 60_000}, Field{Name: "count", Int: q.Limit - d.Remaining})
	return budgetFields(f, d, ks.expiresAt(i)-now)
}

// valid checks the stored count: a period starts before its first instant
// by up to a year and an offset.
func (quotaAlgorithm) valid(params, st [3]int64, _ []logEntry) bool {
	return validArgs(OpQuota, params) && st[0] >= -(calendar.Yearly.Longest().Milliseconds()+maxQuotaOffset) && st[0] <= MaxTime &&
		validCount(st[1]) && st[2] == 0
}
