package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"
)

// Leases, calendar quotas, shaping, refunds and partial grants.

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
	// Allowed, as every refund is, with the debt still left: 9 held of 5.
	if want := allow(5, -4, 9000); d != want {
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
