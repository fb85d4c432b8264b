package tests

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
)

// End-to-end tests of the commands of issue 5: RL.ALL, RL.ACQUIRE and
// RL.RELEASE, RL.QUOTA, RL.SHAPE, refunds (negative COST), PARTIAL,
// policies (RL.POLICY, RL.CHECK, shadow mode), and Redis's string commands
// as limiters written for Redis use them. Every test fixes the clock with
// DEBUG CLOCK SET, so the expected numbers follow from the definitions in
// docs/algorithms.md.

// ext is a decision reply with the fields it has beyond the common five.
type ext struct {
	decision
	extra []int64 // in reply order
}

// parseExt reads a decision reply whose extra fields are names, in this
// order: RESP2 sends them as integers after the five, RESP3 as map entries
// of those names. The reply must have exactly these fields.
func parseExt(v any, names ...string) (ext, error) {
	var r ext
	switch m := v.(type) {
	case []any:
		if len(m) != 5+len(names) {
			return r, fmt.Errorf("array of %d elements, want %d (extra fields %v): %v", len(m), 5+len(names), names, m)
		}
		d, err := parseDecision(m[:5])
		if err != nil {
			return r, err
		}
		r.decision = d
		for i, e := range m[5:] {
			x, ok := e.(int64)
			if !ok {
				return r, fmt.Errorf("%s is %T, want int64: %v", names[i], e, m)
			}
			r.extra = append(r.extra, x)
		}
	case map[any]any:
		if len(m) != 5+len(names) {
			return r, fmt.Errorf("map of %d pairs, want %d (extra fields %v): %v", len(m), 5+len(names), names, m)
		}
		common := map[any]any{}
		for _, f := range decisionFields {
			common[f] = m[f]
		}
		d, err := parseDecision(common)
		if err != nil {
			return r, err
		}
		r.decision = d
		for _, n := range names {
			x, ok := m[n].(int64)
			if !ok {
				return r, fmt.Errorf("field %q is %T, want int64: %v", n, m[n], m)
			}
			r.extra = append(r.extra, x)
		}
	default:
		return r, fmt.Errorf("reply is %T, want an array or a map: %v", v, v)
	}
	return r, nil
}

// decideExt sends a decision command whose reply has the named extra fields
// and returns the decision and their values.
func decideExt(t testing.TB, c doer, command string, names ...string) (decision, []int64) {
	t.Helper()
	r, err := parseExt(do(t, c, words(command)...), names...)
	if err != nil {
		t.Fatalf("%s: %v", command, err)
	}
	return r.decision, r.extra
}

// expectExt sends command and checks the decision and its extra fields.
func expectExt(t testing.TB, c doer, command string, want decision, names []string, extra ...int64) {
	t.Helper()
	d, got := decideExt(t, c, command, names...)
	if d != want || !slices.Equal(got, extra) {
		t.Errorf("%s = %v %s=%v, want %v %v", command, d, strings.Join(names, ","), got, want, extra)
	}
}

// decideAll sends an RL.ALL and returns its overall decision and the
// replies of its limits (each with no extra field).
func decideAll(t testing.TB, c doer, command string) (decision, []decision) {
	t.Helper()
	a, ok := do(t, c, words(command)...).([]any)
	if !ok || len(a) < 2 {
		t.Fatalf("%s: reply %v, want an array of the overall decision and one reply per limit", command, a)
	}
	var ds []decision
	for i, e := range a {
		d, err := parseDecision(commonFields(e)) // extra fields are checked elsewhere
		if err != nil {
			t.Fatalf("%s: element %d: %v", command, i, err)
		}
		ds = append(ds, d)
	}
	return ds[0], ds[1:]
}

// commonFields is the five common fields of a decision reply, without the
// extra fields some limits add (a POLICY limit's shadow_denied).
func commonFields(v any) any {
	switch r := v.(type) {
	case []any:
		return r[:min(len(r), 5)]
	case map[any]any:
		common := map[any]any{}
		for _, f := range decisionFields {
			common[f] = r[f]
		}
		return common
	}
	return v
}

// expectAll checks an RL.ALL reply: the overall decision, then each limit's.
func expectAll(t testing.TB, c doer, command string, overall decision, limits ...decision) {
	t.Helper()
	o, got := decideAll(t, c, command)
	if o != overall || !slices.Equal(got, limits) {
		t.Errorf("%s =\n  %v %v\nwant\n  %v %v", command, o, got, overall, limits)
	}
}

// infoText returns INFO section's lines, without the CRLFs.
func infoText(t testing.TB, c doer, section string) []string {
	t.Helper()
	text, ok := do(t, c, "INFO", section).(string)
	if !ok {
		t.Fatalf("INFO %s is not a string", section)
	}
	return strings.Split(strings.TrimRight(text, "\r\n"), "\r\n")
}

const crossSlot = "CROSSSLOT Keys in request don't hash to the same slot"

