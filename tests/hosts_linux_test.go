//go:build linux

package tests

import (
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"

	"github.com/rlserver/rlserver/internal/rlproc"
)

// Hosts of their own for a test's nodes, on this machine: a Linux bridge
// and, per host, a network namespace joined to it by a veth pair, with an
// address of its own in a private subnet. A node run in one (ip netns exec)
// is as on a machine, or in a container, of its own: every node may listen
// on the same ports, and on every address. The test reaches the nodes at
// their hosts' addresses, through the bridge: nothing leaves the machine.
//
// Making them needs root (CAP_NET_ADMIN) and iproute2's ip. Without either
// the test is skipped, unless RLSERVER_REQUIRE_TOOLS=1 says the machine
// must have them (CI runs as root). Everything made is removed when the
// test ends, whatever its outcome; what a test process killed before its
// cleanup left behind is removed by the next test that makes hosts (its
// names carry the process's id).

// hostsMade numbers the sets of hosts this process made.
var hostsMade atomic.Int64

// namePrefix starts the names of every namespace and interface the tests
// make: rlt, then the process id.
const namePrefix = "rlt"

// newHosts makes n hosts on a bridge of their own and returns them.
func newHosts(t *testing.T, n int) []rlproc.Host {
	t.Helper()
	return newHostSet(t, n).hosts
}

// hostSet is hosts on one bridge: they reach each other, and the test
// reaches each of them. More can be added while the test runs (a node that
// joins needs a host of its own).
type hostSet struct {
	t      *testing.T
	set    string // the prefix of its names
	subnet string // "10.x.y"
	hosts  []rlproc.Host
	ns     []string // host i's network namespace
	made   []func() // what to undo when the test ends, in order made
}

// newHostSet makes a bridge and n hosts on it; everything made is removed
// when the test ends.
func newHostSet(t *testing.T, n int) *hostSet {
	t.Helper()
	if _, err := exec.LookPath("ip"); err != nil || os.Geteuid() != 0 {
		if os.Getenv("RLSERVER_REQUIRE_TOOLS") == "1" {
			t.Fatalf("network namespaces need root and ip (iproute2): euid %d, %v", os.Geteuid(), err)
		}
		t.Skip("network namespaces need root and ip (iproute2)")
	}
	removeStaleHosts(t)
	// At most 15 bytes an interface's name: rlt, 7 digits, a letter, v or
	// p and the host's number.
	hs := &hostSet{t: t, set: fmt.Sprintf("%s%d%c", namePrefix, os.Getpid(), 'a'+hostsMade.Add(1)%26), subnet: freeSubnet(t)}
	t.Cleanup(func() {
		for i := len(hs.made) - 1; i >= 0; i-- {
			hs.made[i]()
		}
	})
	bridge := hs.set + "b"
	hs.ip("link", "add", bridge, "type", "bridge")
	hs.made = append(hs.made, func() { exec.Command("ip", "link", "del", bridge).Run() })
	hs.ip("addr", "add", hs.subnet+".1/24", "dev", bridge)
	hs.ip("link", "set", bridge, "up")
	for range n {
		hs.add()
	}
	return hs
}

// ip runs ip with args, and fails the test if it fails.
func (hs *hostSet) ip(args ...string) {
	hs.t.Helper()
	if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
		hs.t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
	}
}

// add makes one more host on the set's bridge and returns it.
func (hs *hostSet) add() rlproc.Host {
	hs.t.Helper()
	i := len(hs.hosts)
	if i >= 240 {
		hs.t.Fatal("a set holds at most 240 hosts")
	}
	ns, outside, inside := fmt.Sprintf("%s-%d", hs.set, i), fmt.Sprintf("%sv%d", hs.set, i), fmt.Sprintf("%sp%d", hs.set, i)
	hs.ip("netns", "add", ns)
	hs.made = append(hs.made, func() { exec.Command("ip", "netns", "del", ns).Run() })
	hs.ip("link", "add", outside, "type", "veth", "peer", "name", inside)
	hs.ip("link", "set", inside, "netns", ns) // deleted with the namespace, and its pair with it
	hs.ip("link", "set", outside, "master", hs.set+"b", "up")
	ip := fmt.Sprintf("%s.%d", hs.subnet, 10+i)
	hs.ip("-n", ns, "addr", "add", ip+"/24", "dev", inside)
	hs.ip("-n", ns, "link", "set", inside, "up")
	hs.ip("-n", ns, "link", "set", "lo", "up")
	h := rlproc.Host{IP: ip, Wrap: []string{"ip", "netns", "exec", ns}}
	hs.hosts = append(hs.hosts, h)
	hs.ns = append(hs.ns, ns)
	return h
}

// freeSubnet picks a /24 in 10.200.0.0-10.249.255.0 that no interface of
// this machine is on, as "10.x.y".
func freeSubnet(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("ip", "-4", "-o", "addr").Output()
	if err != nil {
		t.Fatalf("ip addr: %v", err)
	}
	for range 100 {
		subnet := fmt.Sprintf("10.%d.%d", 200+rand.IntN(50), rand.IntN(256))
		if !strings.Contains(string(out), " "+subnet+".") {
			return subnet
		}
	}
	t.Fatal("no free 10.x.y.0/24 for the hosts")
	return ""
}

// removeStaleHosts removes the namespaces and bridges whose names say a
// test process made them that no longer runs.
func removeStaleHosts(t *testing.T) {
	t.Helper()
	stale := func(name string) bool {
		rest, ok := strings.CutPrefix(name, namePrefix)
		if !ok {
			return false
		}
		digits := rest[:len(rest)-len(strings.TrimLeft(rest, "0123456789"))]
		pid, err := strconv.Atoi(digits)
		return err == nil && pid > 0 && syscall.Kill(pid, 0) == syscall.ESRCH
	}
	if out, err := exec.Command("ip", "netns", "list").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 0 && stale(f[0]) {
				exec.Command("ip", "netns", "del", f[0]).Run()
			}
		}
	}
	if out, err := exec.Command("ip", "-o", "link", "show", "type", "bridge").Output(); err == nil {
		for _, line := range strings.Split(string(out), "\n") {
			if f := strings.Fields(line); len(f) > 1 && stale(strings.TrimSuffix(f[1], ":")) {
				exec.Command("ip", "link", "del", strings.TrimSuffix(f[1], ":")).Run()
			}
		}
	}
}
