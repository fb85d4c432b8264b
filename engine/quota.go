package engine

import "time"

// Period is RL.QUOTA's calendar period.
type Period int64

// The periods. Weeks are ISO weeks, starting on Monday.
const (
	PeriodDay Period = iota + 1
	PeriodWeek
	PeriodMonth
	PeriodYear
)

// PeriodNames are the periods' names in RL.QUOTA.
var PeriodNames = map[Period]string{PeriodDay: "DAY", PeriodWeek: "WEEK", PeriodMonth: "MONTH", PeriodYear: "YEAR"}

// MaxQuotaOffset bounds a quota's offset from UTC: the time zones in use
// span UTC-12 to UTC+14.
const MaxQuotaOffset = 14 * 3600 * 1000

// Quota counts units in calendar periods: days, weeks, months or years, in
// UTC shifted by Offset (ms east of UTC, e.g. +03:00 is 10,800,000), so that
// "a million requests a month" resets when the month turns, not 30 days
// after the first request.
type Quota struct {
	Limit  int64  // units per period, 1..MaxCount
	Period Period // PeriodDay .. PeriodYear
	Offset int64  // ms east of UTC, -MaxQuotaOffset..MaxQuotaOffset
}

// bounds returns the start and end (ms, end excluded) of the period that
// contains now.
func (q Quota) bounds(now int64) (start, end int64) {
	t := time.UnixMilli(now + q.Offset).UTC()
	y, m, d := t.Date()
	var from, to time.Time
	switch q.Period {
	case PeriodDay:
		from = time.Date(y, m, d, 0, 0, 0, 0, time.UTC)
		to = from.AddDate(0, 0, 1)
	case PeriodWeek:
		from = time.Date(y, m, d-(int(t.Weekday())+6)%7, 0, 0, 0, 0, time.UTC)
		to = from.AddDate(0, 0, 7)
	case PeriodMonth:
		from = time.Date(y, m, 1, 0, 0, 0, 0, time.UTC)
		to = from.AddDate(0, 1, 0)
	default:
		from = time.Date(y, 1, 1, 0, 0, 0, 0, time.UTC)
		to = from.AddDate(1, 0, 0)
	}
	return from.UnixMilli() - q.Offset, to.UnixMilli() - q.Offset
}

// Decide grants or refuses cost in the period that contains now; like a fixed
// window whose windows are calendar periods.
func (q Quota) Decide(st windowCount, now, cost int64) (windowCount, Decision) {
	now = max(now, st.Start)
	start, end := q.bounds(now)
	return decideInWindow(q.Limit, st, start, end, now, cost)
}

// periodEnd is when st's period ends.
func (q Quota) periodEnd(st windowCount) int64 {
	_, end := q.bounds(st.Start)
	return end
}

// expiresAt is when st is back to "never seen": at once when nothing is
// counted (a refund gave everything back), else when its period ends.
func (q Quota) expiresAt(st windowCount) int64 {
	if st.Count == 0 {
		return st.Start
	}
	return q.periodEnd(st)
}

// adopt converts state kept under old to q's: a new limit needs nothing; a
// new period or offset carries the count of a period still in progress into
// the current new one.
func (q Quota) adopt(old Quota, st windowCount, now int64) windowCount {
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

// refund takes up to n units back from the period in progress.
func (q Quota) refund(st windowCount, now, n int64) windowCount {
	if max(now, st.Start) >= q.periodEnd(st) {
		return windowCount{}
	}
	st.Count = max(st.Count-n, 0)
	return st
}

func (ks *keyspace) quota(i int32) (Quota, windowCount) {
	p, st := ks.paramsOf(i), &ks.records[i].state
	return Quota{Limit: p[0], Period: Period(p[1]), Offset: p[2]}, windowCount{Start: st[0], Count: st[1]}
}

// evaluateQuota evaluates RL.QUOTA.
func (s *Shard) evaluateQuota(now int64, c *Command, i int32, cost int64, v *verdict) {
	q := Quota{Limit: c.Args[0], Period: Period(c.Args[1]), Offset: c.Args[2]}
	var st windowCount
	converted := false
	if i >= 0 {
		old, ost := s.keys.quota(i)
		st, converted = q.adopt(old, ost, now), old != q
	}
	if cost < 0 {
		st = q.refund(st, now, -cost)
	}
	v.params = [3]int64{q.Limit, int64(q.Period), q.Offset}
	st, v.d = q.Decide(st, now, max(cost, 0))
	v.write, v.state = keepState(i >= 0, cost, converted, v.d.Allowed), [3]int64{st.Start, st.Count}
}