// RL.ALL checks several limits as one: when one denies, nothing is consumed
// anywhere; a limit that would have allowed on its own reports its budget as
// it stands. Keys must share a slot, even on a standalone server.
func TestAllOrNothing(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "4")
	c := srv.Client(t, 2)
	setClock(t, c, t0)
	const both = "RL.ALL SLIDING {user:ada}:sec 2 1000 FIXED {user:ada}:min 3 60000"

	// Overall: allowed, and the limit and remaining of the limit with the
	// fewest units left; reset_after the longest.
	expectAll(t, c, both, allow(2, 1, 60000), allow(2, 1, 2000), allow(3, 2, 60000))
	expectAll(t, c, both, allow(2, 0, 60000), allow(2, 0, 2000), allow(3, 1, 60000))
	// The second denies (2 within the second); the minute would have
	// allowed and shows its budget as it stands: 1 left, not consumed.
	expectAll(t, c, both, deny(2, 0, 1500, 60000), deny(2, 0, 1500, 2000), allow(3, 1, 60000))
	expectDecision(t, c, "RL.FIXED {user:ada}:min 3 60000 COST 0", allow(3, 1, 60000))

	// Two seconds later the second is fresh but the minute has 1 left:
	// COST 2 is refused as a whole and the second's key is not created.
	setClock(t, c, t0+2000)
	expectAll(t, c, both+" COST 2", deny(3, 1, 58000, 58000), allow(2, 2, 0), deny(3, 1, 58000, 58000))
	if n := doInt(t, c, "EXISTS", "{user:ada}:sec"); n != 0 {
		t.Errorf("EXISTS {user:ada}:sec = %d after a refused RL.ALL, want 0: nothing is consumed", n)
	}
	// A cost no limit can ever grant: -1 overall.
	expectAll(t, c, both+" COST 5", deny(3, 1, -1, 58000), deny(2, 2, -1, 0), deny(3, 1, -1, 58000))
	// A cost that fits in both is granted in both.
	expectAll(t, c, both, allow(3, 0, 58000), allow(2, 1, 2000), allow(3, 0, 58000))

	// Keys in different slots: CROSSSLOT through go-redis and on the
	// wire, on a standalone server, and nothing is consumed.
	setClock(t, c, t0+10000)
	if got := doErr(t, c, words("RL.ALL SLIDING {user:ada}:sec 2 1000 FIXED user:bob 3 60000")...); got != crossSlot {
		t.Errorf("RL.ALL across slots: %q, want %q", got, crossSlot)
	}
	raw := dialRaw(t, srv.Addr)
	raw.send(command(strings.Fields("RL.ALL FIXED user:bob 3 60000 SLIDING {user:ada}:sec 2 1000")...))
	if got := raw.reply(); got != "-"+crossSlot {
		t.Errorf("RL.ALL across slots on the wire: %s, want -%s", got, crossSlot)
	}
	for _, key := range []string{"{user:ada}:sec", "user:bob"} {
		if n := doInt(t, c, "EXISTS", key); n != 0 {
			t.Errorf("EXISTS %s = %d after a CROSSSLOT RL.ALL, want 0", key, n)
		}
	}

	// The shape of the request.
	for _, tc := range []struct{ command, want string }{
		{"RL.ALL SLIDING {u}:a 2 1000 FIXED {u}:a 3 60000", "ERR RL.ALL names the key '{u}:a' twice"},
		{"RL.ALL SLIDING {u}:a 2 1000 PARTIAL", "ERR RL.ALL limits are SLIDING, FIXED, LOG, TOKEN, LEAKY, GCRA, SHAPE, QUOTA or POLICY, each followed by its key and parameters"},
		{"RL.ALL SLIDING {u}:a 2", "ERR RL.ALL limits are SLIDING, FIXED, LOG, TOKEN, LEAKY, GCRA, SHAPE, QUOTA or POLICY, each followed by its key and parameters"},
		{"RL.ALL SLIDING {u}:a 0 1000", "ERR limit must be an integer from 1 to 1000000000000000"},
		{"RL.ALL POLICY {u}:a nosuch", "ERR no such policy 'nosuch'"},
		{"RL.ALL COST 1", "ERR wrong number of arguments for 'rl.all' command"},
	} {
		if got := doErr(t, c, words(tc.command)...); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.command, got, tc.want)
		}
	}
	var limits17 []string
	for i := range 17 {
		limits17 = append(limits17, fmt.Sprintf("FIXED {u}:%d 10 1000", i))
	}
	if got := doErr(t, c, words("RL.ALL "+strings.Join(limits17, " "))...); got != "ERR RL.ALL takes at most 16 limits" {
		t.Errorf("RL.ALL of 17 limits: %q", got)
	}
	o, limits := decideAll(t, c, "RL.ALL "+strings.Join(limits17[:16], " "))
	if o != allow(10, 9, 1000) || len(limits) != 16 {
		t.Errorf("RL.ALL of 16 limits = %v and %d replies, want %v and 16", o, len(limits), allow(10, 9, 1000))
	}
}

// RL.ALL's reply on the wire: an array of the overall decision and each
// limit's reply, arrays in RESP2 and maps in RESP3; the limits of every
// algorithm, a policy among them.
func TestAllReplyShape(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := dialRaw(t, srv.Addr)
	send := func(words string) string {
		c.send(command(strings.Fields(words)...))
		return c.reply()
	}
	if got := send("DEBUG CLOCK SET " + itoa(t0)); got != ":"+itoa(t0) {
		t.Fatalf("DEBUG CLOCK SET = %s", got)
	}
	if got := send("RL.POLICY SET search TOKEN 5 1 1000"); got != "+OK" {
		t.Fatalf("RL.POLICY SET = %s", got)
	}
	all := "RL.ALL SLIDING {u}:s 2 1000 FIXED {u}:f 3 60000 LOG {u}:l 4 1000 TOKEN {u}:t 5 1 1000 " +
		"LEAKY {u}:k 6 1 1000 GCRA {u}:g 6 1 1000 QUOTA {u}:q 8 DAY OFFSET 60 POLICY {u}:p search"
	// t0 is 2023-11-14T22:13:00Z: 23:13 at UTC+01:00, 47 minutes to the end of the day.
	want := "*[*[:1 :2 :1 :0 :2820000]" +
		" *[:1 :2 :1 :0 :2000] *[:1 :3 :2 :0 :60000] *[:1 :4 :3 :0 :1000] *[:1 :5 :4 :0 :1000]" +
		" *[:1 :6 :5 :0 :1000] *[:1 :7 :6 :0 :1000] *[:1 :8 :7 :0 :2820000] *[:1 :5 :4 :0 :1000 :0]]"
	if got := send(all); got != want {
		t.Errorf("RESP2 %s =\n  %s\nwant\n  %s", all, got, want)
	}
	if got := send("HELLO 3"); got[0] != '%' {
		t.Fatalf("HELLO 3 = %s", got)
	}
	m := func(allowed, limit, remaining, retry, reset int) string {
		return fmt.Sprintf("%%{$allowed :%d $limit :%d $remaining :%d $retry_after_ms :%d $reset_after_ms :%d}",
			allowed, limit, remaining, retry, reset)
	}
	// A POLICY limit's reply always ends with shadow_denied.
	policy := func(allowed, limit, remaining, retry, reset int) string {
		return strings.TrimSuffix(m(allowed, limit, remaining, retry, reset), "}") + " $shadow_denied :0}"
	}
	// The second grant of the sliding window's two: the overall limit is
	// the sliding window, now without units left.
	want = "*[" + strings.Join([]string{m(1, 2, 0, 0, 2820000),
		m(1, 2, 0, 0, 2000), m(1, 3, 1, 0, 60000), m(1, 4, 2, 0, 1000), m(1, 5, 3, 0, 2000),
		m(1, 6, 4, 0, 2000), m(1, 7, 5, 0, 2000), m(1, 8, 6, 0, 2820000), policy(1, 5, 3, 0, 2000)}, " ") + "]"
	if got := send(all); got != want {
		t.Errorf("RESP3 %s =\n  %s\nwant\n  %s", all, got, want)
	}
	// Refused by the sliding window alone: every other limit shows its
	// budget as it stands, and the overall wait is the sliding window's.
	want = "*[" + strings.Join([]string{m(0, 2, 0, 1500, 2820000),
		m(0, 2, 0, 1500, 2000), m(1, 3, 1, 0, 60000), m(1, 4, 2, 0, 1000), m(1, 5, 3, 0, 2000),
		m(1, 6, 4, 0, 2000), m(1, 7, 5, 0, 2000), m(1, 8, 6, 0, 2820000), policy(1, 5, 3, 0, 2000)}, " ") + "]"
	if got := send(all); got != want {
		t.Errorf("RESP3 refused %s =\n  %s\nwant\n  %s", all, got, want)
	}

	// go-redis sees an array whose elements are maps.
	gc := srv.Client(t, 3)
	v := do(t, gc, words(strings.ReplaceAll(all, "{u}", "{v}"))...)
	a, ok := v.([]any)
	if !ok || len(a) != 9 {
		t.Fatalf("go-redis RESP3 RL.ALL = %T %v, want an array of 9", v, v)
	}
	for i, e := range a {
		if _, ok := e.(map[any]any); !ok {
			t.Errorf("go-redis RESP3 RL.ALL element %d is %T, want a map", i, e)
		}
	}
}

