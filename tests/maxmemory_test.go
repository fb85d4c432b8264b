package tests

import (
	"bufio"
	"fmt"
	"math/rand/v2"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// --maxmemory: a flood of new keys is refused with -OOM once the keys hold
// the limit, and the keys that exist keep their limits exactly.
func TestMaxMemoryFloodLeavesExistingLimitsAlone(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2", "--maxmemory", "64kb")
	c := srv.Client(t, 2)
	poll.Until(t, 10*time.Second, "the limit to reach the shards", func() (bool, error) { return infoInt(t, c, "memory", "maxmemory") == 64<<10, nil })
	if d := decide(t, c, "RL.SLIDING user:ada 3 600000"); !d.Allowed || d.Remaining != 2 {
		t.Fatalf("before the flood: %v", d)
	}
	refused := 0
	for i := range 3000 {
		if err := c.Do(ctx(t), "RL.SLIDING", fmt.Sprint("flood:", i), "3", "600000").Err(); err != nil {
			if err.Error() != "OOM command not allowed when used memory > 'maxmemory'." {
				t.Fatalf("flood:%d: %v", i, err)
			}
			refused++
		}
	}
	if refused < 1000 || refused == 3000 {
		t.Fatalf("%d of 3000 new keys refused at 64 KiB", refused)
	}
	if got := infoInt(t, c, "stats", "rl_rejected_oom"); got != int64(refused) {
		t.Errorf("rl_rejected_oom %d, want %d", got, refused)
	}
	if d := decide(t, c, "RL.SLIDING user:ada 3 600000"); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("after the flood: %v, want its second unit", d)
	}
}

// The seed article's partition-key DoS at full scale: two million
// decisions, each for a random key never seen before, pipelined as fast as
// one connection can send them, against a node limited to 8 MiB of keys.
// Under noeviction the node refuses what does not fit with -OOM, holds its
// memory, and the keys that existed before the flood keep their exact
// counts; under volatile-ttl it admits the flood by evicting, and holds its
// memory just the same.
func TestMaxMemoryMillionsOfRandomKeys(t *testing.T) {
	t.Parallel()
	for _, policy := range []string{"noeviction", "volatile-ttl"} {
		t.Run(policy, func(t *testing.T) {
			t.Parallel()
			const users = 200
			srv := startServer(t, "--shards", "2", "--maxmemory", "8mb", "--maxmemory-policy", policy)
			c := srv.Client(t, 2)
			poll.Until(t, 10*time.Second, "the limit to reach the shards", func() (bool, error) {
				return infoInt(t, c, "memory", "maxmemory") == floodMemory, nil
			})
			for i := range users {
				if d := decide(t, c, fmt.Sprintf("RL.SLIDING user:%d 3 600000", i)); !d.Allowed || d.Remaining != 2 {
					t.Fatalf("user:%d before the flood: %v", i, d)
				}
			}
			admitted, refused := floodRandomKeys(t, srv.Addr)
			t.Logf("%d new keys admitted, %d refused, %d evicted", admitted, refused, infoInt(t, c, "stats", "evicted_keys"))
			if got := infoInt(t, c, "stats", "rl_rejected_oom"); got != int64(refused) {
				t.Errorf("rl_rejected_oom %d, want %d", got, refused)
			}
			if got := infoInt(t, c, "memory", "rl_memory_charged"); got > floodMemory {
				t.Errorf("rl_memory_charged %d over maxmemory %d", got, floodMemory)
			}
			// The dataset also counts the room the record array and the index
			// have grown into (docs/security.md: up to about a third more).
			if got := infoInt(t, c, "memory", "used_memory_dataset"); got > floodMemory*4/3 {
				t.Errorf("used_memory_dataset %d, more than a third over maxmemory %d", got, floodMemory)
			}
			if got := infoInt(t, c, "memory", "used_memory"); got > 256<<20 {
				t.Errorf("heap %d bytes after the flood", got)
			}
			if policy == "volatile-ttl" {
				// Evicting hands budgets back (docs/security.md: it fails open);
				// what must hold is that nothing is refused.
				if refused != 0 {
					t.Errorf("%d refused under volatile-ttl", refused)
				}
				return
			}
			if admitted == 0 || refused < floodKeys*9/10 {
				t.Errorf("%d admitted, %d refused: want the limit to stop most of the flood", admitted, refused)
			}
			for i := range users {
				if d := decide(t, c, fmt.Sprintf("RL.SLIDING user:%d 3 600000", i)); !d.Allowed || d.Remaining != 1 {
					t.Fatalf("user:%d after the flood: %v, want its second unit", i, d)
				}
			}
		})
	}
}

const (
	floodKeys   = 2_000_000
	floodMemory = 8 << 20 // --maxmemory 8mb
)

// floodRandomKeys sends floodKeys RL.SLIDING decisions for random new keys
// on one connection, pipelined 2000 at a time while the replies are read,
// and counts the decisions and the -OOM refusals; anything else fails.
func floodRandomKeys(t *testing.T, addr string) (admitted, refused int) {
	t.Helper()
	const pipeline = 2000
	conn, err := net.DialTimeout("tcp", addr, 5*time.Second)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	conn.SetDeadline(time.Now().Add(2 * time.Minute))
	sent := make(chan error, 1)
	go func() {
		rng := rand.New(rand.NewPCG(1, 2))
		var buf []byte
		for n := 0; n < floodKeys; n += pipeline {
			buf = buf[:0]
			for range pipeline {
				key := strconv.FormatUint(rng.Uint64(), 36)
				buf = fmt.Appendf(buf, "*4\r\n$10\r\nRL.SLIDING\r\n$%d\r\n%s\r\n$1\r\n3\r\n$6\r\n600000\r\n", len(key), key)
			}
			if _, err := conn.Write(buf); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	r := bufio.NewReaderSize(conn, 1<<16)
	for range floodKeys {
		line, err := r.ReadSlice('\n')
		if err != nil {
			t.Fatalf("after %d replies: %v", admitted+refused, err)
		}
		switch string(line) {
		case "-OOM command not allowed when used memory > 'maxmemory'.\r\n":
			refused++
		case "*5\r\n":
			for range 5 {
				if _, err := r.ReadSlice('\n'); err != nil {
					t.Fatal(err)
				}
			}
			admitted++
		default:
			t.Fatalf("reply %d: %q", admitted+refused, line)
		}
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	return admitted, refused
}
