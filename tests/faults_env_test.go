//go:build linux

package tests

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"github.com/rlserver/rlserver/internal/rlproc"
	"go.etcd.io/bbolt"
)

// busNet is the network between the nodes of a cluster, made by the test:
// --cluster (or a joined node's --announce) names a proxy as each node's
// bus, and each node listens elsewhere (--bus-listen), so every connection
// between two nodes passes a proxy. The proxies find which node opened each
// connection, so a test can cut one node off from the others, both ways,
// and heal it. Clients still reach every node directly.
type busNet struct {
	mu       sync.Mutex
	proxies  []net.Listener // node i's proxy, where the others dial it
	targets  []string       // node i's real bus address
	pids     []int          // node i's process, 0 before it starts
	isolated int            // the node cut off, -1 for none
	links    map[*busLink]struct{}
	wg       sync.WaitGroup
}

// busLink is one proxied connection from node from (-1: not known yet) to
// node to.
type busLink struct {
	from, to  int
	down, up  net.Conn
	closeOnce sync.Once
}

// close closes both sides of the link.
func (b *busLink) close() {
	b.closeOnce.Do(func() {
		b.down.Close()
		if b.up != nil {
			b.up.Close()
		}
	})
}

// newBusNet puts proxies on the bus ports of tc's nodes (see add); tc must
// not have started.
func newBusNet(t testing.TB, tc *testCluster) *busNet {
	t.Helper()
	n := &busNet{isolated: -1, links: map[*busLink]struct{}{}}
	t.Cleanup(func() {
		n.mu.Lock()
		for _, ln := range n.proxies {
			ln.Close()
		}
		for l := range n.links {
			l.close()
		}
		n.mu.Unlock()
		n.wg.Wait()
	})
	for i, node := range tc.Nodes {
		n.add(t, i, node)
	}
	return n
}

// add puts a proxy on the bus address the others dial node i at, and moves
// the node's own bus listener to a free port (--bus-listen); the node must
// not have started, and the nodes before it must have been added.
func (n *busNet) add(t testing.TB, i int, node *rlproc.Node) {
	t.Helper()
	n.mu.Lock()
	defer n.mu.Unlock()
	if i != len(n.proxies) {
		t.Fatalf("n%d added to the bus after %d nodes", i+1, len(n.proxies))
	}
	ln, err := net.Listen("tcp", node.BusAddr)
	if err != nil {
		t.Fatalf("proxy for n%d's bus: %v", i+1, err)
	}
	target := fmt.Sprintf("127.0.0.1:%d", rlproc.Ports(t, 1)[0])
	node.Config.Args = append(node.Config.Args, "--bus-listen", target)
	n.proxies = append(n.proxies, ln)
	n.targets = append(n.targets, target)
	n.pids = append(n.pids, 0)
	n.wg.Add(1)
	go n.accept(ln, i)
}

// launch starts every node of tc and records its process.
func (n *busNet) launch(tc *testCluster) {
	tc.t.Helper()
	for i := range tc.Nodes {
		tc.start(i)
		n.started(i, tc.node(i))
	}
}

// join plans a node that joins tc through node via, behind a proxy of its
// own (its --announce names the proxy), starts it, records its process and
// returns its index.
func (n *busNet) join(tc *testCluster, via int) int {
	tc.t.Helper()
	node, err := tc.Join(tc.Nodes[via])
	if err != nil {
		tc.t.Fatal(err)
	}
	i := len(tc.Nodes) - 1
	n.add(tc.t, i, node)
	tc.start(i)
	n.started(i, tc.node(i))
	return i
}

// started records node i's process, so its connections can be told apart.
func (n *busNet) started(i int, p *rlproc.Process) {
	n.mu.Lock()
	n.pids[i] = p.Pid()
	n.mu.Unlock()
}

// accept proxies the connections to node to's bus until the proxy closes.
func (n *busNet) accept(ln net.Listener, to int) {
	defer n.wg.Done()
	for {
		conn, err := ln.Accept()
		if err != nil {
			return
		}
		n.wg.Add(1)
		go func() {
			defer n.wg.Done()
			n.serve(conn, to)
		}()
	}
}