// A SHAPE limit in RL.ALL reports its delay_ms like RL.SHAPE, call after
// call on one connection.
func TestAllShapeLimitRepeated(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := dialRaw(t, srv.Addr)
	send := func(words string) string {
		c.send(command(strings.Fields(words)...))
		return c.reply()
	}
	send("DEBUG CLOCK SET " + itoa(t0))
	const all = "RL.ALL SHAPE {u}:sh 3 1 1000 TOKEN {u}:t 5 1 1000"
	if got, want := send(all), "*[*[:1 :3 :2 :0 :1000] *[:1 :3 :2 :0 :1000 :0] *[:1 :5 :4 :0 :1000]]"; got != want {
		t.Fatalf("first %s = %s, want %s", all, got, want)
	}
	got, want := send(all), "*[*[:1 :3 :1 :0 :2000] *[:1 :3 :1 :0 :2000 :1000] *[:1 :5 :3 :0 :2000]]"
	if got == "*[*[:1 :3 :1 :0 :2000] *[:1 :3 :1 :0 :2000 :0 :1000] *[:1 :5 :3 :0 :2000]]" {
		// The regression that once followed: a third call panicked the
		// server (index out of range in Result.addExtra).
		t.Fatalf("RL.ALL reuses the limits' results without clearing their extra fields: "+
			"the second %s on one connection (--in-memory) answers the SHAPE limit with delay_ms twice, %s, want %s; "+
			"the third panics the server (engine/all.go: only out[0] is reset by Shard.Apply)", all, got, want)
	}
	if got != want {
		t.Errorf("second %s = %s, want %s", all, got, want)
	}
	if got, want := send(all), "*[*[:1 :3 :0 :0 :3000] *[:1 :3 :0 :0 :3000 :2000] *[:1 :5 :2 :0 :3000]]"; got != want {
		t.Errorf("third %s = %s, want %s", all, got, want)
	}
	if got := send("PING"); got != "+PONG" {
		t.Errorf("PING after three RL.ALL = %s", got)
	}
}

// RL.ACQUIRE grants at most limit leases at once, each with an id; RL.RELEASE
// gives one back; a lease that is never released expires after lease_ms.
func TestLeases(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.Client(t, 2)
	setClock(t, c, t0)
	leaseID := []string{"lease_id"}
	const acquire = "RL.ACQUIRE jobs:ada 2 30000"
	id := int64(t0) << 20 // time-based: the grant's time shifted left by 20 bits
	expectExt(t, c, acquire, allow(2, 1, 30000), leaseID, id)
	expectExt(t, c, acquire, allow(2, 0, 30000), leaseID, id+1) // same ms: one more
	expectExt(t, c, acquire, deny(2, 0, 30000, 30000), leaseID, 0)
	if typ := do(t, c, "TYPE", "jobs:ada"); typ != "rl.lease" {
		t.Errorf("TYPE jobs:ada = %v, want rl.lease", typ)
	}
	info := infoFields(t, do(t, c, "RL.INFO", "jobs:ada"))
	if info["algorithm"] != "rl.lease" || info["held"] != int64(2) || info["ttl_ms"] != int64(30000) {
		t.Errorf("RL.INFO jobs:ada = %v, want rl.lease with 2 held, ttl_ms 30000", info)
	}

	if n := doInt(t, c, "RL.RELEASE", "jobs:ada", id); n != 1 {
		t.Errorf("RL.RELEASE of a lease held = %d, want 1", n)
	}
	if n := doInt(t, c, "RL.RELEASE", "jobs:ada", id); n != 0 {
		t.Errorf("RL.RELEASE of a lease released = %d, want 0", n)
	}
	expectExt(t, c, acquire, allow(2, 0, 30000), leaseID, id+2)

	// Ten seconds later: both leases are held until t0+30000.
	setClock(t, c, t0+10000)
	expectExt(t, c, acquire, deny(2, 0, 20000, 20000), leaseID, 0)

	// A client that never releases: its leases expire by themselves.
	setClock(t, c, t0+30000)
	if n := doInt(t, c, "EXISTS", "jobs:ada"); n != 0 {
		t.Errorf("EXISTS jobs:ada = %d once every lease expired, want 0", n)
	}
	if n := doInt(t, c, "RL.RELEASE", "jobs:ada", id+1); n != 0 {
		t.Errorf("RL.RELEASE of an expired lease = %d, want 0", n)
	}
	gc := srv.Client(t, 3)
	expectExt(t, gc, acquire, allow(2, 1, 30000), leaseID, (t0+30000)<<20)

	if n := doInt(t, c, "RL.RELEASE", "nobody", 1); n != 0 {
		t.Errorf("RL.RELEASE of a missing key = %d, want 0", n)
	}
	decide(t, c, "RL.SLIDING user:ada 10 1000")
	for _, tc := range []struct{ command, want string }{
		{"RL.RELEASE user:ada 1", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"RL.RELEASE jobs:ada 0", "ERR lease_id must be an integer from 1 to 9223372036854775807"},
		{"RL.ACQUIRE jobs:ada 0 1000", "ERR limit must be an integer from 1 to 10000"},
		{"RL.ACQUIRE jobs:ada 2 0", "ERR lease_ms must be an integer from 1 to 1000000000000"},
		{"RL.ACQUIRE jobs:ada 2 1000 COST 2", "ERR wrong number of arguments for 'rl.acquire' command"},
		{"RL.ACQUIRE user:ada 2 1000", "WRONGTYPE Operation against a key holding the wrong kind of value"},
	} {
		if got := doErr(t, c, words(tc.command)...); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.command, got, tc.want)
		}
	}
}

// Lease ids never repeat on a key, even when its last lease is released and
// a new one granted in the same millisecond.
func TestLeaseIDsNeverRepeat(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 2)
	setClock(t, c, t0)
	_, first := decideExt(t, c, "RL.ACQUIRE jobs:ada 2 30000", "lease_id")
	if n := doInt(t, c, "RL.RELEASE", "jobs:ada", first[0]); n != 1 {
		t.Fatalf("RL.RELEASE = %d, want 1", n)
	}
	_, second := decideExt(t, c, "RL.ACQUIRE jobs:ada 2 30000", "lease_id")
	if second[0] == first[0] {
		t.Fatalf("RL.ACQUIRE repeats lease id %d on jobs:ada: RL.RELEASE of its only lease deletes the key, "+
			"and with it the last id, so a grant in the same millisecond gets now<<20 again; want an id above %d",
			second[0], first[0])
	}
	if second[0] <= first[0] {
		t.Errorf("lease ids %d then %d, want increasing", first[0], second[0])
	}
}

