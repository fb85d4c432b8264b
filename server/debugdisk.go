package server

import (
	"errors"
	"fmt"
	"syscall"
	"time"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/resp"
)

var (
	errDiskUsage = errors.New("ERR DEBUG DISK FAIL [EIO|ENOSPC] | SLOW <ms> | OK | GET")
	errNoDisk    = errors.New("ERR DEBUG DISK needs a durable node: an in-memory one has no logs to fail")
)

// maxDiskDelay bounds DEBUG DISK SLOW: a minute.
const maxDiskDelay = 60_000

// debugDisk is DEBUG DISK FAIL|SLOW|OK|GET: faults injected into every
// append to this node's Raft logs, and into the probes that tell when its
// disk works again (persistence.DiskFaults), for the tests of a leader
// whose disk fails or slows down. Each form answers with the faults in
// force: "fail=EIO delay_ms=0".
func (c *conn) debugDisk(_ *commands.Spec, args [][]byte, out []byte) []byte {
	disk := c.srv.cfg.DebugDisk
	if disk == nil {
		return appendError(out, errNoDisk)
	}
	action := args[2]
	switch {
	case commands.EqualFold(action, "get") && len(args) == 3:
	case commands.EqualFold(action, "ok") && len(args) == 3:
		disk.Fail(0)
		disk.Slow(0)
	case commands.EqualFold(action, "fail") && len(args) <= 4:
		errno := syscall.EIO
		if len(args) == 4 {
			switch {
			case commands.EqualFold(args[3], "eio"):
			case commands.EqualFold(args[3], "enospc"):
				errno = syscall.ENOSPC
			default:
				return appendError(out, errDiskUsage)
			}
		}
		disk.Fail(errno)
	case commands.EqualFold(action, "slow") && len(args) == 4:
		ms, ok := commands.ParseInt(args[3])
		if !ok {
			return appendError(out, commands.ErrNotInteger)
		}
		if ms < 0 || ms > maxDiskDelay {
			return appendError(out, fmt.Errorf("ERR the delay must be from 0 to %d ms", maxDiskDelay))
		}
		disk.Slow(time.Duration(ms) * time.Millisecond)
	default:
		return appendError(out, errDiskUsage)
	}
	return resp.AppendBulkString(out, diskState(disk))
}

// diskState describes the faults in force.
func diskState(disk DebugDisk) string {
	errno, delay := disk.State()
	fail := "none"
	switch errno {
	case 0:
	case syscall.ENOSPC:
		fail = "ENOSPC"
	default:
		fail = "EIO"
	}
	return fmt.Sprintf("fail=%s delay_ms=%d", fail, delay.Milliseconds())
}