// serve relays one connection to node to, unless it crosses the cut.
//
// Where a connection comes from is looked up (socketOwner) only when it
// decides something: while a node is cut off, for a connection to another
// node, and when a cut begins, for the links open then (cut). The lookup
// reads /proc; looked up for every connection, on a loaded machine, the
// lookups fell behind the dials of a cut node and its peers, and the proxy
// piled up connections by the thousand until the test process stalled.
func (n *busNet) serve(conn net.Conn, to int) {
	n.mu.Lock()
	pids := slices.Clone(n.pids)
	target := n.targets[to]
	isolated := n.isolated
	n.mu.Unlock()
	if isolated == to {
		conn.Close()
		return
	}
	from := -1
	if isolated >= 0 {
		from = socketOwner(conn.RemoteAddr().(*net.TCPAddr).Port, conn.LocalAddr().(*net.TCPAddr).Port, pids)
	}
	link := &busLink{from: from, to: to, down: conn}
	n.mu.Lock()
	if n.cuts(link) {
		n.mu.Unlock()
		conn.Close()
		return
	}
	n.links[link] = struct{}{}
	n.mu.Unlock()
	defer func() {
		link.close()
		n.mu.Lock()
		delete(n.links, link)
		n.mu.Unlock()
	}()
	up, err := net.DialTimeout("tcp", target, time.Second)
	if err != nil {
		return
	}
	n.mu.Lock()
	link.up = up
	cut := n.cuts(link)
	n.mu.Unlock()
	if cut {
		up.Close()
		return
	}
	done := make(chan struct{})
	go func() {
		io.Copy(up, conn)
		link.close()
		close(done)
	}()
	io.Copy(conn, up)
	link.close()
	<-done
}

// cuts reports whether link crosses the cut; n.mu is held. A link whose
// origin is unknown is cut too: it is opened again, and known, at once.
func (n *busNet) cuts(l *busLink) bool {
	return n.isolated >= 0 && (l.from == n.isolated || l.to == n.isolated || l.from < 0)
}

// cut isolates node i: its open links close and new ones are refused.
func (n *busNet) cut(i int) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.isolated = i
	for l := range n.links {
		if l.from < 0 && l.to != i {
			l.from = socketOwner(l.down.RemoteAddr().(*net.TCPAddr).Port, l.down.LocalAddr().(*net.TCPAddr).Port, n.pids)
		}
		if n.cuts(l) {
			l.close()
		}
	}
}

// heal lets every link through again.
func (n *busNet) heal() {
	n.mu.Lock()
	n.isolated = -1
	n.mu.Unlock()
}

// socketOwner returns the index in pids of the process holding the loopback
// TCP socket whose local port is port and whose peer's port is peer, or -1.
// It reads /proc: the socket's inode from /proc/net/tcp, then the process
// whose file descriptors include it.
func socketOwner(port, peer int, pids []int) int {
	f, err := os.Open("/proc/net/tcp")
	if err != nil {
		return -1
	}
	defer f.Close()
	local, remote := fmt.Sprintf("0100007F:%04X", port), fmt.Sprintf("0100007F:%04X", peer)
	inode := ""
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		// sl local_address rem_address st tx:rx tr:when retrnsmt uid timeout inode
		fields := strings.Fields(sc.Text())
		if len(fields) > 9 && fields[1] == local && fields[2] == remote {
			inode = fields[9]
			break
		}
	}
	if inode == "" || inode == "0" {
		return -1
	}
	want := "socket:[" + inode + "]"
	for i, pid := range pids {
		if pid == 0 {
			continue
		}
		dir := "/proc/" + strconv.Itoa(pid) + "/fd"
		fds, _ := os.ReadDir(dir)
		for _, fd := range fds {
			if target, _ := os.Readlink(dir + "/" + fd.Name()); target == want {
				return i
			}
		}
	}
	return -1
}

// diskFault makes one node's data directory full, and frees it again.
type diskFault struct {
	name string
	// how says how the disk is made full, for the log.
	how string
	// wrap returns the command prefix node i runs under (nil for none), or
	// a reason why this machine cannot make this fault.
	wrap func(t testing.TB, dataDir string) ([]string, string)
	// fill makes the node's data directory full; free undoes it.
	fill, free func(t testing.TB, p *rlproc.Process, dataDir string)
}

