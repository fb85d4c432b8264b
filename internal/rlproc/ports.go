package rlproc

import (
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
)

// handedOut are the ports freePorts has returned in this program, never
// returned twice: clusters planned at the same time get distinct ports.
var (
	portsMu   sync.Mutex
	handedOut = map[int]bool{}
)

// The kernel picks a port of its own, for a listen on port 0 or the source
// of an outgoing connection, from its ephemeral range
// (/proc/sys/net/ipv4/ip_local_port_range, 32768-60999 by default). A port
// found free there and let go until the node binds it can meanwhile become
// the source port of any connection a test opens: the bind then fails with
// "address already in use" (a membership test's proxy on a planned bus port
// met it while other packages' tests ran beside it). freePorts draws from
// below that range instead, where only an explicit bind takes a port.
const (
	lowestPlannedPort = 10000 // above the well-known and most registered ports
	plannedTries      = 1000  // draws before falling back to the kernel's choice
)

// plannedRange is the ports freePorts draws from, [lo, hi): empty where the
// ephemeral range cannot be read or leaves too few ports below it.
func plannedRange() (lo, hi int) {
	b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range")
	if err != nil {
		return 0, 0
	}
	f := strings.Fields(string(b))
	if len(f) != 2 {
		return 0, 0
	}
	ephemeral, err := strconv.Atoi(f[0])
	if err != nil || ephemeral-lowestPlannedPort < 1000 {
		return 0, 0
	}
	return lowestPlannedPort, ephemeral
}

// freePorts returns n distinct loopback ports that were free when asked
// and that it has not returned before, outside the kernel's ephemeral range
// where it can (see plannedRange). Another process may still bind one
// before rlserver does: Start's error then wraps ErrAddrInUse.
func freePorts(n int) ([]int, error) {
	portsMu.Lock()
	defer portsMu.Unlock()
	var lns []net.Listener
	defer func() {
		for _, ln := range lns {
			ln.Close()
		}
	}()
	lo, hi := plannedRange()
	var ports []int
	for tries := 0; len(ports) < n; tries++ {
		planned := hi > lo && tries < plannedTries
		addr := "127.0.0.1:0"
		if planned {
			p := lo + rand.IntN(hi-lo)
			if handedOut[p] {
				continue
			}
			addr = net.JoinHostPort("127.0.0.1", strconv.Itoa(p))
		}
		ln, err := net.Listen("tcp", addr)
		if err != nil {
			if planned {
				continue // taken: draw another
			}
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
