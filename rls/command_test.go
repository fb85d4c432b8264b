package rls

import (
	"testing"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/calendar"
)

// Each algorithm asks for its engine decision with requests_per_unit and
// the window laid out as that decision's parameters.
func TestRuleCommands(t *testing.T) {
	const minute = 60_000
	for _, tc := range []struct {
		algo algorithm
		unit pb.RateLimitResponse_RateLimit_Unit
		want engine.Command
	}{
		{algoFixed, pb.RateLimitResponse_RateLimit_MINUTE, engine.Command{Op: engine.OpFixed, Args: [4]int64{10, 2 * minute, 0, 3}, Flags: engine.FlagCountRefused}},
		{algoSliding, pb.RateLimitResponse_RateLimit_MINUTE, engine.Command{Op: engine.OpSliding, Args: [4]int64{10, 2 * minute, 0, 3}, Flags: engine.FlagCountRefused}},
		{algoToken, pb.RateLimitResponse_RateLimit_MINUTE, engine.Command{Op: engine.OpToken, Args: [4]int64{10, 10, 2 * minute, 3}}},
		{algoGCRA, pb.RateLimitResponse_RateLimit_MINUTE, engine.Command{Op: engine.OpGCRA, Args: [4]int64{9, 10, 2 * minute, 3}}},
		{algoCalendar, pb.RateLimitResponse_RateLimit_MONTH, engine.Command{Op: engine.OpQuota, Args: [4]int64{10, int64(calendar.Monthly), 0, 3}, Flags: engine.FlagCountRefused}},
	} {
		r := &rule{Algorithm: tc.algo, Unit: tc.unit, RequestsPerUnit: 10, Multiplier: 2, CountRefused: tc.algo.countsRefusals()}
		if tc.algo == algoCalendar {
			r.Multiplier = 1
		}
		got := ruleCommand(r, 3)
		if got.Op != tc.want.Op || got.Args != tc.want.Args || got.Flags != tc.want.Flags {
			t.Errorf("%v: %+v, want %+v", tc.algo, got, tc.want)
		}
		if err := got.Check(); err != nil {
			t.Errorf("%v: %v", tc.algo, err)
		}
		// A bucket told to count refused hits goes into debt (FORCE).
		r.CountRefused = true
		if got := ruleCommand(r, 3); got.Flags&(engine.FlagCountRefused|engine.FlagForce) == 0 || got.Check() != nil {
			t.Errorf("%v counting refused hits: %+v, %v", tc.algo, got, got.Check())
		}
		if tc.algo.countsPeriods() != (tc.algo == algoCalendar) {
			t.Errorf("%v counts periods: %v", tc.algo, tc.algo.countsPeriods())
		}
	}
}

// Envoy's units from a day up are the calendar periods of the same names.
func TestCalendarPeriods(t *testing.T) {
	for unit, want := range map[pb.RateLimitResponse_RateLimit_Unit]calendar.Period{
		pb.RateLimitResponse_RateLimit_SECOND: 0, pb.RateLimitResponse_RateLimit_HOUR: 0,
		pb.RateLimitResponse_RateLimit_DAY: calendar.Daily, pb.RateLimitResponse_RateLimit_WEEK: calendar.Weekly,
		pb.RateLimitResponse_RateLimit_MONTH: calendar.Monthly, pb.RateLimitResponse_RateLimit_YEAR: calendar.Yearly,
	} {
		if got, ok := calendarPeriod(unit); got != want || ok != (want != 0) {
			t.Errorf("%v: %v %v, want %v", unit, got, ok, want)
		}
	}
}
