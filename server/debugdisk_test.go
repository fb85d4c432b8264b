package server

import (
	"syscall"
	"testing"
	"time"

	"github.com/rlserver/rlserver/persistence"
)

// DEBUG CLOCK OFFSET makes the host's clock wrong: decisions use it at
// once, and the shards are not told; SET then moves the test's time, which
// the clock reads with the offset added.
func TestDebugClockOffset(t *testing.T) {
	s := startServer(t)
	s.dial(t).run([]step{
		{cmd("DEBUG", "CLOCK", "OFFSET", "300000"), intReply(testNow + 300000)},
		{cmd("DEBUG", "CLOCK", "GET"), intReply(testNow + 300000)},
		{cmd("RL.FIXED", "k", "1", "1000000"), decision2(1, 1, 0, 0, 1000000-(testNow+300000)%1000000)},
		{cmd("DEBUG", "CLOCK", "SET", "1700000000000"), intReply(testNow + 300000)},
		{cmd("DEBUG", "CLOCK", "OFFSET", "-86400001"), "-ERR the offset must be within a day either way (86400000 ms)\r\n"},
		{cmd("DEBUG", "CLOCK", "OFFSET", "soon"), "-ERR value is not an integer or out of range\r\n"},
		{cmd("DEBUG", "CLOCK", "OFFSET"), "-ERR DEBUG CLOCK SET <unix_ms> | ADVANCE <ms> | GET | REAL | OFFSET <ms>\r\n"},
		{cmd("DEBUG", "CLOCK", "OFFSET", "0"), intReply(testNow)},
	})
}

// DEBUG DISK sets the faults injected into a durable node's logs, and
// answers with those in force; an in-memory node has none to set.
func TestDebugDisk(t *testing.T) {
	faults := new(persistence.DiskFaults)
	s := startServer(t, withConfig(func(c *Config) { c.DebugDisk = faults }))
	const usage = "-ERR DEBUG DISK FAIL [EIO|ENOSPC] | SLOW <ms> | OK | GET\r\n"
	s.dial(t).run([]step{
		{cmd("DEBUG", "DISK", "GET"), bulkReply("fail=none delay_ms=0")},
		{cmd("DEBUG", "DISK", "FAIL"), bulkReply("fail=EIO delay_ms=0")},
		{cmd("debug", "disk", "fail", "enospc"), bulkReply("fail=ENOSPC delay_ms=0")},
		{cmd("DEBUG", "DISK", "SLOW", "1000"), bulkReply("fail=ENOSPC delay_ms=1000")},
		{cmd("DEBUG", "DISK", "SLOW", "60001"), "-ERR the delay must be from 0 to 60000 ms\r\n"},
		{cmd("DEBUG", "DISK", "SLOW", "-1"), "-ERR the delay must be from 0 to 60000 ms\r\n"},
		{cmd("DEBUG", "DISK", "SLOW", "x"), "-ERR value is not an integer or out of range\r\n"},
		{cmd("DEBUG", "DISK", "FAIL", "EPERM"), usage},
		{cmd("DEBUG", "DISK", "SLOW"), usage},
		{cmd("DEBUG", "DISK", "BREAK"), usage},
		{cmd("DEBUG", "DISK"), "-ERR wrong number of arguments for 'debug|disk' command\r\n"},
	})
	if errno, delay := faults.State(); errno != syscall.ENOSPC || delay != time.Second {
		t.Errorf("faults in force: %v, %v", errno, delay)
	}
	s.dial(t).run([]step{{cmd("DEBUG", "DISK", "OK"), bulkReply("fail=none delay_ms=0")}})

	mem := startServer(t)
	mem.dial(t).run([]step{
		{cmd("DEBUG", "DISK", "FAIL"), "-ERR DEBUG DISK needs a durable node: an in-memory one has no logs to fail\r\n"},
	})
}
