package client

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

// Each rule sends its command with durations in whole milliseconds (CL.THROTTLE:
// seconds), rounded up.
func TestRuleCommands(t *testing.T) {
	for _, tc := range []struct {
		rule Rule
		want []any
	}{
		{SlidingWindow{100, time.Minute}, []any{"RL.SLIDING", "k", int64(100), int64(60000), "COST", int64(2)}},
		{FixedWindow{5, 1500 * time.Microsecond}, []any{"RL.FIXED", "k", int64(5), int64(2), "COST", int64(2)}},
		{SlidingLog{3, 10 * time.Second}, []any{"RL.LOG", "k", int64(3), int64(10000), "COST", int64(2)}},
		{TokenBucket{10, 1, time.Second}, []any{"RL.TOKEN", "k", int64(10), int64(1), int64(1000), "COST", int64(2)}},
		{LeakyBucket{5, 2, time.Second}, []any{"RL.LEAKY", "k", int64(5), int64(2), int64(1000), "COST", int64(2)}},
		{GCRA{4, 1, time.Second}, []any{"RL.GCRA", "k", int64(4), int64(1), int64(1000), "COST", int64(2)}},
		{Throttle{15, 30, 59500 * time.Millisecond}, []any{"CL.THROTTLE", "k", int64(15), int64(30), int64(60), int64(2)}},
		{Shape{3, 1, time.Second}, []any{"RL.SHAPE", "k", int64(3), int64(1), int64(1000), "COST", int64(2)}},
		{Quota{1000, Monthly, 0}, []any{"RL.QUOTA", "k", int64(1000), "MONTH", "COST", int64(2)}},
		{Quota{5, Daily, -5*time.Hour - 30*time.Minute}, []any{"RL.QUOTA", "k", int64(5), "DAY", "OFFSET", int64(-330), "COST", int64(2)}},
		{Quota{5, Weekly, 3*time.Hour + 29*time.Second}, []any{"RL.QUOTA", "k", int64(5), "WEEK", "OFFSET", int64(180), "COST", int64(2)}},
		{Quota{5, Yearly, 90 * time.Second}, []any{"RL.QUOTA", "k", int64(5), "YEAR", "OFFSET", int64(2), "COST", int64(2)}},
	} {
		if got := tc.rule.command("k", 2); !slices.Equal(got, tc.want) {
			t.Errorf("%T: %v, want %v", tc.rule, got, tc.want)
		}
	}
}

func TestRulePolicies(t *testing.T) {
	for _, tc := range []struct {
		rule   Rule
		quota  int64
		window time.Duration
	}{
		{SlidingWindow{5, time.Minute}, 5, time.Minute},
		{FixedWindow{200, time.Minute}, 200, time.Minute},
		{SlidingLog{3, 10 * time.Second}, 3, 10 * time.Second},
		{TokenBucket{10, 1, time.Second}, 10, 10 * time.Second},      // empty to full in 10 s
		{LeakyBucket{5, 2, time.Second}, 5, 2500 * time.Millisecond}, // full to empty in 2.5 s
		{GCRA{4, 1, time.Second}, 5, 5 * time.Second},
		{Throttle{15, 30, time.Minute}, 16, 32 * time.Second},
		{TokenBucket{3, 7, time.Millisecond}, 3, 428572 * time.Nanosecond}, // rounded up
		{TokenBucket{1e15, 1, time.Hour}, 1e15, math.MaxInt64},             // saturates
		{Shape{3, 1, time.Second}, 3, 3 * time.Second},                     // full to empty in 3 s
		{Quota{100, Daily, time.Hour}, 100, 24 * time.Hour},
		{Quota{100, Weekly, 0}, 100, 7 * 24 * time.Hour},
		{Quota{100, Monthly, 0}, 100, 31 * 24 * time.Hour}, // the longest month
		{Quota{100, Yearly, 0}, 100, 366 * 24 * time.Hour}, // a leap year
		{Quota{100, 0, 0}, 100, 0},                         // no period: HTTPConfig refuses it
	} {
		q, w := tc.rule.Policy()
		if q != tc.quota || w != tc.window {
			t.Errorf("%+v: %d per %v, want %d per %v", tc.rule, q, w, tc.quota, tc.window)
		}
	}
}

