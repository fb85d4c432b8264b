//go:build !unix

package server

// cpuTimes is not measured on this platform.
func cpuTimes() (user, sys float64) { return 0, 0 }