// RL.QUOTA counts in calendar periods of UTC shifted by OFFSET minutes:
// a month at UTC+03:00 ends at 21:00 UTC on its last day.
func TestQuotaMonthBoundaryWithOffset(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 3)
	istanbul := time.FixedZone("UTC+3", 3*3600)
	end := time.Date(2024, 2, 1, 0, 0, 0, 0, istanbul).UnixMilli() // 2024-01-31T21:00:00Z
	ms := func(from int64, to time.Time) int64 { return to.UnixMilli() - from }

	setClock(t, c, end-1000)
	const q = "RL.QUOTA api:ada 1000 MONTH OFFSET 180"
	expectDecision(t, c, q+" COST 1000", allow(1000, 0, 1000))
	expectDecision(t, c, q, deny(1000, 0, 1000, 1000))
	// In UTC the month still has three hours to go.
	expectDecision(t, c, "RL.QUOTA api:utc 1000 MONTH COST 1", allow(1000, 999, ms(end-1000, time.Date(2024, 2, 1, 0, 0, 0, 0, time.UTC))))

	setClock(t, c, end-1)
	expectDecision(t, c, q, deny(1000, 0, 1, 1))
	setClock(t, c, end)
	febEnd := ms(end, time.Date(2024, 3, 1, 0, 0, 0, 0, istanbul)) // 29 days: 2024 is a leap year
	expectDecision(t, c, q, allow(1000, 999, febEnd))
	if got := doInt(t, c, "PTTL", "api:ada"); got != febEnd {
		t.Errorf("PTTL api:ada = %d, want %d (the end of February at UTC+3)", got, febEnd)
	}
	expectDecision(t, c, "RL.QUOTA api:utc 1000 MONTH COST 0", allow(1000, 999, 3*3600*1000))
	// Five hours west of UTC it is 16:00 on January 31st.
	expectDecision(t, c, "RL.QUOTA api:ny 10 MONTH OFFSET -300", allow(10, 9, 8*3600*1000))

	// ISO weeks start on Monday: Thursday 2024-02-01 00:00 at UTC+3 is 4
	// days from Monday the 5th; a year ends on January 1st.
	expectDecision(t, c, "RL.QUOTA w 10 WEEK OFFSET 180", allow(10, 9, 4*86400*1000))
	expectDecision(t, c, "RL.QUOTA w:utc 10 WEEK", allow(10, 9, ms(end, time.Date(2024, 2, 5, 0, 0, 0, 0, time.UTC))))
	expectDecision(t, c, "RL.QUOTA y 10 YEAR OFFSET 180", allow(10, 9, ms(end, time.Date(2025, 1, 1, 0, 0, 0, 0, istanbul))))
	expectDecision(t, c, "RL.QUOTA d 10 DAY OFFSET 180", allow(10, 9, 86400*1000))

	// A new period or offset carries the count of the period in progress
	// into the current new one: 1 spent this month is 1 spent today.
	expectDecision(t, c, "RL.QUOTA api:ada 1000 DAY OFFSET 180 COST 0", allow(1000, 999, 86400*1000))
	expectDecision(t, c, "RL.QUOTA api:ada 1000 DAY OFFSET 180", allow(1000, 998, 86400*1000))
	info := infoFields(t, do(t, c, "RL.INFO", "api:ada"))
	if info["algorithm"] != "rl.quota" || info["period"] != "DAY" || info["offset_minutes"] != int64(180) || info["count"] != int64(2) {
		t.Errorf("RL.INFO api:ada = %v, want rl.quota DAY offset 180 count 2", info)
	}

	for _, tc := range []struct{ command, want string }{
		{"RL.QUOTA k 10 FORTNIGHT", "ERR no such period: use DAY, WEEK, MONTH or YEAR"},
		{"RL.QUOTA k 10 DAY OFFSET 841", "ERR offset must be an integer from -840 to 840"},
		{"RL.QUOTA k 0 DAY", "ERR limit must be an integer from 1 to 1000000000000000"},
		{"RL.QUOTA k 10 DAY OFFSET", "ERR syntax error"},
		{"RL.QUOTA k 10", "ERR wrong number of arguments for 'rl.quota' command"},
	} {
		if got := doErr(t, c, words(tc.command)...); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.command, got, tc.want)
		}
	}
}

// RL.SHAPE admits while its queue has room and says how long to wait first:
// delay_ms, the time the queue ahead takes to drain.
func TestShapeDelay(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	for _, protocol := range []int{2, 3} {
		c := srv.Client(t, protocol)
		setClock(t, c, t0)
		key := fmt.Sprintf("jobs:%d", protocol)
		cmd := "RL.SHAPE " + key + " 4 2 1000" // 2 leave the queue every second
		delay := []string{"delay_ms"}
		expectExt(t, c, cmd, allow(4, 3, 500), delay, 0)
		expectExt(t, c, cmd, allow(4, 2, 1000), delay, 500)
		expectExt(t, c, cmd+" COST 2", allow(4, 0, 2000), delay, 1000)
		expectExt(t, c, cmd, deny(4, 0, 500, 2000), delay, 0) // full: refused
		expectExt(t, c, cmd+" COST 0", allow(4, 0, 2000), delay, 2000)
		expectExt(t, c, cmd+" COST 5", deny(4, 0, -1, 2000), delay, 0)
		setClock(t, c, t0+500)
		expectExt(t, c, cmd, allow(4, 0, 2000), delay, 1500)
		if typ := do(t, c, "TYPE", key); typ != "rl.shape" {
			t.Errorf("TYPE %s = %v, want rl.shape", key, typ)
		}
	}
}