// diskFaults are the ways a test can fill a node's disk without root: a
// real full file system (a small tmpfs mounted in a user namespace of the
// node's own, filled with a ballast file), and, where user namespaces are
// not allowed, the closest stand-in: a file size limit (RLIMIT_FSIZE, set on
// the running process) at the size of its largest file, so that no file can
// grow, as on a full disk, though writes fail with EFBIG, not ENOSPC.
var diskFaults = []diskFault{
	{
		name: "tmpfs",
		how:  "ENOSPC: a tmpfs of its own, filled with a ballast file",
		wrap: func(t testing.TB, dataDir string) ([]string, string) {
			if reason := userNamespaceMounts(t); reason != "" {
				return nil, reason
			}
			// sh mounts the tmpfs on the data directory, then becomes
			// rlserver (exec), in a mount namespace nobody else sees.
			return []string{"unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
				`mkdir -p "$1" && mount -t tmpfs -o size=64m tmpfs "$1" && shift && exec "$@"`, "sh", dataDir}, ""
		},
		fill: func(t testing.TB, p *rlproc.Process, dataDir string) {
			t.Helper()
			// The node's mount is reached through its /proc root.
			ballast := fmt.Sprintf("/proc/%d/root%s/ballast", p.Pid(), dataDir)
			f, err := os.Create(ballast)
			if err != nil {
				t.Fatalf("ballast: %v", err)
			}
			defer f.Close()
			chunk := make([]byte, 1<<20)
			for {
				if _, err := f.Write(chunk); err != nil {
					if !errors.Is(err, syscall.ENOSPC) {
						t.Fatalf("filling the tmpfs: %v", err)
					}
					break
				}
			}
			// Fill the last pages, smaller than a chunk, too.
			for _, err := f.Write(chunk[:4096]); err == nil; _, err = f.Write(chunk[:4096]) {
			}
		},
		free: func(t testing.TB, p *rlproc.Process, dataDir string) {
			t.Helper()
			if err := os.Remove(fmt.Sprintf("/proc/%d/root%s/ballast", p.Pid(), dataDir)); err != nil {
				t.Fatalf("removing the ballast: %v", err)
			}
		},
	},
	{
		name: "rlimit",
		how:  "EFBIG: RLIMIT_FSIZE at the size of its largest file",
		wrap: func(testing.TB, string) ([]string, string) { return nil, "" },
		fill: func(t testing.TB, p *rlproc.Process, dataDir string) {
			t.Helper()
			var largest int64
			filepath.WalkDir(dataDir, func(_ string, d fs.DirEntry, err error) error {
				if err == nil && d.Type().IsRegular() {
					if info, err := d.Info(); err == nil {
						largest = max(largest, info.Size())
					}
				}
				return nil
			})
			setFileSizeLimit(t, p.Pid(), uint64(largest))
		},
		free: func(t testing.TB, p *rlproc.Process, _ string) {
			t.Helper()
			setFileSizeLimit(t, p.Pid(), rlimInfinity)
		},
	},
}

const rlimInfinity = ^uint64(0)

// setFileSizeLimit sets the soft RLIMIT_FSIZE of process pid (prlimit(2));
// the hard limit stays, so the limit can be lifted again without privilege.
// The Go runtime ignores the SIGXFSZ the kernel sends, so a write past the
// limit fails with EFBIG.
func setFileSizeLimit(t testing.TB, pid int, limit uint64) {
	t.Helper()
	var old syscall.Rlimit
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, 0, uintptr(unsafe.Pointer(&old)), 0, 0); errno != 0 {
		t.Fatalf("prlimit: %v", errno)
	}
	limits := syscall.Rlimit{Cur: min(limit, old.Max), Max: old.Max}
	if _, _, errno := syscall.RawSyscall6(syscall.SYS_PRLIMIT64, uintptr(pid), syscall.RLIMIT_FSIZE, uintptr(unsafe.Pointer(&limits)), 0, 0, 0); errno != 0 {
		t.Fatalf("prlimit: %v", errno)
	}
}

var (
	userNSOnce   sync.Once
	userNSReason string
)

// userNamespaceMounts returns why this machine cannot give a node a tmpfs
// of its own as the "tmpfs" disk fault does (no unshare, unprivileged user
// namespaces disabled, /proc/PID/root out of reach), or "" when it can.
func userNamespaceMounts(t testing.TB) string {
	userNSOnce.Do(func() { userNSReason = probeUserNamespaceMount() })
	return userNSReason
}

