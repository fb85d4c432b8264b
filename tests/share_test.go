package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
)

// Budget leases: RL.SHARE and RL.UNSHARE through a real client, in RESP2
// and RESP3, and the shard's guarantee through a failover.

// grant is RL.SHARE's reply.
type grant struct{ Rate, Burst, TTL, Seq, Fair, Holders int64 }

// grantFields are RL.SHARE's RESP3 map keys, in reply order.
var grantFields = []string{"rate", "burst", "ttl_ms", "seq", "fair_share", "holders"}

// parseGrant reads RL.SHARE's reply: six integers in RESP2, a map of their
// names in RESP3.
func parseGrant(v any) (grant, error) {
	n, err := namedInts(v, grantFields)
	if err != nil {
		return grant{}, err
	}
	return grant{n[0], n[1], n[2], n[3], n[4], n[5]}, nil
}

// share sends an RL.SHARE and parses its reply.
func share(t testing.TB, c doer, args ...any) grant {
	t.Helper()
	g, err := parseGrant(do(t, c, append([]any{"RL.SHARE"}, args...)...))
	if err != nil {
		t.Fatalf("RL.SHARE %v: %v", args, err)
	}
	return g
}

// Two holders share 1000 units a second: the grants, their seqs, the ACK
// that frees a larger grant, RL.INFO, RL.UNSHARE, the errors and the key's
// life, in both protocols.
func TestShare(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	for _, proto := range []int{2, 3} {
		t.Run(fmt.Sprintf("RESP%d", proto), func(t *testing.T) {
			c := srv.Client(t, proto)
			setClock(t, c, t0)
			key := fmt.Sprintf("api:%d", proto)
			seq := int64(t0) << 20
			expectGrant := func(want grant, args ...any) grant {
				t.Helper()
				got := share(t, c, append([]any{key, 1000, 1000}, args...)...)
				if got != want {
					t.Fatalf("RL.SHARE %s 1000 1000 %v = %+v, want %+v", key, args, got, want)
				}
				return got
			}
			a := expectGrant(grant{1000, 100, 10000, seq, 1000, 1}, "envoy-1")
			b := expectGrant(grant{0, 0, 10000, seq + 1, 300, 2}, "envoy-2", "DEMAND", 300)
			a = expectGrant(grant{700, 70, 10000, seq + 2, 700, 2}, "envoy-1", "ACK", a.Seq) // its 1000 still committed
			expectGrant(grant{0, 0, 10000, seq + 3, 300, 2}, "envoy-2", "DEMAND", 300, "ACK", b.Seq)
			expectGrant(grant{700, 70, 10000, seq + 4, 700, 2}, "envoy-1", "ACK", a.Seq) // now only 700
			expectGrant(grant{300, 300, 5000, seq + 5, 300, 2}, "envoy-2", "TTL", 5000, "BURST", 1000, "ACK", seq+3, "DEMAND", 300)
			checkShareInfo(t, c, key, 2, 1000, 10000)
			if typ := do(t, c, "TYPE", key); typ != "rl.share" {
				t.Errorf("TYPE %s = %v", key, typ)
			}
			if ms := doInt(t, c, "PTTL", key); ms != 10000 {
				t.Errorf("PTTL %s = %d, want 10000", key, ms)
			}
			if n := doInt(t, c, "RL.UNSHARE", key, "envoy-2"); n != 1 {
				t.Errorf("RL.UNSHARE of a holder = %d, want 1", n)
			}
			if n := doInt(t, c, "RL.UNSHARE", key, "envoy-2"); n != 0 {
				t.Errorf("RL.UNSHARE again = %d, want 0", n)
			}
			checkShareInfo(t, c, key, 1, 700, 10000)
			checkShareErrors(t, c, key)
			// Nobody renews: the grants expire, and the key with them.
			setClock(t, c, t0+10000)
			checkAbsent(t, c, key)
			expectGrant(grant{1000, 100, 10000, (t0 + 10000) << 20, 1000, 1}, "envoy-3")
			if n := doInt(t, c, "RL.RESET", key); n != 1 {
				t.Errorf("RL.RESET = %d", n)
			}
			checkAbsent(t, c, key)
		})
	}
}

// checkShareInfo checks RL.INFO of a share key.
func checkShareInfo(t *testing.T, c doer, key string, holders, committed, ttl int64) {
	t.Helper()
	got := infoFields(t, do(t, c, "RL.INFO", key))
	want := map[string]any{"algorithm": "rl.share", "limit": int64(1000), "window_ms": int64(1000),
		"holders": holders, "committed": committed, "free": 1000 - committed, "ttl_ms": ttl}
	if len(got) != len(want) {
		t.Errorf("RL.INFO %s = %v, want %v", key, got, want)
	}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("RL.INFO %s: %s = %v, want %v", key, k, got[k], v)
		}
	}
}