// A negative COST gives units back, never beyond a full budget; on an
// absent key it creates nothing.
func TestRefunds(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := srv.Client(t, 2)

	// RL.SLIDING takes back from the current window, then the previous.
	setClock(t, c, t0+30000)
	expectDecision(t, c, "RL.SLIDING s 100 60000 COST 70", allow(100, 30, 90000))
	setClock(t, c, t0+75000)
	expectDecision(t, c, "RL.SLIDING s 100 60000 COST 20", allow(100, 27, 105000))
	// 20 from the current window and 10 from the previous: 60 weigh 45/60.
	expectDecision(t, c, "RL.SLIDING s 100 60000 COST -30", allow(100, 55, 45000))
	info := infoFields(t, do(t, c, "RL.INFO", "s"))
	if info["previous_count"] != int64(60) || info["current_count"] != int64(0) {
		t.Errorf("RL.INFO s after the refund = %v, want previous 60 and current 0", info)
	}

	// RL.LOG removes the newest entries first.
	setClock(t, c, t0)
	expectDecision(t, c, "RL.LOG l 5 10000 COST 2", allow(5, 3, 10000))
	setClock(t, c, t0+1000)
	expectDecision(t, c, "RL.LOG l 5 10000 COST 3", allow(5, 0, 10000))
	expectDecision(t, c, "RL.LOG l 5 10000 COST -4", allow(5, 4, 9000)) // 1 left, spent at t0
	info = infoFields(t, do(t, c, "RL.INFO", "l"))
	if info["count"] != int64(1) || info["entries"] != int64(1) {
		t.Errorf("RL.INFO l after the refund = %v, want 1 unit in 1 entry", info)
	}

	// The buckets lower their level; the window counters their count.
	for _, tc := range []struct {
		spend, refund string
		after         decision
	}{
		{"RL.TOKEN t 10 1 1000 COST 7", "RL.TOKEN t 10 1 1000 COST -3", allow(10, 6, 4000)},
		{"RL.LEAKY k 5 1 1000 COST 5", "RL.LEAKY k 5 1 1000 COST -1", allow(5, 1, 4000)},
		{"RL.GCRA g 4 1 1000 COST 5", "RL.GCRA g 4 1 1000 COST -2", allow(5, 2, 3000)},
		{"RL.SHAPE h 4 1 1000 COST 4", "RL.SHAPE h 4 1 1000 COST -1", allow(4, 1, 3000)},
		{"RL.FIXED f 10 60000 COST 4", "RL.FIXED f 10 60000 COST -1", allow(10, 7, 59000)},
		{"RL.QUOTA q 100 DAY COST 50", "RL.QUOTA q 100 DAY COST -20", allow(100, 70, 6_419_000)},
	} {
		do(t, c, words(tc.spend)...)
		names := []string{}
		if strings.HasPrefix(tc.refund, "RL.SHAPE") {
			names = []string{"delay_ms"}
		}
		if d, _ := decideExt(t, c, tc.refund, names...); d != tc.after {
			t.Errorf("%s after %s = %v, want %v", tc.refund, tc.spend, d, tc.after)
		}
	}

	// Never beyond a full budget: the token bucket is full and gone.
	expectDecision(t, c, "RL.TOKEN t 10 1 1000 COST -100", allow(10, 10, 0))
	if n := doInt(t, c, "EXISTS", "t"); n != 0 {
		t.Errorf("EXISTS t = %d after a refund to a full bucket, want 0", n)
	}
	// A refund of an absent key creates nothing.
	expectDecision(t, c, "RL.SLIDING nobody 10 1000 COST -5", allow(10, 10, 0))
	if n := doInt(t, c, "EXISTS", "nobody"); n != 0 {
		t.Errorf("EXISTS nobody = %d after a refund, want 0", n)
	}
	// Through RL.ALL and RL.CHECK too.
	do(t, c, "RL.POLICY", "SET", "p", "FIXED", "10", "60000")
	expectExt(t, c, "RL.CHECK {u}:c p COST 6", allow(10, 4, 59000), []string{"shadow_denied"}, 0)
	expectAll(t, c, "RL.ALL POLICY {u}:c p FIXED {u}:f 10 60000 COST -2", allow(10, 6, 59000), allow(10, 6, 59000), allow(10, 10, 0))
	if got := doErr(t, c, words("CL.THROTTLE c 1 1 1 -1")...); got != "ERR quantity must be an integer from 0 to 1000000000000000" {
		t.Errorf("CL.THROTTLE with a negative quantity: %q", got)
	}
	if got := doErr(t, c, words("RL.SLIDING s 100 60000 COST -1000000000000001")...); got != "ERR cost must be an integer from -1000000000000000 to 1000000000000000" {
		t.Errorf("COST below -10^15: %q", got)
	}

	// A window counter refunded to nothing is a key never seen: it
	// disappears, as a bucket does, and its PTTL agrees with reset_after.
	expectDecision(t, c, "RL.FIXED f 10 60000 COST -10", allow(10, 10, 0))
	if n := doInt(t, c, "EXISTS", "f"); n != 0 {
		t.Fatalf("RL.FIXED f 10 60000 COST -10 refunds to a count of 0 and answers reset_after_ms 0, "+
			"but the key stays (EXISTS 1, PTTL %d) until its window ends; the same for RL.QUOTA",
			doInt(t, c, "PTTL", "f"))
	}
}

// A refund is always allowed, even on a key over a limit that was lowered:
// the units are given back, and the reply says so.
func TestRefundOverLoweredLimit(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 2)
	setClock(t, c, t0)
	expectDecision(t, c, "RL.TOKEN k 10 1 1000 COST 10", allow(10, 0, 10000))
	// Level 10 under a capacity of 5; the refund makes it 9.
	d := decide(t, c, "RL.TOKEN k 5 1 1000 COST -1")
	if d.ResetAfter != 9000 {
		t.Fatalf("RL.TOKEN k 5 1 1000 COST -1 = %v: the refund was not applied (reset_after_ms, want 9000)", d)
	}
	if want := allow(5, 0, 9000); d != want {
		t.Fatalf("a refund on a key over a lowered limit is applied but answered as a refusal: "+
			"RL.TOKEN k 10 1 1000 COST 10, then RL.TOKEN k 5 1 1000 COST -1 = %v, want %v "+
			"(the reply is a peek of the refunded state, which is still over the limit; RL.FIXED alike)", d, want)
	}
}

// PARTIAL grants as much of the cost as is available and says how much in
// the extra field granted; with nothing available it is a refusal whose
// retry_after says when one unit will be.
func TestPartial(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	for _, protocol := range []int{2, 3} {
		c := srv.Client(t, protocol)
		setClock(t, c, t0)
		key := fmt.Sprintf("t:%d", protocol)
		cmd := "RL.TOKEN " + key + " 10 1 1000"
		granted := []string{"granted"}
		expectDecision(t, c, cmd+" COST 7", allow(10, 3, 7000))
		expectExt(t, c, cmd+" COST 5 PARTIAL", allow(10, 0, 10000), granted, 3)
		expectExt(t, c, cmd+" PARTIAL COST 5", deny(10, 0, 1000, 10000), granted, 0)
		expectExt(t, c, cmd+" COST 11 PARTIAL", deny(10, 0, 1000, 10000), granted, 0)
		expectDecision(t, c, cmd+" COST 11", deny(10, 0, -1, 10000))
		expectExt(t, c, cmd+" COST 0 PARTIAL", allow(10, 0, 10000), granted, 0)
		setClock(t, c, t0+2500)
		expectExt(t, c, cmd+" COST 5 PARTIAL", allow(10, 0, 9500), granted, 2) // 2.5 tokens: 2 whole
	}
	c := srv.Client(t, 2)
	setClock(t, c, t0)
	// t0 is 22:13 UTC: the day ends in 1 h 47 min.
	expectExt(t, c, "RL.QUOTA q 10 DAY COST 8", allow(10, 2, 6_420_000), nil)
	expectExt(t, c, "RL.QUOTA q 10 DAY COST 8 PARTIAL", allow(10, 0, 6_420_000), []string{"granted"}, 2)
	do(t, c, "RL.POLICY", "SET", "p", "SLIDING", "5", "1000")
	expectExt(t, c, "RL.CHECK k p COST 8 PARTIAL", allow(5, 0, 2000), []string{"granted", "shadow_denied"}, 5, 0)
	for _, tc := range []struct{ command, want string }{
		{"RL.SLIDING k2 10 1000 PARTIAL PARTIAL", "ERR syntax error"},
		{"CL.THROTTLE k3 1 1 1 PARTIAL", "ERR value is not an integer or out of range"},
	} {
		if got := doErr(t, c, words(tc.command)...); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.command, got, tc.want)
		}
	}
}

// RL.SHAPE with PARTIAL reports both its extra fields: how long the granted
// part waits, and how much was granted.
func TestShapePartialReportsDelay(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 3)
	setClock(t, c, t0)
	expectExt(t, c, "RL.SHAPE jobs 4 2 1000 COST 3", allow(4, 1, 1500), []string{"delay_ms"}, 0)
	v := do(t, c, words("RL.SHAPE jobs 4 2 1000 COST 3 PARTIAL")...)
	if r, err := parseExt(v, "delay_ms", "granted"); err != nil {
		if _, err2 := parseExt(v, "granted"); err2 == nil {
			t.Fatalf("RL.SHAPE jobs 4 2 1000 COST 3 PARTIAL answers only the extra field granted (%v): "+
				"delay_ms is lost, so the granted unit does not know to wait 1500 ms "+
				"(engine/decide.go extraField returns one name)", v)
		}
		t.Fatalf("RL.SHAPE ... PARTIAL: %v", err)
	} else if r.decision != allow(4, 0, 2000) || !slices.Equal(r.extra, []int64{1500, 1}) {
		t.Errorf("RL.SHAPE ... PARTIAL = %v delay_ms,granted=%v, want %v [1500 1]", r.decision, r.extra, allow(4, 0, 2000))
	}
}

