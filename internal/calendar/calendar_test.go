package calendar

import (
	"testing"
	"time"
)

func TestWords(t *testing.T) {
	for _, tc := range []struct {
		p    Period
		word string
	}{{Daily, "DAY"}, {Weekly, "WEEK"}, {Monthly, "MONTH"}, {Yearly, "YEAR"}} {
		if got := tc.p.String(); got != tc.word {
			t.Errorf("%d: %q, want %q", int(tc.p), got, tc.word)
		}
		if p, ok := Parse(tc.word); !ok || p != tc.p {
			t.Errorf("Parse(%q) = %v, %v", tc.word, p, ok)
		}
		if !tc.p.valid() {
			t.Errorf("%v is not valid", tc.p)
		}
	}
	for p, want := range map[Period]string{0: "Period(0)", -1: "Period(-1)", Yearly + 1: "Period(5)"} {
		if p.valid() || p.Longest() != 0 {
			t.Errorf("%d is a period", int(p))
		}
		if got := p.String(); got != want {
			t.Errorf("%d: %q, want %q", int(p), got, want)
		}
	}
	for _, w := range []string{"", "day", "Month", "FORTNIGHT"} {
		if p, ok := Parse(w); ok {
			t.Errorf("Parse(%q) = %v", w, p)
		}
	}
}

func TestLongest(t *testing.T) {
	const day = 24 * time.Hour
	for p, want := range map[Period]time.Duration{Daily: day, Weekly: 7 * day, Monthly: 31 * day, Yearly: 366 * day} {
		if got := p.Longest(); got != want {
			t.Errorf("%v: %v, want %v", p, got, want)
		}
	}
}

// Every period that contains an instant of a leap year is at most Longest,
// starts at or before it and ends after it.
func TestContainingIsWithinLongest(t *testing.T) {
	start := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC)
	for p := Daily; p <= Yearly; p++ {
		for h := 0; h < 366*24; h += 7 {
			now := start.Add(time.Duration(h) * time.Hour)
			from, to := p.Containing(now)
			if from.After(now) || !to.After(now) || to.Sub(from) > p.Longest() {
				t.Fatalf("%v at %v: %v .. %v", p, now, from, to)
			}
		}
	}
}

func TestContaining(t *testing.T) {
	for _, tc := range []struct {
		p              Period
		at, from, till string
	}{
		{Daily, "2026-11-30T12:00:00Z", "2026-11-30T00:00:00Z", "2026-12-01T00:00:00Z"},
		{Daily, "2026-12-01T00:00:00Z", "2026-12-01T00:00:00Z", "2026-12-02T00:00:00Z"},
		{Weekly, "2026-12-03T10:00:00Z", "2026-11-30T00:00:00Z", "2026-12-07T00:00:00Z"}, // Monday to Monday
		{Weekly, "2027-01-03T10:00:00Z", "2026-12-28T00:00:00Z", "2027-01-04T00:00:00Z"}, // a Sunday
		{Monthly, "2024-02-29T10:00:00Z", "2024-02-01T00:00:00Z", "2024-03-01T00:00:00Z"},
		{Yearly, "2026-12-31T23:59:59Z", "2026-01-01T00:00:00Z", "2027-01-01T00:00:00Z"},
	} {
		at, _ := time.Parse(time.RFC3339, tc.at)
		from, to := tc.p.Containing(at)
		if from.Format(time.RFC3339) != tc.from || to.Format(time.RFC3339) != tc.till {
			t.Errorf("%v at %s: %v .. %v, want %s .. %s", tc.p, tc.at, from, to, tc.from, tc.till)
		}
	}
}
