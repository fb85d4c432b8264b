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
	if _, err := exec.LookPath("ip"); err != nil || os.Geteuid() != 0 {
		if os.Getenv("RLSERVER_REQUIRE_TOOLS") == "1" {
			t.Fatalf("network namespaces need root and ip (iproute2): euid %d, %v", os.Geteuid(), err)
		}
		t.Skip("network namespaces need root and ip (iproute2)")
	}
	removeStaleHosts(t)
	// At most 15 bytes an interface's name: rlt, 7 digits, a letter, v or
	// p and the host's number.
	set := fmt.Sprintf("%s%d%c", namePrefix, os.Getpid(), 'a'+hostsMade.Add(1)%26)
	subnet := freeSubnet(t)
	bridge := set + "b"
	var made []func()
	t.Cleanup(func() {
		for i := len(made) - 1; i >= 0; i-- {
			made[i]()
		}
	})
	run := func(args ...string) {
		t.Helper()
		if out, err := exec.Command("ip", args...).CombinedOutput(); err != nil {
			t.Fatalf("ip %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	run("link", "add", bridge, "type", "bridge")
	made = append(made, func() { exec.Command("ip", "link", "del", bridge).Run() })
	run("addr", "add", subnet+".1/24", "dev", bridge)
	run("link", "set", bridge, "up")
	hosts := make([]rlproc.Host, n)
	for i := range n {
		ns, outside, inside := fmt.Sprintf("%s-%d", set, i), fmt.Sprintf("%sv%d", set, i), fmt.Sprintf("%sp%d", set, i)
		run("netns", "add", ns)
		made = append(made, func() { exec.Command("ip", "netns", "del", ns).Run() })
		run("link", "add", outside, "type", "veth", "peer", "name", inside)
		run("link", "set", inside, "netns", ns) // deleted with the namespace, and its pair with it
		run("link", "set", outside, "master", bridge, "up")
		ip := fmt.Sprintf("%s.%d", subnet, 10+i)
		run("-n", ns, "addr", "add", ip+"/24", "dev", inside)
		run("-n", ns, "link", "set", inside, "up")
		run("-n", ns, "link", "set", "lo", "up")
		hosts[i] = rlproc.Host{IP: ip, Wrap: []string{"ip", "netns", "exec", ns}}
	}
	return hosts
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
