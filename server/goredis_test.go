package server

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/redis/go-redis/v9"
)

// goRedis is a go-redis client of the test server, closed when the test
// ends; opt sets what the test varies.
func (s *testServer) goRedis(t *testing.T, opt func(*redis.Options)) *redis.Client {
	t.Helper()
	o := &redis.Options{
		Addr:         s.addr,
		DialTimeout:  ioTimeout,
		ReadTimeout:  ioTimeout,
		WriteTimeout: ioTimeout,
		MaxRetries:   -1,
		PoolSize:     2,
	}
	if opt != nil {
		opt(o)
	}
	rdb := redis.NewClient(o)
	t.Cleanup(func() { rdb.Close() })
	return rdb
}

// testContext is a context that ends with the test or after ioTimeout.
func testContext(t *testing.T) context.Context {
	ctx, cancel := context.WithTimeout(context.Background(), ioTimeout)
	t.Cleanup(cancel)
	return ctx
}

// TestGoRedisRESP3 connects go-redis with its defaults (HELLO 3, CLIENT
// SETINFO, CLIENT MAINT_NOTIFICATIONS in auto mode) and a name: decisions
// arrive as maps, CL.THROTTLE as an array, and the name is set.
func TestGoRedisRESP3(t *testing.T) {
	s := startServer(t)
	ctx := testContext(t)
	rdb := s.goRedis(t, func(o *redis.Options) { o.ClientName = "worker-1" })

	v, err := rdb.Do(ctx, "RL.SLIDING", "user:ada", 10, 1000).Result()
	if err != nil {
		t.Fatal(err)
	}
	want := map[any]any{"allowed": int64(1), "limit": int64(10), "remaining": int64(9), "retry_after_ms": int64(0), "reset_after_ms": int64(2000)}
	if m, ok := v.(map[any]any); !ok || len(m) != len(want) {
		t.Fatalf("RL.SLIDING: %#v", v)
	} else {
		for k, w := range want {
			if m[k] != w {
				t.Fatalf("RL.SLIDING %s = %v, want %v", k, m[k], w)
			}
		}
	}
	v, err = rdb.Do(ctx, "CL.THROTTLE", "user:ada:cell", 1, 2, 60).Result()
	if a, ok := v.([]any); err != nil || !ok || len(a) != 5 || a[0] != int64(0) || a[3] != int64(-1) {
		t.Fatalf("CL.THROTTLE: %#v, %v", v, err)
	}
	if name, err := rdb.ClientGetName(ctx).Result(); err != nil || name != "worker-1" {
		t.Fatalf("CLIENT GETNAME: %q, %v", name, err)
	}
	list, err := rdb.ClientList(ctx).Result()
	if err != nil || !strings.Contains(list, " name=worker-1 ") || !strings.Contains(list, " resp=3 ") || !strings.Contains(list, " lib-name=go-redis") {
		t.Fatalf("CLIENT LIST: %q, %v", list, err)
	}
	if info, err := rdb.Info(ctx).Result(); err != nil || !strings.Contains(info, "loading:0") {
		t.Fatalf("INFO: %.80q, %v", info, err)
	}
}

// TestGoRedisRESP2 checks decisions as arrays for a RESP2 client, and a
// go-redis transaction on keys of one slot.
func TestGoRedisRESP2(t *testing.T) {
	s := startServer(t)
	ctx := testContext(t)
	rdb := s.goRedis(t, func(o *redis.Options) { o.Protocol = 2 })
	v, err := rdb.Do(ctx, "RL.FIXED", "k", 2, 1000).Result()
	if a, ok := v.([]any); err != nil || !ok || len(a) != 5 || a[0] != int64(1) || a[2] != int64(1) {
		t.Fatalf("RL.FIXED: %#v, %v", v, err)
	}
	cmds, err := rdb.TxPipelined(ctx, func(p redis.Pipeliner) error {
		p.Do(ctx, "RL.FIXED", "{k}:a", 1, 1000)
		p.Do(ctx, "RL.FIXED", "{k}:a", 1, 1000)
		p.Exists(ctx, "{k}:a", "{k}:b")
		return nil
	})
	if err != nil || len(cmds) != 3 {
		t.Fatalf("MULTI/EXEC: %v, %v", cmds, err)
	}
	second, _ := cmds[1].(*redis.Cmd).Result()
	if a, ok := second.([]any); !ok || a[0] != int64(0) || cmds[2].(*redis.IntCmd).Val() != 1 {
		t.Fatalf("MULTI/EXEC results: %v", cmds)
	}
}

// TestGoRedisPassword checks go-redis's handshake with a password: HELLO 3
// AUTH for the right one, WRONGPASS for a wrong one.
func TestGoRedisPassword(t *testing.T) {
	s := startServer(t, withPassword("s3cret"))
	ctx := testContext(t)
	good := s.goRedis(t, func(o *redis.Options) { o.Password = "s3cret"; o.ClientName = "n" })
	if err := good.Ping(ctx).Err(); err != nil {
		t.Fatal(err)
	}
	bad := s.goRedis(t, func(o *redis.Options) { o.Password = "wrong" })
	err := bad.Ping(ctx).Err()
	var rerr redis.Error
	if !errors.As(err, &rerr) || !strings.HasPrefix(rerr.Error(), "WRONGPASS invalid username-password pair") {
		t.Fatalf("wrong password: %v", err)
	}
	anonymous := s.goRedis(t, nil)
	if err := anonymous.Ping(ctx).Err(); !errors.As(err, &rerr) || rerr.Error() != "NOAUTH Authentication required." {
		t.Fatalf("no password: %v", err)
	}
}

// TestGoRedisCommandAndDB checks that go-redis reads COMMAND's entries and
// key positions, and that only database 0 can be selected.
func TestGoRedisCommandAndDB(t *testing.T) {
	s := startServer(t)
	ctx := testContext(t)
	rdb := s.goRedis(t, nil)
	infos, err := rdb.Command(ctx).Result()
	if err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string][3]int8{"rl.sliding": {1, 1, 1}, "del": {1, -1, 1}, "exists": {1, -1, 1}, "ping": {0, 0, 0}} {
		ci := infos[name]
		if ci == nil || [3]int8{ci.FirstKeyPos, ci.LastKeyPos, ci.StepCount} != want {
			t.Errorf("COMMAND %s: %+v", name, ci)
		}
	}
	db1 := s.goRedis(t, func(o *redis.Options) { o.DB = 1 })
	err = db1.Ping(ctx).Err()
	var rerr redis.Error
	if !errors.As(err, &rerr) || rerr.Error() != "ERR DB index is out of range" {
		t.Fatalf("DB 1: %v", err)
	}
}

// TestGoRedisPipeline sends a go-redis pipeline of decisions.
func TestGoRedisPipeline(t *testing.T) {
	s := startServer(t)
	ctx := testContext(t)
	rdb := s.goRedis(t, func(o *redis.Options) { o.Protocol = 2 })
	cmds, err := rdb.Pipelined(ctx, func(p redis.Pipeliner) error {
		for range 500 {
			p.Do(ctx, "RL.TOKEN", "bucket", 100, 1, 1000)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	allowed := 0
	for _, c := range cmds {
		if a, _ := c.(*redis.Cmd).Val().([]any); len(a) == 5 && a[0] == int64(1) {
			allowed++
		}
	}
	if allowed != 100 {
		t.Fatalf("%d of 500 allowed by a bucket of 100, its clock stopped", allowed)
	}
}
