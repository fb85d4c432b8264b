//go:build !linux

package cluster

// lowerThreadPriority leaves the thread's priority as it is: only Linux
// sets one thread's (setpriority on a thread id); the encoder still has a
// processor of its own.
func lowerThreadPriority(int) {}
