package rlproc

import (
	"fmt"
	"net"
	"sync"
)

// handedOut are the ports freePorts has returned in this program, never
// returned twice: clusters planned at the same time get distinct ports.
var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// freePorts returns n distinct loopback ports that were free when asked
// and that it has not returned before. Another process may still take one
// before rlserver binds it: Start's error then wraps ErrAddrInUse.
func freePorts(n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	var ports []int
	for len(ports) < n {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, fmt.Errorf("a free port: %w", err)
		}
		lns = append(lns, ln) // held until all n are found, so none comes twice
		if p := ln.Addr().(*net.TCPAddr).Port; !handedOut[p] {
			handedOut[p] = true
			ports = append(ports, p)
		}
	}
	return ports, nil
}
