//go:build linux

package server

import (
	"errors"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A loop over shards that answer later spends most of its waits between a
// pipeline handed to its shards and their answer: a Raft commit, a
// millisecond or a few. Blocked in epoll_wait as an ordinary system call,
// its processor is Go's to take: after 20 µs the runtime's monitor thread
// hands it to another thread (woken for it, to find nothing and sleep again)
// whenever the other processors are busy, and the loop's thread, woken by
// the answer, must then get a processor back, often by sleeping until one
// is handed to it. On the machine measured each of those wake-ups is a context
// switch through the hypervisor, which holding the processor instead saves
// (docs/performance.md, "Twelfth round", has how many).
//
// So the loop first waits up to heldWait in a system call the scheduler is
// not told of, keeping its processor as a goroutine that runs would. That is
// safe because nothing waits on that processor meanwhile: the loop has just
// yielded, so the goroutines it made runnable have run; any made runnable
// elsewhere go to other processors; a timer due on this one is run by
// whichever processor looks for work next. When the runtime needs the
// processor back (a collection stopping the world, the monitor after 10 ms)
// it signals the thread, and the signal ends the wait with EINTR: the loop
// yields, then waits again (with GODEBUG=asyncpreemptoff=1 there is no
// signal, and the runtime waits for the window to end). A window with
// nothing in it means the traffic has stopped, and the loop then blocks as
// the scheduler expects, giving its processor back: an idle server costs
// nothing.
const heldWait = 20 * time.Millisecond

// holdCheckEvery is how many waits a loop goes between asking how many
// processors there are (mayHold).
const holdCheckEvery = 1024

// mayHold reports whether the loop may wait holding its processor: only
// while the processors outnumber the loops, so that one is always left for
// the goroutines that answer the loop's pipelines (a shard's proposer,
// Raft's). With as many loops as processors (GOMAXPROCS 1 in a container of
// one CPU) a held wait would keep every processor from the very goroutines
// it waits for, until the runtime's monitor took one back 10 ms later. Go
// follows a container's CPU limit while the server runs, so GOMAXPROCS can
// change: the loop asks again every holdCheckEvery waits.
func (l *eventLoop) mayHold() bool {
	if l.waits%holdCheckEvery == 0 {
		l.holds = runtime.GOMAXPROCS(0) > len(l.all.loops)
	}
	l.waits++
	return l.holds
}

// waitHolding waits up to window for events holding the loop's processor
// (heldWait, but for tests). It reports 0 events and no error when the
// window passed with none. A signal restarts the window once, counted from
// when it came, so an interrupted wait holds at most twice as long.
func (l *eventLoop) waitHolding(events []unix.EpollEvent, window time.Duration) (int, error) {
	var end time.Time // set when a signal first interrupts the wait
	for wait := window; wait > 0; {
		n, err := epollWaitHolding(l.ep, events, int((wait+time.Millisecond-1)/time.Millisecond))
		if !errors.Is(err, unix.EINTR) {
			return n, err
		}
		runtime.Gosched() // what the signal most often asked for
		now := time.Now()
		if end.IsZero() {
			end = now.Add(window)
		}
		wait = end.Sub(now)
	}
	return 0, nil
}

// epollWaitHolding is epoll_wait(2) made without telling Go's scheduler,
// which leaves the calling goroutine's processor with it (RawSyscall6).
func epollWaitHolding(ep int, events []unix.EpollEvent, msec int) (int, error) {
	r, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(ep),
		uintptr(unsafe.Pointer(&events[0])), uintptr(len(events)), uintptr(msec), 0, 0)
	if errno != 0 {
		return 0, errno
	}
	return int(r), nil
}
