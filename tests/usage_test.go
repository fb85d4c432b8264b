package tests

import (
	"fmt"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/internal/poll"
)

// Charging by usage, end to end with go-redis: FORCE, RL.RESERVE and
// RL.SETTLE in RESP2 and RESP3, through a failover and a restart, and
// settled at once by many clients.

// reservation is RL.RESERVE's reply: the decision and the id ("" when
// refused).
type reservation struct {
	decision
	id string
}

// reserve sends RL.RESERVE and reads its reply in either protocol.
func reserve(t testing.TB, c doer, args ...any) reservation {
	t.Helper()
	v := do(t, c, append([]any{"RL.RESERVE"}, args...)...)
	var idv any
	switch r := v.(type) {
	case []any:
		if len(r) != 6 {
			t.Fatalf("RL.RESERVE %v: %v", args, r)
		}
		v, idv = r[:5], r[5]
	case map[any]any:
		idv = r["reservation_id"]
		delete(r, "reservation_id")
	}
	d, err := parseDecision(v)
	if err != nil {
		t.Fatalf("RL.RESERVE %v: %v", args, err)
	}
	id, _ := idv.(string)
	if (idv == nil) == d.Allowed {
		t.Fatalf("RL.RESERVE %v: allowed %v with id %v", args, d.Allowed, idv)
	}
	return reservation{d, id}
}

// settle sends RL.SETTLE and reads its decision.
func settle(t testing.TB, c doer, id string, actual int64) decision {
	t.Helper()
	d, err := parseDecision(do(t, c, "RL.SETTLE", id, actual))
	if err != nil {
		t.Fatalf("RL.SETTLE %s %d: %v", id, actual, err)
	}
	return d
}

// expectedID is the id of reservation seq of key.
func expectedID(key string, seq int64) string {
	return "{" + cluster.SlotTag(cluster.Slot([]byte(key))) + "}" + strconv.FormatInt(seq, 10) + ":" + key
}

// The example, through go-redis in both protocols: 1,000 tokens a
// minute, a reply of 1,200, charged after it with FORCE, or reserved at 100
// and settled at 1,200; a negative remaining, and the next request refused
// for as long as the debt implies.
func TestChargeByUsage(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := srv.Client(t, proto)
			setClock(t, c, t0)
			force, res := fmt.Sprintf("force:%d", proto), fmt.Sprintf("reserved:%d", proto)
			debt := decision{Limit: 1000, Remaining: -200, RetryAfter: 12_000, ResetAfter: 72_000}
			next := decision{Limit: 1000, Remaining: -200, RetryAfter: 12_060, ResetAfter: 72_000}
			expectDecision(t, c, fmt.Sprintf("RL.TOKEN %s 1000 1000 60000 COST 1200 FORCE", force), debt)
			expectDecision(t, c, "RL.TOKEN "+force+" 1000 1000 60000", next)

			r := reserve(t, c, "TOKEN", res, 1000, 1000, 60_000, "COST", 100, "TTL", 300_000)
			// The id: the key's slot's tag, the shard's seq, the key (the
			// shard may have handed out seqs of this millisecond already).
			seq, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimPrefix(r.id, "{"+cluster.SlotTag(cluster.Slot([]byte(res)))+"}"), ":"+res), 10, 64)
			if want := (decision{Allowed: true, Limit: 1000, Remaining: 900, ResetAfter: 6000}); r.decision != want || r.id != expectedID(res, seq) || seq>>20 != t0 {
				t.Fatalf("RL.RESERVE: %v %q", r.decision, r.id)
			}
			info := infoFields(t, do(t, c, "RL.INFO", res))
			if info["reservations"] != int64(1) || info["reserved"] != int64(100) {
				t.Fatalf("RL.INFO: %v", info)
			}
			for range 3 { // settled once; the repeats answer the first outcome
				if d := settle(t, c, r.id, 1200); d != debt {
					t.Fatalf("RL.SETTLE 1200: %v, want %v", d, debt)
				}
			}
			expectDecision(t, c, "RL.TOKEN "+res+" 1000 1000 60000", next)
			if refused := reserve(t, c, "TOKEN", res, 1000, 1000, 60_000, "COST", 1); refused.id != "" {
				t.Fatalf("a refused RL.RESERVE: %+v", refused)
			}
			for _, bad := range [][]any{{"RL.SETTLE", res, 1}, {"RL.SETTLE", expectedID(res, seq+100), 1},
				{"RL.RESERVE", "TOKEN", res, 10, 1, 1000}, {"RL.TOKEN", res, 10, 1, 1000, "FORCE", "PARTIAL"}} {
				if e := doErr(t, c, bad...); !strings.HasPrefix(e, "ERR ") {
					t.Fatalf("%v: %s", bad, e)
				}
			}
		})
	}
}