// checkShareErrors checks RL.SHARE's and RL.UNSHARE's errors, key a share
// key.
func checkShareErrors(t *testing.T, c doer, key string) {
	t.Helper()
	decide(t, c, "RL.SLIDING user:ada 10 1000")
	long := strings.Repeat("h", 257)
	for _, tc := range []struct{ command, want string }{
		{"RL.SHARE k 0 1000 h", "ERR limit must be an integer from 1 to 1000000000000000"},
		{"RL.SHARE k 10 0 h", "ERR window_ms must be an integer from 1 to 1000000000000"},
		{"RL.SHARE k 10 x h", "ERR value is not an integer or out of range"},
		{"RL.SHARE k 10 1000 " + long, "ERR holder must be 1 to 256 bytes long"},
		{"RL.SHARE k 10 1000 h DEMAND -1", "ERR demand must be an integer from 0 to 1000000000000000"},
		{"RL.SHARE k 10 1000 h TTL 0", "ERR ttl must be an integer from 1 to 86400000"},
		{"RL.SHARE k 10 1000 h BURST 1001", "ERR burst must be an integer from 0 to 1000 (window_ms)"},
		{"RL.SHARE k 10 1000 h ACK 0", "ERR ack must be an integer from 1 to 9223372036854775807"},
		{"RL.SHARE k 10 1000 h TTL 5 TTL 5", "ERR syntax error"},
		{"RL.SHARE k 10 1000 h COST 1", "ERR syntax error"},
		{"RL.SHARE k 10 1000 h DEMAND", "ERR syntax error"},
		{"RL.SHARE k 10 1000", "ERR wrong number of arguments for 'rl.share' command"},
		{"RL.UNSHARE k", "ERR wrong number of arguments for 'rl.unshare' command"},
		{"RL.UNSHARE k " + long, "ERR holder must be 1 to 256 bytes long"},
		{"RL.SHARE user:ada 10 1000 h", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"RL.UNSHARE user:ada h", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"RL.SLIDING " + key + " 10 1000", "WRONGTYPE Operation against a key holding the wrong kind of value"},
		{"GET " + key, "WRONGTYPE Operation against a key holding the wrong kind of value"},
	} {
		if got := doErr(t, c, words(tc.command)...); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.command, got, tc.want)
		}
	}
	if n := doInt(t, c, "EXISTS", "k"); n != 0 {
		t.Errorf("a refused RL.SHARE created its key")
	}
}

// shareHolder is a holder in TestShareGrantsSurviveFailover: the grants it
// knows of and has not acknowledged away.
type shareHolder struct {
	id     string
	grants []grant // by seq; the last is the one it uses
}

// committed is what the holder may be using: the largest rate among the
// grants it knows and has not acknowledged away.
func (h *shareHolder) committed() int64 {
	var c int64
	for _, g := range h.grants {
		c = max(c, g.Rate)
	}
	return c
}

// Kill -9 the leader of a key's shard while holders share its limit: the
// new leader knows every grant in force, so a holder that joins afterwards
// gets nothing while the others hold the limit, and what the holders know
// themselves to hold never adds up to more than it, before, during or after
// the failover.
func TestShareGrantsSurviveFailover(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 1)
	victim := tc.waitLeaders()[0]
	survivor := tc.client((victim + 1) % 3)
	clients := []*redis.Client{tc.client(0), tc.client(1), tc.client(2)}
	const limit = 1000
	holders := make([]*shareHolder, 5)
	for i := range holders {
		holders[i] = &shareHolder{id: fmt.Sprintf("envoy-%d", i)}
	}
	round := func(via func(i int) *redis.Client) {
		for i, h := range holders {
			renew(t, via(i), h, limit)
			var sum int64
			for _, h := range holders {
				sum += h.committed()
			}
			if sum > limit {
				t.Fatalf("the holders hold %d units, limit %d", sum, limit)
			}
		}
	}
	for range 3 { // they register, then converge on 200 each
		round(func(i int) *redis.Client { return clients[i%3] })
	}
	for _, h := range holders {
		if g := h.grants[len(h.grants)-1]; g.Rate != 200 || g.Fair != 200 || h.committed() != 200 {
			t.Fatalf("%s before the failover: %+v", h.id, h.grants)
		}
	}
	tc.kill(victim)
	round(func(int) *redis.Client { return survivor })
	late := &shareHolder{id: "late"}
	renew(t, survivor, late, limit)
	if g := late.grants[0]; g.Rate != 0 || g.Holders != 6 {
		t.Fatalf("a holder joining after the failover got %+v: the new leader forgot grants in force", g)
	}
	info := infoFields(t, do(t, survivor, "RL.INFO", "api"))
	if info["committed"] != int64(limit) || info["holders"] != int64(6) {
		t.Fatalf("RL.INFO after the failover: %v", info)
	}
	tc.start(victim)
	tc.converge()
}

// renew sends h's next RL.SHARE on "api" through c, again while the shard
// elects a leader, acknowledging the grant h uses, and records the grant.
// A request that may have been counted made a grant h never saw: it stays
// committed on the shard, so h is only less sure of what it holds, never
// more.
func renew(t *testing.T, c *redis.Client, h *shareHolder, limit int64) {
	t.Helper()
	args := []any{"RL.SHARE", "api", limit, 1000, h.id, "TTL", 600_000}
	if n := len(h.grants); n > 0 {
		args = append(args, "ACK", h.grants[n-1].Seq)
	}
	var v any
	poll.Until(t, 20*time.Second, h.id+"'s renewal", func() (bool, error) {
		var err error
		v, err = c.Do(ctx(t), args...).Result()
		if err != nil && isReply(err) && !strings.HasPrefix(err.Error(), "TRYAGAIN") && !strings.HasPrefix(err.Error(), "UNCERTAIN") {
			t.Fatalf("%v: %v", args, err)
		}
		return err == nil, err
	})
	g, err := parseGrant(v)
	if err != nil {
		t.Fatal(err)
	}
	// It switches to the new grant: those before the one it acknowledged
	// are freed.
	if n := len(h.grants); n > 0 {
		h.grants = h.grants[n-1:]
	}
	h.grants = append(h.grants, g)
}
