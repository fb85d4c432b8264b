package engine

import (
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/calendar"
)

// at is the Unix time in ms of an RFC 3339 time, for readable tests.
func at(t *testing.T, s string) int64 {
	t.Helper()
	tm, err := time.Parse(time.RFC3339, s)
	if err != nil {
		t.Fatal(err)
	}
	return tm.UnixMilli()
}

func TestQuotaPeriodBounds(t *testing.T) {
	for _, tc := range []struct {
		name          string
		period        calendar.Period
		offsetMinutes int64
		now           string
		start, end    string
	}{
		{"day", calendar.Daily, 0, "2026-11-30T12:00:00Z", "2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z"},
		{"day starts at midnight", calendar.Daily, 0, "2026-12-01T00:00:00Z", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z"},
		{"day in UTC+3", calendar.Daily, 180, "2026-11-30T22:00:00Z", "2026-11-30T21:00:00Z", "2026-12-01T21:00:00Z"},
		{"day in UTC-5", calendar.Daily, -300, "2026-11-30T03:00:00Z", "2026-11-29T05:00:00Z", "2026-11-30T05:00:00Z"},
		{"ISO week from Monday", calendar.Weekly, 0, "2026-12-03T10:00:00Z", "2026-11-30T00:00:00Z", "2026-12-07T00:00:00Z"},
		{"week on a Sunday", calendar.Weekly, 0, "2027-01-03T10:00:00Z", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z"},
		{"month", calendar.Monthly, 0, "2026-11-30T12:00:00Z", "2026-11-01T00:00:00Z", "2026-12-01T00:00:00Z"},
		{"month in UTC+3 already December", calendar.Monthly, 180, "2026-11-30T22:00:00Z", "2026-11-30T21:00:00Z", "2026-12-31T21:00:00Z"},
		{"leap February", calendar.Monthly, 0, "2024-02-29T10:00:00Z", "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"},
		{"year", calendar.Yearly, 0, "2026-12-31T23:59:59Z", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			q := quota{Limit: 1, Period: tc.period, Offset: tc.offsetMinutes * 60_000}
			start, end := q.bounds(at(t, tc.now))
			if start != at(t, tc.start) || end != at(t, tc.end) {
				t.Fatalf("bounds %s .. %s, want %s .. %s", time.UnixMilli(start).UTC(), time.UnixMilli(end).UTC(), tc.start, tc.end)
			}
		})
	}
}

func TestQuotaResetsWhenThePeriodTurns(t *testing.T) {
	s := NewShard()
	now := at(t, "2026-11-30T12:00:00Z")
	month := []int64{3, int64(calendar.Monthly), 0}
	for i := range 3 {
		d := decision(t, s, now, OpQuota, "k", append(month, 1)...)
		want := Decision{Allowed: true, Limit: 3, Remaining: int64(2 - i), ResetAfter: 12 * 3600 * 1000}
		if d != want {
			t.Fatalf("grant %d: %+v, want %+v", i, d, want)
		}
	}
	// Full until December: retry_after and reset_after say when the month ends.
	d := decision(t, s, now, OpQuota, "k", append(month, 1)...)
	if want := (Decision{Limit: 3, RetryAfter: 12 * 3600 * 1000, ResetAfter: 12 * 3600 * 1000}); d != want {
		t.Fatalf("over quota: %+v, want %+v", d, want)
	}
	if ttl := apply(s, now, OpPTTL, "k").Int; ttl != 12*3600*1000 {
		t.Fatalf("PTTL %d, want the rest of the month", ttl)
	}
	d = decision(t, s, at(t, "2026-12-01T00:00:00Z"), OpQuota, "k", append(month, 1)...)
	if !d.Allowed || d.Remaining != 2 {
		t.Fatalf("in December: %+v, want a fresh quota", d)
	}
	if d := decision(t, s, now, OpQuota, "big", 3, int64(calendar.Monthly), 0, 4); d.RetryAfter != RetryNever {
		t.Fatalf("cost over the quota: %+v, want retry never", d)
	}
}

func TestQuotaKeepsItsCountWhenTheOffsetChanges(t *testing.T) {
	s := NewShard()
	now := at(t, "2026-11-30T12:00:00Z")
	decision(t, s, now, OpQuota, "k", 10, int64(calendar.Daily), 0, 4)
	// The same quota counted in UTC+3: the day in progress keeps its 4.
	d := decision(t, s, now, OpQuota, "k", 10, int64(calendar.Daily), 180*60_000, 1)
	if d.Remaining != 5 || d.ResetAfter != 9*3600*1000 {
		t.Fatalf("after the offset change: %+v, want 5 left and the UTC+3 day ending in 9 h", d)
	}
}