// probeUserNamespaceMount mounts a tmpfs in a user namespace as the fault's
// wrap does, and writes into it through /proc/PID/root as its fill does.
func probeUserNamespaceMount() string {
	dir, err := os.MkdirTemp("", "rlserver-userns-")
	if err != nil {
		return err.Error()
	}
	defer os.RemoveAll(dir)
	cmd := exec.Command("unshare", "--user", "--map-root-user", "--mount", "sh", "-c",
		`mount -t tmpfs -o size=1m tmpfs "$1" && echo mounted && exec sleep 60`, "sh", dir)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return err.Error()
	}
	if err := cmd.Start(); err != nil {
		return fmt.Sprintf("no unshare here: %v", err)
	}
	line, _ := bufio.NewReader(out).ReadString('\n')
	if line != "mounted\n" {
		err := cmd.Wait()
		return fmt.Sprintf("cannot mount a tmpfs in a user namespace here (%v: %s)", err, strings.TrimSpace(stderr.String()))
	}
	defer func() {
		cmd.Process.Kill()
		cmd.Wait()
	}()
	if err := os.WriteFile(fmt.Sprintf("/proc/%d/root%s/probe", cmd.Process.Pid, dir), []byte("x"), 0o600); err != nil {
		return fmt.Sprintf("cannot reach a tmpfs in a user namespace through /proc: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "probe")); err == nil {
		return "a tmpfs mounted in a user namespace shows outside it"
	}
	return ""
}

// logDamage is one way the tail of a shard's Raft log store (raft-boltdb's
// bbolt file) can be damaged while its node is down: what a torn write, a
// lost page or a flipped bit leaves behind. bbolt checksums only its meta
// pages, and raft-boltdb stores each entry as plain msgpack, so none of
// these is caught by the storage layers themselves.
type logDamage struct {
	name string
	// damage changes the store at path; keys are key names the log's
	// commands may carry.
	damage func(t testing.TB, path string, keys []string)
}

var logDamages = []logDamage{
	{"last entry cut short", func(t testing.TB, path string, _ []string) {
		changeEntry(t, path, nil, func(v []byte) []byte { return v[:len(v)/2] })
	}},
	{"last entry overwritten", func(t testing.TB, path string, _ []string) {
		changeEntry(t, path, nil, func(v []byte) []byte { return bytes.Repeat([]byte{0xa5}, len(v)) })
	}},
	{"a key in the last command entry changed", func(t testing.TB, path string, keys []string) {
		// One byte of a key's name: the entry still decodes, to a command
		// for another key.
		changeEntry(t, path, keys, func(v []byte) []byte {
			for _, k := range keys {
				if i := bytes.LastIndex(v, []byte(k)); i >= 0 {
					v = bytes.Clone(v)
					v[i+len(k)-1] ^= 0x01
					return v
				}
			}
			t.Fatal("no key in the entry")
			return nil
		})
	}},
	{"file cut short", func(t testing.TB, path string, _ []string) {
		info, err := os.Stat(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(path, info.Size()/2+1234); err != nil {
			t.Fatal(err)
		}
	}},
}

// changeEntry rewrites the value of the last entry in the Raft log store at
// path, or, when keys are given, of the last entry naming one of them.
func changeEntry(t testing.TB, path string, keys []string, change func([]byte) []byte) {
	t.Helper()
	db, err := bbolt.Open(path, 0o600, &bbolt.Options{Timeout: time.Second})
	if err != nil {
		t.Fatalf("open %s: %v", path, err)
	}
	defer db.Close()
	err = db.Update(func(tx *bbolt.Tx) error {
		logs := tx.Bucket([]byte("logs"))
		if logs == nil {
			return errors.New("no logs bucket")
		}
		c := logs.Cursor()
		for k, v := c.Last(); k != nil; k, v = c.Prev() {
			if keys == nil || slices.ContainsFunc(keys, func(key string) bool { return bytes.Contains(v, []byte(key)) }) {
				return logs.Put(bytes.Clone(k), change(bytes.Clone(v)))
			}
		}
		return errors.New("no entry to damage")
	})
	if err != nil {
		t.Fatalf("damaging %s: %v", path, err)
	}
}