// Every rule but Throttle has rlserver's own form, which RL.ALL and RL.POLICY
// SET take, and a policy's definition reads back as the rule it was set with.
func TestRuleDefinitionsRoundTrip(t *testing.T) {
	for _, rule := range []Rule{
		SlidingWindow{100, time.Minute},
		FixedWindow{5, 2 * time.Second},
		SlidingLog{3, 10 * time.Second},
		TokenBucket{10, 1, time.Second},
		LeakyBucket{5, 2, time.Second},
		GCRA{0, 1, time.Second},
		Shape{3, 1, 250 * time.Millisecond},
		Quota{1_000_000, Monthly, 3 * time.Hour},
		Quota{7, Yearly, -12 * time.Hour},
		Quota{7, Daily, 0},
	} {
		word, params, ok := rule.limit()
		if !ok {
			t.Fatalf("%T has no RL.* form", rule)
		}
		words := []string{word}
		for _, p := range params {
			words = append(words, fmt.Sprint(p))
		}
		for _, shadow := range []bool{false, true} {
			def := strings.Join(words, " ")
			if shadow {
				def += " SHADOW"
			}
			got, gotShadow, err := parseDefinition(def)
			if err != nil || got != rule || gotShadow != shadow {
				t.Errorf("%q: %#v shadow=%v %v, want %#v", def, got, gotShadow, err, rule)
			}
		}
	}
	if _, _, ok := (Throttle{1, 1, time.Second}).limit(); ok {
		t.Error("Throttle has an RL.* form")
	}
	// The definitions rlserver's own tests show.
	for def, want := range map[string]Rule{
		"QUOTA 1000000 MONTH OFFSET 180": Quota{1_000_000, Monthly, 3 * time.Hour},
		"FIXED 1 1000 SHADOW":            FixedWindow{1, time.Second},
		"GCRA 4 1 1000":                  GCRA{4, 1, time.Second},
	} {
		if got, _, err := parseDefinition(def); err != nil || got != want {
			t.Errorf("%q: %#v %v, want %#v", def, got, err, want)
		}
	}
	// A newer server's algorithm is not an error: the rule is unknown.
	if got, shadow, err := parseDefinition("CONCURRENCY 5 SHADOW"); got != nil || !shadow || err != nil {
		t.Errorf("unknown algorithm: %v %v %v", got, shadow, err)
	}
	for _, bad := range []string{"", "SLIDING 1", "SLIDING one 1000", "TOKEN 1 2", "QUOTA 5 FORTNIGHT",
		"QUOTA 5 DAY OFFSET", "QUOTA 5 DAY BEHIND 60", "QUOTA x DAY"} {
		if _, _, err := parseDefinition(bad); !errors.Is(err, ErrUnexpectedReply) {
			t.Errorf("%q: %v, want ErrUnexpectedReply", bad, err)
		}
	}
}

func TestPeriodString(t *testing.T) {
	for p, want := range map[Period]string{Daily: "DAY", Weekly: "WEEK", Monthly: "MONTH", Yearly: "YEAR", 0: "Period(0)"} {
		if got := p.String(); got != want {
			t.Errorf("%d: %q, want %q", int(p), got, want)
		}
	}
}

// Throttle is redis-cell's command: it has no refunds, PARTIAL, RL.ALL or
// policies, and the client says so without asking the server.
func TestThrottleUnsupportedUses(t *testing.T) {
	c := New(nil) // never reached
	ctx := context.Background()
	th := Throttle{15, 30, time.Minute}
	if _, err := c.Refund(ctx, "k", th, 1); !errors.Is(err, ErrNotSupported) {
		t.Errorf("Refund: %v", err)
	}
	if _, err := c.AllowN(ctx, "k", th, -1); !errors.Is(err, ErrNotSupported) {
		t.Errorf("AllowN -1: %v", err)
	}
	if _, _, err := c.AllowPartial(ctx, "k", th, 2); !errors.Is(err, ErrNotSupported) {
		t.Errorf("AllowPartial: %v", err)
	}
	if _, _, err := c.All(ctx, 1, KeyedRule{Key: "k", Rule: th}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("All: %v", err)
	}
	if err := c.SetPolicy(ctx, ServerPolicy{Name: "p", Rule: th}); !errors.Is(err, ErrNotSupported) {
		t.Errorf("SetPolicy: %v", err)
	}
	if _, err := c.Refund(ctx, "k", SlidingWindow{1, time.Second}, -1); !errors.Is(err, ErrNotSupported) {
		t.Errorf("a negative refund: %v", err)
	}
	for name, limits := range map[string][]KeyedRule{
		"neither": {{Key: "k"}},
		"both":    {{Key: "k", Rule: SlidingWindow{1, time.Second}, Policy: "p"}},
	} {
		if _, _, err := c.All(ctx, 1, limits...); !errors.Is(err, ErrNoRule) {
			t.Errorf("All with %s a Rule and a Policy: %v", name, err)
		}
	}
	if _, _, err := c.All(ctx, 1); err == nil {
		t.Error("All without limits: no error")
	}
	if released, err := c.Release(ctx, Lease{}); released || err != nil {
		t.Errorf("Release of the zero Lease: %v %v", released, err)
	}
}
