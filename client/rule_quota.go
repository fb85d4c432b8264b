package client

import (
	"time"

	"github.com/rlserver/rlserver/internal/calendar"
)

// Period is the calendar period of a Quota. Its String is the period's word
// in RL.QUOTA: DAY, WEEK, MONTH or YEAR.
type Period = calendar.Period

// The periods RL.QUOTA counts in. Weeks are ISO weeks, starting on Monday.
const (
	Daily   = calendar.Daily
	Weekly  = calendar.Weekly
	Monthly = calendar.Monthly
	Yearly  = calendar.Yearly
)

// Quota is RL.QUOTA: at most Limit units per calendar Period (day, ISO
// week, month, year), counted afresh when the period turns rather than a
// period after the first request, so "a million a month" starts over on the
// first of the month.
//
// Periods turn at midnight UTC shifted by Offset, the time zone's distance
// east of UTC (+03:00 is 3*time.Hour, -05:00 is -5*time.Hour). It is sent
// in whole minutes, rounded to the nearest, and rlserver takes a fixed
// offset only: a zone with daylight saving time has to choose one, e.g. the
// offset in force now:
//
//	_, east := time.Now().In(loc).Zone()
//	q := client.Quota{Limit: 1000, Period: client.Monthly, Offset: time.Duration(east) * time.Second}
type Quota struct {
	Limit  int64
	Period Period
	Offset time.Duration
}

// Policy is Limit per the longest the period can last: 24 hours, 7 days, 31
// days for a month, 366 days for a year. Months and years vary, and the
// RateLimit-Policy header has one window; the longest gives the slowest
// pace, so a client that spreads Limit evenly over w never runs out before
// the period turns, and the local fallback grants no more than the quota in
// any calendar period. The exact wait until the period turns is in each
// refusal's RetryAfter (and so in Retry-After).
func (r Quota) Policy() (int64, time.Duration) {
	return r.Limit, r.Period.Longest()
}

// offsetMinutes is Offset as RL.QUOTA takes it.
func (r Quota) offsetMinutes() int64 {
	return int64(r.Offset.Round(time.Minute) / time.Minute)
}

func (r Quota) limit() (string, []any, bool) {
	params := []any{r.Limit, r.Period.String()}
	if m := r.offsetMinutes(); m != 0 {
		params = append(params, "OFFSET", m)
	}
	return "QUOTA", params, true
}

func (r Quota) command(key string, cost int64) []any { return ruleCommand(r, key, cost) }

func (Quota) parse(reply any) (Decision, error) { return parseDecision(reply) }
