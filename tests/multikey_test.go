package tests

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// MGET, MSET, KEYS, WATCH and UNWATCH, which limiter libraries and the
// caches they run over send (docs/commands.md), answer byte for byte as
// redis-server 7 answers them, in RESP2 and RESP3, scripts included. Two
// connections to each server: the second writes the watched keys.

// wireConn is a connection that keeps each reply's exact bytes.
type wireConn struct {
	t    testing.TB
	conn net.Conn
	r    *bufio.Reader
}

func dialWire(t testing.TB, addr string) *wireConn {
	t.Helper()
	rc := dialRaw(t, addr)
	return &wireConn{t: t, conn: rc.conn, r: rc.r}
}

// do sends args and returns the reply's bytes.
func (c *wireConn) do(args ...string) string {
	c.t.Helper()
	c.conn.SetDeadline(time.Now().Add(cmdTimeout))
	if _, err := io.WriteString(c.conn, command(args...)); err != nil {
		c.t.Fatalf("write: %v", err)
	}
	b, err := wireReply(c.r, nil)
	if err != nil {
		c.t.Fatalf("%v: reply %q: %v", args, b, err)
	}
	return string(b)
}

// wireReply appends one whole reply, as sent, to b.
func wireReply(r *bufio.Reader, b []byte) ([]byte, error) {
	line, err := r.ReadBytes('\n')
	b = append(b, line...)
	if err != nil || len(line) < 3 {
		return b, fmt.Errorf("bad line %q: %v", line, err)
	}
	n, _ := strconv.Atoi(string(line[1 : len(line)-2]))
	switch line[0] {
	case '$', '=', '!':
		if n >= 0 {
			body := make([]byte, n+2)
			_, err = io.ReadFull(r, body)
			b = append(b, body...)
		}
	case '%':
		n *= 2
		fallthrough
	case '*', '~', '>':
		for i := 0; i < n && err == nil; i++ {
			b, err = wireReply(r, b)
		}
	}
	return b, err
}

func TestMultiKeyCommandsSameAsRedis(t *testing.T) {
	t.Parallel()
	ref := startRedisServer(t)
	for _, start := range []func(testing.TB, ...string) *rlproc.Process{startServer, startDurableServer} {
		sameAsRedis(t, ref.Options().Addr, start(t).Addr)
	}
}

