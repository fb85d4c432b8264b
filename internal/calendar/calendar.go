// Package calendar declares the calendar periods RL.QUOTA counts in, once
// for the engine that counts in them, the commands and the client that name
// them, and rls, which maps Envoy's units onto them. It imports nothing of
// rlserver, so the public client can import it too.
package calendar

import (
	"strconv"
	"time"
)

// Period is a calendar period: a day, an ISO week, a month or a year. Its
// values are written into Raft logs and snapshots (RL.QUOTA's parameter):
// add new periods at the end, never renumber.
type Period int

// The periods. Weeks are ISO weeks, starting on Monday.
const (
	Daily Period = iota + 1
	Weekly
	Monthly
	Yearly
)

// words are the periods' words in RL.QUOTA, by value.
var words = [...]string{Daily: "DAY", Weekly: "WEEK", Monthly: "MONTH", Yearly: "YEAR"}

// valid reports whether p is one of the periods.
func (p Period) valid() bool { return p >= Daily && p <= Yearly }

// String is the period's word in RL.QUOTA: DAY, WEEK, MONTH or YEAR, and
// "Period(n)" for a value that is no period.
func (p Period) String() string {
	if p.valid() {
		return words[p]
	}
	return "Period(" + strconv.Itoa(int(p)) + ")"
}

// Parse returns the period whose word is w, exactly as String writes it;
// false if there is none.
func Parse(w string) (Period, bool) {
	for p := Daily; p <= Yearly; p++ {
		if words[p] == w {
			return p, true
		}
	}
	return 0, false
}

// Longest is the longest p can last: 24 hours, 7 days, 31 days for a month,
// 366 for a year; 0 for a value that is no period.
func (p Period) Longest() time.Duration {
	const day = 24 * time.Hour
	switch p {
	case Daily:
		return day
	case Weekly:
		return 7 * day
	case Monthly:
		return 31 * day
	case Yearly:
		return 366 * day
	}
	return 0
}

// Containing returns the start and the end (excluded) of the period of p
// that contains t, both at midnight in t's location. p must be one of the
// periods.
func (p Period) Containing(t time.Time) (from, to time.Time) {
	y, m, d := t.Date()
	loc := t.Location()
	switch p {
	case Daily:
		from = time.Date(y, m, d, 0, 0, 0, 0, loc)
		return from, from.AddDate(0, 0, 1)
	case Weekly:
		from = time.Date(y, m, d-(int(t.Weekday())+6)%7, 0, 0, 0, 0, loc)
		return from, from.AddDate(0, 0, 7)
	case Monthly:
		from = time.Date(y, m, 1, 0, 0, 0, 0, loc)
		return from, from.AddDate(0, 1, 0)
	}
	from = time.Date(y, 1, 1, 0, 0, 0, 0, loc)
	return from, from.AddDate(1, 0, 0)
}
