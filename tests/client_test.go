package tests

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// cmdTimeout bounds every command a test sends.
const cmdTimeout = 10 * time.Second

// ctx returns a context that bounds one command.
func ctx(t testing.TB) context.Context {
	c, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	t.Cleanup(cancel)
	return c
}

// doer is what the helpers need of a go-redis client (or pipeline).
type doer interface {
	Do(ctx context.Context, args ...any) *redis.Cmd
}

// do sends one command and fails the test on any error.
func do(t testing.TB, c doer, args ...any) any {
	t.Helper()
	v, err := c.Do(ctx(t), args...).Result()
	if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return v
}

// doInt sends a command whose reply is an integer.
func doInt(t testing.TB, c doer, args ...any) int64 {
	t.Helper()
	v, ok := do(t, c, args...).(int64)
	if !ok {
		t.Fatalf("%v: reply is not an integer", args)
	}
	return v
}

// doErr sends a command that must fail and returns the error text.
func doErr(t testing.TB, c doer, args ...any) string {
	t.Helper()
	v, err := c.Do(ctx(t), args...).Result()
	if err == nil {
		t.Fatalf("%v: got %v, want an error", args, v)
	}
	return err.Error()
}

// t0 is the instant most tests fix the clock at: a multiple of 60000 ms, so
// every window of a minute or less begins exactly there.
const t0 = 1_699_999_980_000

// setClock fixes the server's clock (DEBUG CLOCK SET) at ms since the epoch.
func setClock(t testing.TB, c doer, ms int64) {
	t.Helper()
	if got := doInt(t, c, "DEBUG", "CLOCK", "SET", ms); got != ms {
		t.Fatalf("DEBUG CLOCK SET %d answered %d", ms, got)
	}
}

// advanceClock moves the server's clock by ms and returns the new time.
func advanceClock(t testing.TB, c doer, ms int64) int64 {
	t.Helper()
	return doInt(t, c, "DEBUG", "CLOCK", "ADVANCE", ms)
}

// decision is the reply every RL.* command gives.
type decision struct {
	Allowed    bool
	Limit      int64
	Remaining  int64
	RetryAfter int64 // ms
	ResetAfter int64 // ms
}

// String formats d as the RESP2 array it comes from.
func (d decision) String() string {
	a := 0
	if d.Allowed {
		a = 1
	}
	return fmt.Sprintf("[%d %d %d %d %d]", a, d.Limit, d.Remaining, d.RetryAfter, d.ResetAfter)
}

// decisionFields are the RESP3 map keys of a decision, in reply order.
var decisionFields = []string{"allowed", "limit", "remaining", "retry_after_ms", "reset_after_ms"}

// parseDecision reads a decision from either shape rlserver sends: an array
// of five integers (RESP2) or a map of the five names (RESP3).
func parseDecision(v any) (decision, error) {
	n, err := namedInts(v, decisionFields)
	if err != nil {
		return decision{}, err
	}
	if n[0] != 0 && n[0] != 1 {
		return decision{}, fmt.Errorf("allowed is %d", n[0])
	}
	return decision{Allowed: n[0] == 1, Limit: n[1], Remaining: n[2], RetryAfter: n[3], ResetAfter: n[4]}, nil
}

// namedInts reads a reply of named integers (a decision, RL.SHARE's grant)
// from either shape rlserver sends: an array of the integers (RESP2) or a
// map of their names (RESP3).
func namedInts(v any, names []string) ([]int64, error) {
	n := make([]int64, len(names))
	switch r := v.(type) {
	case []any:
		if len(r) != len(n) {
			return nil, fmt.Errorf("array of %d elements, want %d: %v", len(r), len(n), r)
		}
		for i, e := range r {
			x, ok := e.(int64)
			if !ok {
				return nil, fmt.Errorf("element %d is %T, want int64: %v", i, e, r)
			}
			n[i] = x
		}
	case map[any]any:
		if len(r) != len(n) {
			return nil, fmt.Errorf("map of %d pairs, want %d: %v", len(r), len(n), r)
		}
		for i, name := range names {
			x, ok := r[name].(int64)
			if !ok {
				return nil, fmt.Errorf("field %q is %T, want int64: %v", name, r[name], r)
			}
			n[i] = x
		}
	default:
		return nil, fmt.Errorf("reply is %T, want an array or a map: %v", v, v)
	}
	return n, nil
}

// decide sends a decision command (its words split on spaces) and parses
// the reply.
func decide(t testing.TB, c doer, command string) decision {
	t.Helper()
	d, err := parseDecision(do(t, c, words(command)...))
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return d
}

// expectDecision sends command and checks the whole reply.
func expectDecision(t testing.TB, c doer, command string, want decision) {
	t.Helper()
	if got := decide(t, c, command); got != want {
		t.Errorf("%s = %v, want %v", command, got, want)
	}
}

// allow and deny build the expected decisions compactly.
func allow(limit, remaining, reset int64) decision {
	return decision{Allowed: true, Limit: limit, Remaining: remaining, ResetAfter: reset}
}

func deny(limit, remaining, retry, reset int64) decision {
	return decision{Limit: limit, Remaining: remaining, RetryAfter: retry, ResetAfter: reset}
}

// words splits a command line into the arguments go-redis's Do takes.
func words(s string) []any {
	f := strings.Fields(s)
	a := make([]any, len(f))
	for i, w := range f {
		a[i] = w
	}
	return a
}

// throttleReply is CL.THROTTLE's five integers.
type throttleReply [5]int64

// throttle sends a CL.THROTTLE command and parses its array reply.
func throttle(t testing.TB, c doer, command string) throttleReply {
	t.Helper()
	r, err := parseThrottle(do(t, c, words(command)...))
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return r
}

// parseThrottle reads CL.THROTTLE's reply, which must be an array of five
// integers whatever the protocol.
func parseThrottle(v any) (throttleReply, error) {
	var r throttleReply
	a, ok := v.([]any)
	if !ok || len(a) != 5 {
		return r, fmt.Errorf("reply %T %v, want an array of 5 integers", v, v)
	}
	for i, e := range a {
		x, ok := e.(int64)
		if !ok {
			return r, fmt.Errorf("element %d is %T: %v", i, e, a)
		}
		r[i] = x
	}
	return r, nil
}

// itoa is strconv.FormatInt for building command lines.
func itoa(v int64) string { return strconv.FormatInt(v, 10) }

// infoInt reads one integer field from INFO section.
func infoInt(t testing.TB, c doer, section, field string) int64 {
	t.Helper()
	text, ok := do(t, c, "INFO", section).(string)
	if !ok {
		t.Fatalf("INFO %s is not a string", section)
	}
	for _, line := range strings.Split(text, "\r\n") {
		if v, ok := strings.CutPrefix(line, field+":"); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatalf("INFO %s: %q", field, line)
			}
			return n
		}
	}
	t.Fatalf("INFO %s has no %s:\n%s", section, field, text)
	return 0
}
