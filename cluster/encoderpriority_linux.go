package cluster

import "golang.org/x/sys/unix"

// lowerThreadPriority sets the calling thread's nice value to nice. An
// error (a system that refuses it) leaves the thread at the server's
// priority: the encoder still has a processor of its own.
func lowerThreadPriority(nice int) {
	_ = unix.Setpriority(unix.PRIO_PROCESS, unix.Gettid(), nice)
}
