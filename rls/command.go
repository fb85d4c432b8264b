package rls

import (
	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/calendar"
)

// A counted descriptor is one engine decision on the key its domain and
// entries name, with its rule's algorithm and parameters:
//
//	fixed     RL.FIXED    requests_per_unit, window
//	sliding   RL.SLIDING  requests_per_unit, window
//	token     RL.TOKEN    capacity requests_per_unit, refilled by as many every window
//	gcra      RL.GCRA     burst requests_per_unit - 1, requests_per_unit every window
//	calendar  RL.QUOTA    requests_per_unit per calendar day, week, month or year (UTC)
//
// where window is unit_multiplier units. The cost is the hits addend
// (negative for is_negative_hits: a refund). A rule that counts refused
// hits (count_refused) asks a window with FlagCountRefused and a bucket
// with FlagForce, which lets it go into debt: either way a hit counts
// whether it fits or not, as a charge Envoy makes when a stream is done
// (apply_on_stream_done) must. Each op's parameters are laid out as their
// roles in the engine's table say.

// calendarPeriod is the calendar period unit is, when it is one: Envoy's
// DAY, WEEK, MONTH and YEAR are RL.QUOTA's words for the periods.
func calendarPeriod(unit pb.RateLimitResponse_RateLimit_Unit) (calendar.Period, bool) {
	return calendar.Parse(unit.String())
}

// ruleCommand is the engine decision of cost units under r; its key is
// left to the caller. r.RequestsPerUnit must not be 0.
func ruleCommand(r *rule, cost int64) engine.Command {
	rpu := int64(r.RequestsPerUnit)
	op := algorithmOps[r.Algorithm]
	c := engine.Command{Op: op, Args: [4]int64{3: cost}}
	params := op.Spec().Params
	for i := range params {
		switch params[i].Role {
		case engine.RoleUnits:
			c.Args[i] = rpu
		case engine.RoleBurst:
			c.Args[i] = rpu - 1
		case engine.RoleWindow:
			c.Args[i] = r.Window()
		case engine.RolePeriod:
			period, _ := calendarPeriod(r.Unit)
			c.Args[i] = int64(period)
		}
	}
	switch {
	case r.CountRefused && r.Algorithm.countsRefusals():
		c.Flags = engine.FlagCountRefused
	case r.CountRefused:
		c.Flags = engine.FlagForce // a bucket goes into debt
	}
	return c
}

// keyPrefix starts every key the service counts on, so that RESP clients
// can tell them apart (SCAN MATCH rls|*) and never collide with them.
const keyPrefix = "rls|"

// appendKey appends the engine key of a descriptor to b:
//
//	rls|<algorithm>|<domain>|<key>=<value>|<key>=<value>...
//
// with "\", "|" and "=" in names and values escaped by a backslash, so
// that two descriptors share a key only when they are the same. The
// algorithm is part of it, so that a rule changed from one algorithm to
// another starts a new count instead of meeting a key of another kind. An
// entry whose value a share_threshold wildcard matched is counted under the
// wildcard's pattern ("files*"), as envoyproxy/ratelimit does.
func appendKey(b []byte, algo algorithm, domain string, entries []*rlpb.RateLimitDescriptor_Entry, shared []sharedValue) []byte {
	b = append(b, keyPrefix...)
	b = append(b, algorithmNames[algo]...)
	b = append(b, '|')
	b = appendEscaped(b, domain)
	for i, e := range entries {
		value := e.GetValue()
		for _, s := range shared {
			if s.index == i {
				value = s.pattern
			}
		}
		b = append(b, '|')
		b = appendEscaped(b, e.GetKey())
		b = append(b, '=')
		b = appendEscaped(b, value)
	}
	return b
}

// appendEscaped appends s with "\", "|" and "=" escaped by a backslash.
func appendEscaped(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '\\', '|', '=':
			b = append(b, '\\')
		}
		b = append(b, s[i])
	}
	return b
}
