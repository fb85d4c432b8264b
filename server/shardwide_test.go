package server

import (
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// fillKeys creates keys user:0 .. user:n-1 on a connection, every third one
// a fixed window and the others sliding windows, and returns their names.
func fillKeys(c *rawConn, n int) []string {
	c.t.Helper()
	var req strings.Builder
	keys := make([]string, n)
	for i := range keys {
		keys[i] = "user:" + strconv.Itoa(i)
		algorithm := "RL.SLIDING"
		if i%3 == 0 {
			algorithm = "RL.FIXED"
		}
		req.WriteString(encode(algorithm, keys[i], "10", "60000"))
	}
	c.write(req.String())
	for range keys {
		c.read()
	}
	return keys
}

// scanAll runs SCAN with extra options until the cursor comes back to 0 and
// returns every key it reported, in order, and how many calls it took.
func scanAll(t *testing.T, c *rawConn, options ...string) (keys []string, calls int) {
	t.Helper()
	cursor := "0"
	for {
		reply, ok := parse(t, c.do(append([]string{"SCAN", cursor}, options...)...)).([]any)
		if !ok || len(reply) != 2 {
			t.Fatalf("SCAN reply %#v", reply)
		}
		calls++
		for _, k := range reply[1].([]any) {
			keys = append(keys, k.(string))
		}
		if cursor = reply[0].(string); cursor == "0" {
			return keys, calls
		}
		if calls > 10_000 {
			t.Fatal("SCAN does not end")
		}
	}
}

// TestScan checks that a full SCAN over several shards with a small COUNT
// returns every key exactly once, and that MATCH and TYPE filter it.
func TestScan(t *testing.T) {
	s := startServer(t, withShards(5))
	c := s.dial(t)
	keys := fillKeys(c, 200)

	got, calls := scanAll(t, c, "COUNT", "7")
	if calls < 5 {
		t.Errorf("a full scan in %d calls: COUNT is not honoured", calls)
	}
	assertSameKeys(t, "SCAN COUNT 7", got, keys)

	var ones, fixed []string
	for i, k := range keys {
		if strings.HasPrefix(k, "user:1") {
			ones = append(ones, k)
		}
		if i%3 == 0 {
			fixed = append(fixed, k)
		}
	}
	got, _ = scanAll(t, c, "MATCH", "user:1*", "COUNT", "10")
	assertSameKeys(t, "SCAN MATCH user:1*", got, ones)
	got, _ = scanAll(t, c, "TYPE", "rl.fixed")
	assertSameKeys(t, "SCAN TYPE rl.fixed", got, fixed)
	got, _ = scanAll(t, c, "TYPE", "string", "COUNT", "1000")
	assertSameKeys(t, "SCAN TYPE string", got, nil)

	c.expect(helloReply(true, c.clientID()), "HELLO", "3")
	got, _ = scanAll(t, c, "count", "50")
	assertSameKeys(t, "SCAN in RESP3", got, keys)
}

// assertSameKeys checks that got holds each of want exactly once.
func assertSameKeys(t *testing.T, what string, got, want []string) {
	t.Helper()
	got, want = slices.Clone(got), slices.Clone(want)
	slices.Sort(got)
	slices.Sort(want)
	if !slices.Equal(got, want) {
		t.Fatalf("%s: %d keys, want %d (got %.200v)", what, len(got), len(want), got)
	}
}

// TestScanErrors checks SCAN's refusals.
func TestScanErrors(t *testing.T) {
	s := startServer(t, withShards(4))
	s.dial(t).run([]step{
		{cmd("SCAN", "abc"), "-ERR invalid cursor\r\n"},
		{cmd("SCAN", "-1"), "-ERR invalid cursor\r\n"},
		{cmd("SCAN", "5"), "-ERR invalid cursor\r\n"}, // shard 5 of 4
		{cmd("SCAN", "0", "COUNT", "0"), "-ERR syntax error\r\n"},
		{cmd("SCAN", "0", "COUNT", "x"), "-ERR value is not an integer or out of range\r\n"},
		{cmd("SCAN", "0", "MATCH"), "-ERR syntax error\r\n"},
		{cmd("SCAN", "0", "LIMIT", "1"), "-ERR syntax error\r\n"},
		{cmd("SCAN"), "-ERR wrong number of arguments for 'scan' command\r\n"},
		{cmd("SCAN", "3"), arrayReply(bulkReply("0"), "*0\r\n")}, // the last shard, empty
	})
}

// TestDBSizeAndFlush checks DBSIZE and FLUSHALL across shards.
func TestDBSizeAndFlush(t *testing.T) {
	s := startServer(t, withShards(3))
	c := s.dial(t)
	c.expect(":0\r\n", "DBSIZE")
	fillKeys(c, 50)
	c.run([]step{
		{cmd("DBSIZE"), ":50\r\n"},
		{cmd("DBSIZE", "x"), "-ERR wrong number of arguments for 'dbsize' command\r\n"},
		{cmd("FLUSHALL", "NOW"), "-ERR syntax error\r\n"},
		{cmd("DBSIZE"), ":50\r\n"},
		{cmd("FLUSHALL"), "+OK\r\n"},
		{cmd("DBSIZE"), ":0\r\n"},
		{cmd("RL.SLIDING", "user:1", "10", "60000"), decision2(1, 10, 9, 0, 100000)}, // a full budget again
		{cmd("FLUSHDB", "ASYNC"), "+OK\r\n"},
		{cmd("flushall", "sync"), "+OK\r\n"},
		{cmd("DBSIZE"), ":0\r\n"},
	})
}

// wireDebugDisabled is the refusal of DEBUG without --enable-debug-command.
const wireDebugDisabled = "-ERR DEBUG command not allowed. Start rlserver with --enable-debug-command to enable it.\r\n"

// TestDebugDisabled checks that DEBUG is refused without a debug clock.
func TestDebugDisabled(t *testing.T) {
	s := startServer(t, withoutDebug())
	s.dial(t).run([]step{
		{cmd("DEBUG", "CLOCK", "GET"), wireDebugDisabled},
		{cmd("DEBUG", "DIGEST"), wireDebugDisabled},
		{cmd("DEBUG", "NOSUCH"), wireDebugDisabled},
		{cmd("DEBUG"), "-ERR wrong number of arguments for 'debug' command\r\n"},
	})
}

// TestDebugClock checks DEBUG CLOCK SET, ADVANCE, GET and REAL, and that
// decisions follow the clock it sets, even backwards.
func TestDebugClock(t *testing.T) {
	s := startServer(t)
	c := s.dial(t)
	const rangeErr = "-ERR the clock must stay between 0 and 4102444800000 (2100-01-01)\r\n"
	const usage = "-ERR DEBUG CLOCK SET <unix_ms> | ADVANCE <ms> | GET | REAL | OFFSET <ms>\r\n"
	c.run([]step{
		{cmd("DEBUG", "CLOCK", "GET"), intReply(testNow)},
		{cmd("RL.FIXED", "k", "1", "1000"), decision2(1, 1, 0, 0, 1000)},
		{cmd("RL.FIXED", "k", "1", "1000"), decision2(0, 1, 0, 1000, 1000)},
		{cmd("DEBUG", "CLOCK", "ADVANCE", "999"), intReply(testNow + 999)},
		{cmd("RL.FIXED", "k", "1", "1000"), decision2(0, 1, 0, 1, 1)},
		{cmd("debug", "clock", "advance", "1"), intReply(testNow + 1000)},
		{cmd("RL.FIXED", "k", "1", "1000"), decision2(1, 1, 0, 0, 1000)},
		{cmd("DEBUG", "CLOCK", "SET", strconv.FormatInt(testNow, 10)), intReply(testNow)}, // back in time
		{cmd("RL.FIXED", "k2", "1", "1000"), decision2(1, 1, 0, 0, 1000)},
		{cmd("TIME"), arrayReply(bulkReply("1700000000"), bulkReply("0"))},
		{cmd("DEBUG", "CLOCK", "SET", "-1"), rangeErr},
		{cmd("DEBUG", "CLOCK", "SET", "4102444800001"), rangeErr},
		{cmd("DEBUG", "CLOCK", "SET", "4102444800000"), intReply(4102444800000)},
		{cmd("DEBUG", "CLOCK", "ADVANCE", "1"), rangeErr},
		{cmd("DEBUG", "CLOCK", "ADVANCE", "-4102444800001"), rangeErr},
		{cmd("DEBUG", "CLOCK", "SET", "soon"), "-ERR value is not an integer or out of range\r\n"},
		{cmd("DEBUG", "CLOCK", "SET"), usage},
		{cmd("DEBUG", "CLOCK", "GET", "1"), usage},
		{cmd("DEBUG", "CLOCK", "STOP"), usage},
		{cmd("DEBUG", "CLOCK"), "-ERR wrong number of arguments for 'debug|clock' command\r\n"},
		{cmd("DEBUG", "NOSUCH"), "-ERR unknown subcommand 'NOSUCH'. Try DEBUG HELP.\r\n"},
	})

	before := time.Now().UnixMilli()
	real := parse(t, c.do("DEBUG", "CLOCK", "REAL")).(int64)
	if after := time.Now().UnixMilli(); real < before || real > after {
		t.Fatalf("DEBUG CLOCK REAL: %d, not within [%d, %d]", real, before, after)
	}
}

// TestDebugDigest checks that two servers fed the same commands at the
// same clock have the same digest, which any difference changes.
func TestDebugDigest(t *testing.T) {
	a, b := startServer(t, withShards(3)), startServer(t, withShards(3))
	ca, cb := a.dial(t), b.dial(t)
	if da, db := ca.do("DEBUG", "DIGEST"), cb.do("DEBUG", "DIGEST"); da != db {
		t.Fatalf("empty servers: digests %q and %q", da, db)
	}
	for _, c := range []*rawConn{ca, cb} {
		fillKeys(c, 40)
		c.expect(intReply(testNow+500), "DEBUG", "CLOCK", "ADVANCE", "500")
		c.expect(decision2(1, 3, 2, 0, 334), "RL.TOKEN", "bucket", "3", "3", "1000")
	}
	da, db := ca.do("DEBUG", "DIGEST"), cb.do("DEBUG", "DIGEST")
	if da != db || !strings.HasPrefix(da, "$64\r\n") {
		t.Fatalf("same commands, digests %q and %q", da, db)
	}
	cb.expect(decision2(1, 10, 8, 0, 99500), "RL.SLIDING", "user:1", "10", "60000")
	if db := cb.do("DEBUG", "DIGEST"); db == da {
		t.Fatal("a decision did not change the digest")
	}
	shards, _ := parse(t, cb.do("DEBUG", "DIGEST-SHARDS")).([]any)
	if len(shards) != 3 {
		t.Fatalf("DEBUG DIGEST-SHARDS: %v, want one digest a shard", shards)
	}
	h := sha256.New()
	for i, d := range shards {
		fmt.Fprintf(h, "%d:%s;", i, d)
	}
	if got, want := cb.do("DEBUG", "DIGEST"), fmt.Sprintf("$64\r\n%x\r\n", h.Sum(nil)); got != want {
		t.Fatalf("DEBUG DIGEST %q is not the hash of DEBUG DIGEST-SHARDS %v", got, shards)
	}
	if got := ca.do("DEBUG", "DIGEST", "x"); got != "-ERR wrong number of arguments for 'debug|digest' command\r\n" {
		t.Fatalf("DEBUG DIGEST x: %q", got)
	}
	help, _ := parse(t, ca.do("DEBUG", "HELP")).([]any)
	if len(help) == 0 || !strings.HasPrefix(fmt.Sprint(help[0]), "DEBUG <subcommand>") {
		t.Fatalf("DEBUG HELP: %v", help)
	}
}