// Policies: named limits kept on the server. RL.CHECK applies one; a change
// takes effect at once; a shadow policy allows everything and reports what
// it would have denied, in its reply, RL.POLICY GET and INFO.
func TestPolicies(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "4")
	c := srv.Client(t, 2)
	setClock(t, c, t0)
	for _, p := range []string{
		"orders SLIDING 2 60000",
		"monthly QUOTA 1000000 MONTH OFFSET 180",
		"search TOKEN 10 1 1000 SHADOW",
	} {
		if got := do(t, c, words("RL.POLICY SET "+p)...); got != "OK" {
			t.Fatalf("RL.POLICY SET %s = %v", p, got)
		}
	}
	list := []any{"monthly", "QUOTA 1000000 MONTH OFFSET 180", "orders", "SLIDING 2 60000", "search", "TOKEN 10 1 1000 SHADOW"}
	if got := do(t, c, "RL.POLICY", "LIST"); fmt.Sprint(got) != fmt.Sprint(list) {
		t.Errorf("RL.POLICY LIST = %v, want %v", got, list)
	}
	c3 := srv.Client(t, 3)
	if got, ok := do(t, c3, "RL.POLICY", "LIST").(map[any]any); !ok || len(got) != 3 || got["orders"] != "SLIDING 2 60000" {
		t.Errorf("RL.POLICY LIST in RESP3 = %v, want a map of 3 definitions", got)
	}

	expectExt(t, c, "RL.CHECK user:ada orders", allow(2, 1, 120000), []string{"shadow_denied"}, 0)
	expectExt(t, c, "RL.CHECK user:ada orders", allow(2, 0, 120000), []string{"shadow_denied"}, 0)
	expectExt(t, c, "RL.CHECK user:ada orders", deny(2, 0, 90000, 120000), []string{"shadow_denied"}, 0)
	if typ := do(t, c, "TYPE", "user:ada"); typ != "rl.sliding" {
		t.Errorf("TYPE of a key checked against a SLIDING policy = %v", typ)
	}
	// The policy and the command it names are the same limit.
	expectDecision(t, c, "RL.SLIDING user:ada 2 60000 COST 0", allow(2, 0, 120000))

	// Shadow: always allowed; shadow_denied says what enforcing would do,
	// and what it would deny is not consumed.
	shadow := []string{"shadow_denied"}
	expectExt(t, c, "RL.CHECK user:bob search COST 11", allow(10, 10, 0), shadow, 1)
	expectExt(t, c, "RL.CHECK user:bob search COST 8", allow(10, 2, 8000), shadow, 0)
	expectExt(t, c, "RL.CHECK user:bob search COST 8", allow(10, 2, 8000), shadow, 1)
	expectExt(t, c3, "RL.CHECK user:bob search COST 2 PARTIAL", allow(10, 0, 10000), []string{"granted", "shadow_denied"}, 2, 0)

	get := func(name string) map[string]any { return infoFields(t, do(t, c, "RL.POLICY", "GET", name)) }
	if got, want := fmt.Sprint(get("orders")), fmt.Sprint(map[string]any{
		"definition": "SLIDING 2 60000", "shadow": int64(0), "checks": int64(3), "denied": int64(1), "shadow_denied": int64(0)}); got != want {
		t.Errorf("RL.POLICY GET orders = %s, want %s", got, want)
	}
	if got, want := fmt.Sprint(get("search")), fmt.Sprint(map[string]any{
		"definition": "TOKEN 10 1 1000 SHADOW", "shadow": int64(1), "checks": int64(4), "denied": int64(0), "shadow_denied": int64(2)}); got != want {
		t.Errorf("RL.POLICY GET search = %s, want %s", got, want)
	}
	if v, err := c.Do(ctx(t), "RL.POLICY", "GET", "nosuch").Result(); err != redis.Nil {
		t.Errorf("RL.POLICY GET nosuch = %v, %v; want nil", v, err)
	}
	if got := infoInt(t, c, "ratelimit", "rl_shadow_denied"); got != 2 {
		t.Errorf("rl_shadow_denied = %d, want 2", got)
	}
	if got := infoInt(t, c, "ratelimit", "rl_policies"); got != 3 {
		t.Errorf("rl_policies = %d, want 3", got)
	}
	wantInfo := []string{
		"# Policies",
		"policy_monthly:shadow=0,checks=0,denied=0,shadow_denied=0",
		"policy_orders:shadow=0,checks=3,denied=1,shadow_denied=0",
		"policy_search:shadow=1,checks=4,denied=0,shadow_denied=2",
	}
	if got := infoText(t, c, "policies"); !slices.Equal(got, wantInfo) {
		t.Errorf("INFO policies =\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(wantInfo, "\n"))
	}
	if !slices.Contains(infoText(t, c, "everything"), "# Policies") {
		t.Errorf("INFO everything has no # Policies section")
	}

	// A new limit takes effect at once (the counters restart); a new
	// algorithm starts the keys afresh.
	do(t, c, words("RL.POLICY SET orders SLIDING 5 60000")...)
	expectExt(t, c, "RL.CHECK user:ada orders", allow(5, 2, 120000), []string{"shadow_denied"}, 0)
	if got := get("orders"); got["checks"] != int64(1) {
		t.Errorf("RL.POLICY GET orders after a change = %v, want the counters restarted", got)
	}
	do(t, c, words("RL.POLICY SET orders FIXED 5 60000")...)
	expectExt(t, c, "RL.CHECK user:ada orders", allow(5, 4, 60000), []string{"shadow_denied"}, 0)
	if typ := do(t, c, "TYPE", "user:ada"); typ != "rl.fixed" {
		t.Errorf("TYPE user:ada after the policy became FIXED = %v, want rl.fixed", typ)
	}

	// FLUSHALL removes keys, not policies.
	if got := do(t, c, "FLUSHALL"); got != "OK" {
		t.Fatalf("FLUSHALL = %v", got)
	}
	if got := do(t, c, "RL.POLICY", "LIST").([]any); len(got) != 6 {
		t.Errorf("RL.POLICY LIST after FLUSHALL = %v, want the 3 policies", got)
	}
	expectExt(t, c, "RL.CHECK user:ada orders", allow(5, 4, 60000), []string{"shadow_denied"}, 0)

	if n := doInt(t, c, "RL.POLICY", "DEL", "orders"); n != 1 {
		t.Errorf("RL.POLICY DEL orders = %d, want 1", n)
	}
	if n := doInt(t, c, "RL.POLICY", "DEL", "orders"); n != 0 {
		t.Errorf("RL.POLICY DEL orders again = %d, want 0", n)
	}
	do(t, c, "SET", "greeting", "hello")
	for _, tc := range []struct{ command, want string }{
		{"RL.CHECK user:ada orders", "ERR no such policy 'orders'"},
		{"RL.CHECK greeting search", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"RL.POLICY SET bad ZIGZAG 1 2", "ERR unknown algorithm: use SLIDING, FIXED, LOG, TOKEN, LEAKY, GCRA, SHAPE or QUOTA"},
		{"RL.POLICY SET bad SLIDING 1", "ERR syntax error"},
		{"RL.POLICY SET bad SLIDING 0 1000", "ERR limit must be an integer from 1 to 1000000000000000"},
		{"RL.POLICY SET bad", "ERR wrong number of arguments for 'rl.policy|set' command"},
		{"RL.POLICY FOO", "ERR unknown subcommand 'FOO'. Try RL.POLICY HELP."},
	} {
		if got := doErr(t, c, words(tc.command)...); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.command, got, tc.want)
		}
	}
	if help, ok := do(t, c, "RL.POLICY", "HELP").([]any); !ok || len(help) != 11 {
		t.Errorf("RL.POLICY HELP = %v, want a header and 5 subcommands with their summaries", help)
	}
}