// sameAsRedis runs the script of TestMultiKeyCommandsSameAsRedis against
// redis-server at ref and rlserver at addr.
func sameAsRedis(t *testing.T, ref, addr string) {
	type step struct {
		other bool // sent on the second connection
		args  []string
	}
	a := func(args ...string) step { return step{args: args} }
	b := func(args ...string) step { return step{other: true, args: args} }
	script := []step{
		a("SET", "a", "1"), a("SET", "{t}b", "two"), a("HSET", "{t}h", "f", "v"), a("RPUSH", "{t}l", "x"),
		a("MGET", "a", "{t}b", "{t}h", "{t}l", "none", "a"), a("MGET", "none"), a("MGET"),
		a("MSET", "{t}x", "1", "{t}y", "2"), a("MGET", "{t}x", "{t}y"), a("MSET", "{t}h", "now a string"), a("TYPE", "{t}h"),
		a("MSET", "{t}x", "1", "{t}y"), a("MSET", "{t}x"), a("SET", "{t}e", "v", "PX", "100000"), a("MSET", "{t}e", "w"), a("PTTL", "{t}e"),
		a("KEYS"), a("KEYS", "{t}x"), a("KEYS", "{t}[^a-x]"), a("KEYS", "nomatch*"), a("KEYS", "a", "b"),
		// A watched key changed by another connection aborts EXEC.
		a("WATCH", "{t}x"), b("INCR", "{t}x"), a("MULTI"), a("INCR", "{t}x"), a("EXEC"), a("GET", "{t}x"),
		// Unchanged, it runs; EXEC forgot the key.
		a("WATCH", "{t}x", "{t}y"), a("MULTI"), a("INCR", "{t}x"), a("EXEC"), b("INCR", "{t}x"),
		a("MULTI"), a("INCR", "{t}x"), a("EXEC"),
		// WATCH inside MULTI, UNWATCH queued.
		a("MULTI"), a("WATCH", "{t}x"), a("UNWATCH"), a("EXEC"),
		// An absent key created, deleted, expired.
		a("WATCH", "{t}new"), b("SET", "{t}new", "1"), a("MULTI"), a("GET", "{t}x"), a("EXEC"),
		a("WATCH", "{t}new"), b("DEL", "{t}new"), a("MULTI"), a("EXEC"),
		a("SET", "{t}brief", "1", "PX", "1000"), a("WATCH", "{t}brief"), b("EXISTS", "{t}brief"), a("MULTI"), a("EXEC"),
		// UNWATCH, DISCARD and RESET forget.
		a("WATCH", "{t}x"), a("UNWATCH"), b("INCR", "{t}x"), a("MULTI"), a("GET", "{t}x"), a("EXEC"),
		a("WATCH", "{t}x"), a("MULTI"), a("DISCARD"), b("INCR", "{t}x"), a("MULTI"), a("EXEC"),
		a("WATCH"), a("UNWATCH", "x"), a("WATCH", "{t}x"), a("EXEC"), a("UNWATCH"),
		// From scripts.
		a("EVAL", "return redis.call('mget', KEYS[1], KEYS[2], KEYS[3])", "3", "{t}x", "{t}l", "{t}none"),
		a("EVAL", "return redis.call('mset', KEYS[1], 'v', KEYS[2], 'w')", "2", "{t}p", "{t}q"),
		a("EVAL", "return redis.call('mget', KEYS[1], KEYS[2])", "2", "{t}p", "{t}q"),
		a("EVAL", "return redis.pcall('mset', KEYS[1])", "1", "{t}p"),
		a("EVAL", "return redis.pcall('watch', KEYS[1])", "1", "{t}p"),
	}
	for _, proto := range []string{"2", "3"} {
		refA, refB := dialWire(t, ref), dialWire(t, ref)
		srvA, srvB := dialWire(t, addr), dialWire(t, addr)
		refA.do("HELLO", proto)
		srvA.do("HELLO", proto)
		refA.do("FLUSHALL")
		srvA.do("FLUSHALL")
		for _, st := range script {
			ra, sa := refA, srvA
			if st.other {
				ra, sa = refB, srvB
			}
			if st.args[0] == "EXISTS" { // until {t}brief has expired on both
				for _, c := range []*wireConn{ra, sa} {
					poll.Until(t, 5*time.Second, "{t}brief to expire", func() (bool, error) {
						return c.do(st.args...) == ":0\r\n", nil
					})
				}
			}
			want, got := ra.do(st.args...), sa.do(st.args...)
			if st.args[0] == "PTTL" {
				want, got = want[:3], got[:3] // ":99..." a millisecond apart at most
			}
			if got != want {
				t.Errorf("%s RESP%s %q:\n rlserver %q\n    Redis %q", addr, proto, st.args, got, want)
			}
		}
	}
	keys := func(c *wireConn) []string {
		lines := strings.Split(c.do("KEYS", "*"), "\r\n")
		var out []string
		for i := 1; i+1 < len(lines); i += 2 {
			out = append(out, lines[i+1])
		}
		slices.Sort(out)
		return out
	}
	if w, g := keys(dialWire(t, ref)), keys(dialWire(t, addr)); !slices.Equal(w, g) || len(w) == 0 {
		t.Errorf("KEYS *:\n rlserver %q\n    Redis %q", g, w)
	}
}

// WATCH as optimistic locking in a three-node cluster: clients on every
// node (go-redis's ClusterClient, which follows MOVED, and plain clients,
// whose commands the node forwards to the shard's leader) increment one
// key with GET, then SET in a watched transaction, retrying when EXEC
// aborts. No increment is lost, and the replicas agree.
func TestWatchInACluster(t *testing.T) {
	t.Parallel()
	tc := startCluster(t, 3)
	tc.waitLeaders()
	const key, workers, each = "{opt}counter", 6, 15
	clients := []redis.UniversalClient{tc.clusterClient(), tc.client(0), tc.client(1), tc.client(2)}
	var wg sync.WaitGroup
	errs := make(chan error, workers)
	for w := range workers {
		c := clients[w%len(clients)]
		wg.Add(1)
		go func() {
			defer wg.Done()
			for done := 0; done < each; {
				err := c.Watch(ctx(t), func(tx *redis.Tx) error {
					n, err := tx.Get(ctx(t), key).Int()
					if err != nil && err != redis.Nil {
						return err
					}
					_, err = tx.TxPipelined(ctx(t), func(p redis.Pipeliner) error {
						p.Set(ctx(t), key, n+1, 0)
						return nil
					})
					return err
				}, key)
				switch err {
				case nil:
					done++
				case redis.TxFailedErr: // another worker won: read again
				default:
					errs <- err
					return
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Fatal(err)
	}
	if got, err := tc.client(0).Get(ctx(t), key).Int(); err != nil || got != workers*each {
		t.Fatalf("counter %d (%v), want %d: an increment was lost", got, err, workers*each)
	}
	if got, err := tc.clusterClient().MGet(ctx(t), key, "{opt}none").Result(); err != nil || got[0] != strconv.Itoa(workers*each) || got[1] != nil {
		t.Fatalf("MGET %v (%v)", got, err)
	}
	tc.converge()
}