// A reservation made on one leader is settled on the next, exactly once:
// kill -9 the leader of the key's shard between RL.RESERVE and RL.SETTLE.
// The limit's window never rolls while the test runs, so every figure is
// exact on the real clock.
func TestReservationSurvivesALeaderKill(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 1)
	victim := tc.waitLeaders()[0]
	survivor := tc.client((victim + 1) % 3)
	const window = 1_000_000_000_000
	r := reserve(t, tc.client(victim), "FIXED", "llm:ada", 1000, window, "COST", 100, "TTL", 600_000)
	if !r.Allowed || r.Remaining != 900 {
		t.Fatalf("RL.RESERVE: %+v", r)
	}
	tc.kill(victim)
	var d decision
	poll.Until(t, 20*time.Second, "RL.SETTLE on the new leader", func() (bool, error) {
		v, err := survivor.Do(ctx(t), "RL.SETTLE", r.id, 1200).Result()
		if err != nil {
			if isReply(err) && !strings.HasPrefix(err.Error(), "TRYAGAIN") {
				t.Fatalf("RL.SETTLE: %v", err)
			}
			return false, err
		}
		d, err = parseDecision(v)
		return err == nil, err
	})
	if d.Allowed || d.Remaining != -200 {
		t.Fatalf("RL.SETTLE 1200 after the failover: %v, want -200: the new leader lost the reservation or charged it twice", d)
	}
	tc.start(victim)
	tc.converge()
	for i := range 3 { // every node, the restarted one too, answers the first outcome
		if again := settle(t, tc.client(i), r.id, 5); again != d {
			t.Fatalf("node %d: RL.SETTLE again: %v, want %v", i+1, again, d)
		}
	}
	peek, err := parseDecision(do(t, survivor, "RL.FIXED", "llm:ada", 1000, window, "COST", 0))
	if err != nil || peek.Remaining != -200 {
		t.Fatalf("the key after the failover: %v %v", peek, err)
	}
}

// Many clients settle one reservation at once, through every node: one
// settlement counts, and every client gets its decision. Then a restart
// of the whole cluster keeps what was settled and what is pending.
func TestConcurrentSettlesOfOneReservation(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 2)
	tc.waitLeaders()
	const window = 1_000_000_000_000
	c := tc.client(0)
	r := reserve(t, c, "TOKEN", "{llm}bob", 10_000, 1, window/10_000, "COST", 100, "TTL", 600_000)
	pending := reserve(t, c, "FIXED", "{llm}carol", 1000, window, "COST", 300, "TTL", 600_000)
	var wg sync.WaitGroup
	got := make([]decision, 30)
	errs := make([]error, len(got))
	for i := range got {
		wg.Add(1)
		go func() {
			defer wg.Done()
			v, err := tc.client(i%3).Do(ctx(t), "RL.SETTLE", r.id, 50+int64(i)).Result()
			if err == nil {
				got[i], err = parseDecision(v)
			}
			errs[i] = err
		}()
	}
	wg.Wait()
	for i := range got {
		if errs[i] != nil || got[i] != got[0] {
			t.Fatalf("settle %d: %v %v; settle 0: %v", i, got[i], errs[i], got[0])
		}
	}
	// One of them settled it at 50 + i: 10,000 - (50 + i) remain.
	if rem := got[0].Remaining; rem > 10_000-50 || rem < 10_000-50-int64(len(got)-1) {
		t.Fatalf("after the settles: %v", got[0])
	}
	for i := range 3 {
		tc.stop(i)
	}
	for i := range 3 {
		tc.start(i)
	}
	tc.waitLeaders()
	if again := settle(t, tc.client(1), r.id, 1); again != got[0] {
		t.Fatalf("after a restart: %v, want %v", again, got[0])
	}
	if d := settle(t, tc.client(2), pending.id, 1000); d.Remaining != 0 || !d.Allowed {
		t.Fatalf("the pending reservation after a restart: %v", d)
	}
	var rc redis.UniversalClient = tc.clusterClient() // routes RL.SETTLE by the id's tag
	if d := settle(t, rc, pending.id, 0); d.Remaining != 0 {
		t.Fatalf("through a cluster client: %v", d)
	}
}
