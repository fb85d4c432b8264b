package tests

import (
	"fmt"
	"testing"
	"time"
)

// --maxmemory: a flood of new keys is refused with -OOM once the keys hold
// the limit, and the keys that exist keep their limits exactly.
func TestMaxMemoryFloodLeavesExistingLimitsAlone(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--shards", "2", "--maxmemory", "64kb")
	c := srv.Client(t, 2)
	waitFor(t, 10*time.Second, "the limit to reach the shards", func() bool { return infoInt(t, c, "memory", "maxmemory") == 64<<10 })
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
