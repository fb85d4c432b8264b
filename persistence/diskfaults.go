package persistence

import (
	"os"
	"sync/atomic"
	"syscall"
	"time"
)

// DiskFaults are faults a test injects into the appends of every Raft log
// store of a node, and into the probes that tell when its disk works again
// (DiskHealth): a failure with an errno (EIO, ENOSPC) and a delay. They
// stand for a disk that fails or slows down under a running node, which a
// test cannot otherwise bring about on one machine's disk. The votes and
// the term (the stable store) are written as they are: a disk that is full
// for the log's appends still takes those small writes, and hashicorp/raft
// stops the process when it cannot save a term. rlserver enables them with
// --enable-debug-command only (DEBUG DISK).
type DiskFaults struct {
	errno atomic.Uintptr // a syscall.Errno; 0: none
	delay atomic.Int64   // nanoseconds added before each write
}

// Fail makes every append and probe fail with errno from now on; 0 stops
// failing.
func (f *DiskFaults) Fail(errno syscall.Errno) { f.errno.Store(uintptr(errno)) }

// Slow makes every append and probe take d longer, as a slow fsync would;
// 0 stops delaying.
func (f *DiskFaults) Slow(d time.Duration) { f.delay.Store(int64(max(d, 0))) }

// State returns the failure (0: none) and the delay being injected.
func (f *DiskFaults) State() (syscall.Errno, time.Duration) {
	return syscall.Errno(f.errno.Load()), time.Duration(f.delay.Load())
}

// inject runs before a write to path (op names it, as the os does): it
// waits the delay, then fails as the os would. A nil DiskFaults injects
// nothing.
func (f *DiskFaults) inject(op, path string) error {
	if f == nil {
		return nil
	}
	if d := f.delay.Load(); d > 0 {
		time.Sleep(time.Duration(d))
	}
	if errno := syscall.Errno(f.errno.Load()); errno != 0 {
		return &os.PathError{Op: op, Path: path, Err: errno}
	}
	return nil
}