// A policy name cannot break INFO's format: INFO policies has one line per
// policy whatever its name holds (or SET refuses the name).
func TestPolicyNameInInfo(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 2)
	name := "x:y\r\nrl_fake:1"
	if err := c.Do(ctx(t), "RL.POLICY", "SET", name, "SLIDING", "1", "1000").Err(); err != nil {
		return // refusing such a name is a fine answer
	}
	if lines := infoText(t, c, "policies"); len(lines) != 2 {
		t.Fatalf("RL.POLICY SET %q is accepted and INFO policies writes its name raw: %q; "+
			"a CR LF in a name adds lines to INFO (restrict names, or escape them)", name, lines)
	}
}

// Policies are stored with the data: a durable server has them after a
// restart, and the keys checked against them keep their state.
func TestPoliciesSurviveRestart(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	args := []string{"--port", "0", "--bind", "127.0.0.1", "--shards", "2"}
	first := launch(t, dir, args...)
	c := first.Client(t, 3)
	// One token an hour on the real clock: nothing refills while the
	// test runs.
	do(t, c, words("RL.POLICY SET uploads TOKEN 10 1 3600000")...)
	do(t, c, words("RL.POLICY SET trial QUOTA 100 MONTH OFFSET -300 SHADOW")...)
	expectExt(t, c, "RL.CHECK user:ada uploads COST 3", allow(10, 7, 3*3600000), []string{"shadow_denied"}, 0)
	if code := first.Stop(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, first.stderr)
	}

	second := launch(t, dir, args...)
	c = second.Client(t, 2)
	want := []any{"trial", "QUOTA 100 MONTH OFFSET -300 SHADOW", "uploads", "TOKEN 10 1 3600000"}
	if got := do(t, c, "RL.POLICY", "LIST"); fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("RL.POLICY LIST after a restart = %v, want %v", got, want)
	}
	if d, _ := decideExt(t, c, "RL.CHECK user:ada uploads COST 0", "shadow_denied"); !d.Allowed || d.Remaining != 7 {
		t.Errorf("RL.CHECK user:ada uploads COST 0 after a restart = %v, want the 7 tokens left", d)
	}
	if got := infoInt(t, c, "ratelimit", "rl_policies"); got != 2 {
		t.Errorf("rl_policies after a restart = %d, want 2", got)
	}
	if code := second.Stop(t); code != 0 {
		t.Fatalf("exit %d; stderr:\n%s", code, second.stderr)
	}
}

// envoyproxy/ratelimit's fixed window, as its Redis backend sends it
// (src/redis/fixed_cache_impl.go): for each descriptor, INCRBY key hits and
// EXPIRE key unit_seconds in one pipeline, the key named after the window's
// start; GETs first when a request has several descriptors.
func TestEnvoyRatelimitPattern(t *testing.T) {
	t.Parallel()
	c := startServer(t).Client(t, 2)
	setClock(t, c, t0)
	const limit, unit = 3, 60 // 3 per minute
	key := func(now int64, name string) string {
		return fmt.Sprintf("ratelimit_domain_%s_%d", name, now/1000/unit*unit)
	}
	hit := func(now int64, hits int64, names ...string) []int64 {
		t.Helper()
		get := c.Pipeline()
		for _, n := range names {
			get.Get(ctx(t), key(now, n))
		}
		if _, err := get.Exec(ctx(t)); err != nil && err != redis.Nil {
			t.Fatalf("GET pipeline: %v", err)
		}
		p := c.Pipeline()
		var incrs []*redis.IntCmd
		var expires []*redis.BoolCmd
		for _, n := range names {
			incrs = append(incrs, p.IncrBy(ctx(t), key(now, n), hits))
			expires = append(expires, p.Expire(ctx(t), key(now, n), unit*time.Second))
		}
		if _, err := p.Exec(ctx(t)); err != nil {
			t.Fatalf("INCRBY/EXPIRE pipeline: %v", err)
		}
		var counts []int64
		for i := range names {
			counts = append(counts, incrs[i].Val())
			if !expires[i].Val() {
				t.Errorf("EXPIRE %s = false, want true", key(now, names[i]))
			}
		}
		return counts
	}
	for i := int64(1); i <= 5; i++ {
		if got := hit(t0, 1, "a", "b"); !slices.Equal(got, []int64{i, i}) {
			t.Fatalf("hit %d: counts %v, want [%d %d]", i, got, i, i)
		}
	}
	over := hit(t0, 0, "a")[0] > limit // hits_addend 0: read the count
	if !over {
		t.Errorf("5 hits of a limit of 3 are not over the limit")
	}
	if v, err := c.Get(ctx(t), key(t0, "a")).Result(); err != nil || v != "5" {
		t.Errorf("GET = %q, %v; want 5", v, err)
	}
	if d, err := c.PTTL(ctx(t), key(t0, "a")).Result(); err != nil || d != unit*time.Second {
		t.Errorf("PTTL = %v, %v; want %ds", d, err, unit)
	}
	if typ := do(t, c, "TYPE", key(t0, "a")); typ != "string" {
		t.Errorf("TYPE = %v, want string", typ)
	}
	// The next minute has keys of its own; the old ones expire.
	setClock(t, c, t0+unit*1000)
	if got := hit(t0+unit*1000, 1, "a"); got[0] != 1 {
		t.Errorf("first hit of the next window: %d, want 1", got[0])
	}
	if n := doInt(t, c, "EXISTS", key(t0, "a"), key(t0, "b")); n != 0 {
		t.Errorf("EXISTS of the last window's keys = %d once they expired, want 0", n)
	}

	// SET NX PX: a lock, or a once-per-period marker.
	setClock(t, c, t0)
	if ok, err := c.SetNX(ctx(t), "lock:job1", "worker-7", 1500*time.Millisecond).Result(); err != nil || !ok {
		t.Errorf("SetNX (SET lock:job1 worker-7 PX 1500 NX) = %v, %v; want true", ok, err)
	}
	if v, err := c.Do(ctx(t), "SET", "lock:job1", "worker-8", "NX", "PX", 30000).Result(); err != redis.Nil {
		t.Errorf("SET NX PX of a key held = %v, %v; want nil", v, err)
	}
	if v := do(t, c, "GET", "lock:job1"); v != "worker-7" {
		t.Errorf("GET lock:job1 = %v, want worker-7", v)
	}
	if ms := doInt(t, c, "PTTL", "lock:job1"); ms != 1500 {
		t.Errorf("PTTL lock:job1 = %d, want 1500", ms)
	}
	setClock(t, c, t0+1500)
	checkAbsent(t, c, "lock:job1")
	if got := do(t, c, "SET", "lock:job1", "worker-8", "NX", "PX", 30000); got != "OK" {
		t.Errorf("SET NX PX once the lock expired = %v, want OK", got)
	}
}

// Redis's string commands, reply for reply, on the wire (RESP2), with the
// clock fixed; and how they meet limiter keys.
func TestStringCommands(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	c := dialRaw(t, srv.Addr)
	steps := []struct{ command, want string }{
		{"DEBUG CLOCK SET " + itoa(t0), ":" + itoa(t0)},
		{"SET greeting hello", "+OK"},
		{"GET greeting", "$hello"},
		{"TYPE greeting", "+string"},
		{"PTTL greeting", ":-1"},
		{"TTL greeting", ":-1"},
		{"GET nosuch", "_"},
		{"INCR greeting", "-ERR value is not an integer or out of range"},
		{"SET n 007", "+OK"},
		{"INCR n", "-ERR value is not an integer or out of range"},
		{"INCRBY counter 5", ":5"},
		{"DECRBY counter 7", ":-2"},
		{"DECR counter", ":-3"},
		{"INCR counter", ":-2"},
		{"GET counter", "$-2"},
		{"INCRBY counter 1.5", "-ERR value is not an integer or out of range"},
		{"DECRBY counter -9223372036854775808", "-ERR decrement would overflow"},
		{"SET big 9223372036854775807", "+OK"},
		{"INCR big", "-ERR increment or decrement would overflow"},
		{"SETNX counter 1", ":0"},
		{"SETNX fresh 1", ":1"},
		{"GETSET counter 10", "$-2"},
		{"GETSET nosuch2 1", "_"},
		{"SETEX session 60 abc", "+OK"},
		{"PTTL session", ":60000"},
		{"PSETEX session2 1500 abc", "+OK"},
		{"PTTL session2", ":1500"},
		{"SETEX session 0 abc", "-ERR invalid expire time in 'setex' command"},
		{"PSETEX session -1 abc", "-ERR invalid expire time in 'psetex' command"},
		{"SET k v EX 0", "-ERR invalid expire time in 'set' command"},
		{"SET k v EX 10 PX 10", "-ERR syntax error"},
		{"SET k v NX XX", "-ERR syntax error"},
		{"SET k v PX abc", "-ERR value is not an integer or out of range"},
		// INCR keeps the expiry; SET without KEEPTTL drops it.
		{"SET x 1 EX 10", "+OK"},
		{"INCR x", ":2"},
		{"PTTL x", ":10000"},
		{"SET x 3 KEEPTTL GET", "$2"},
		{"PTTL x", ":10000"},
		{"SET x 4", "+OK"},
		{"PTTL x", ":-1"},
		{"SET x 5 XX PXAT " + itoa(t0+2500), "+OK"},
		{"PTTL x", ":2500"},
		{"SET y 1 XX", "_"},
		// EXPIRE and its options, as Redis: no expiry counts as infinite.
		{"EXPIRE counter 60", ":1"},
		{"EXPIRE counter 30 GT", ":0"},
		{"EXPIRE counter 90 GT", ":1"},
		{"EXPIRE counter 120 LT", ":0"},
		{"EXPIRE counter 10 LT", ":1"},
		{"EXPIRE counter 10 NX", ":0"},
		{"EXPIRE counter 20 XX", ":1"},
		{"PTTL counter", ":20000"},
		{"PEXPIRE counter 1500", ":1"},
		{"TTL counter", ":2"},
		{"EXPIREAT counter " + itoa(t0/1000+100), ":1"},
		{"PTTL counter", ":100000"},
		{"PEXPIREAT counter " + itoa(t0+10000), ":1"},
		{"PTTL counter", ":10000"},
		{"PERSIST counter", ":1"},
		{"PERSIST counter", ":0"},
		{"EXPIRE counter 10 GT", ":0"},
		{"EXPIRE counter 10 XX", ":0"},
		{"EXPIRE nosuch 10", ":0"},
		{"EXPIRE counter 10 NX XX", "-ERR NX and XX, GT or LT options at the same time are not compatible"},
		{"EXPIRE counter 10 GT LT", "-ERR GT and LT options at the same time are not compatible"},
		{"EXPIRE counter 10 FOO", "-ERR Unsupported option FOO"},
		{"EXPIRE counter 0", ":1"},
		{"EXISTS counter", ":0"},
		{"SET c2 1", "+OK"},
		{"PEXPIREAT c2 1000", ":1"},
		{"EXISTS c2", ":0"},
		// A limiter key: GET and INCR are WRONGTYPE, EXPIRE cannot change
		// it, SET replaces it.
		{"RL.SLIDING user:ada 100 60000", "*[:1 :100 :99 :0 :120000]"},
		{"GET user:ada", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"INCR user:ada", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"SET user:ada x GET", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"EXPIRE user:ada 10", ":0"},
		{"PERSIST user:ada", ":0"},
		{"PTTL user:ada", ":120000"},
		{"SET user:ada 7", "+OK"},
		{"TYPE user:ada", "+string"},
		{"RL.SLIDING user:ada 100 60000", "-WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"DEL user:ada", ":1"},
	}
	for _, st := range steps {
		c.send(command(strings.Fields(st.command)...))
		if got := c.reply(); got != st.want {
			t.Errorf("%s = %s, want %s", st.command, got, st.want)
		}
	}
	// Time moves on: x (PXAT t0+2500) and session2 (1500 ms) expire.
	c.send(command("DEBUG", "CLOCK", "SET", itoa(t0+2500)))
	c.reply()
	for _, k := range []string{"x", "session2"} {
		c.send(command("EXISTS", k))
		if got := c.reply(); got != ":0" {
			t.Errorf("EXISTS %s once expired = %s, want :0", k, got)
		}
	}
	// A value up to 1 MiB, with --max-bulk-len raised to carry it.
	big := startServer(t, "--max-bulk-len", strconv.Itoa(2<<20))
	bc := big.Client(t, 2)
	value := strings.Repeat("v", 1<<20)
	if got := do(t, bc, "SET", "big", value); got != "OK" {
		t.Errorf("SET of 1 MiB = %v", got)
	}
	if got := doErr(t, bc, "SET", "big", value+"v"); got != "ERR string exceeds maximum allowed size (1048576 bytes)" {
		t.Errorf("SET of 1 MiB + 1: %q", got)
	}

	// INFO keyspace counts the keys with an expiry as Redis does.
	cc := srv.Client(t, 2)
	do(t, cc, "FLUSHALL")
	do(t, cc, "SET", "persistent", "1")
	do(t, cc, "SET", "volatile", "1", "EX", "100")
	lines := infoText(t, cc, "keyspace")
	if want := "db0:keys=2,expires=1,avg_ttl=0"; !slices.Contains(lines, want) {
		t.Fatalf("INFO keyspace with one string key without expiry and one with: %v, want %s "+
			"(expires counts every key)", lines, want)
	}
}
