package tests

import (
	"os"
	"strconv"
	"testing"

	"github.com/rlserver/rlserver/internal/rlproc"
)

// TestMain lets the tests build ./cmd/rlserver once (see rlproc.Binary), so
// every test runs the real binary exactly as users do, and removes it
// afterwards, with the container images the tests built (containers_test.go).
func TestMain(m *testing.M) {
	code := rlproc.Main(m)
	removeTestImages()
	os.Exit(code)
}

// baseArgs are the flags every test server runs with: the debug clock and a
// free loopback port.
var baseArgs = []string{"--enable-debug-command", "--port", "0", "--bind", "127.0.0.1"}

// durableSuite, set by RLSERVER_E2E_DURABLE=1, runs every test's server in
// the durable mode (each shard a Raft group on disk) instead of --in-memory,
// to drive the replicated path with the whole suite.
var durableSuite = os.Getenv("RLSERVER_E2E_DURABLE") == "1"

// startServer runs rlserver --in-memory with baseArgs plus args, in a fresh
// working directory, and waits for its ready line. When the test ends it is
// stopped with SIGTERM, and the test fails unless it exits 0 (or if it died
// on its own).
func startServer(t testing.TB, args ...string) *rlproc.Process {
	t.Helper()
	if durableSuite {
		return startDurableServer(t, args...)
	}
	return launch(t, t.TempDir(), join([]string{"--in-memory"}, baseArgs, args)...)
}

// startDurableServer is startServer without --in-memory: the shards keep
// their state in rlserver-data in the fresh working directory.
func startDurableServer(t testing.TB, args ...string) *rlproc.Process {
	t.Helper()
	return launch(t, t.TempDir(), join(baseArgs, args)...)
}

// startServerOnPorts is startServer (durable: startDurableServer) with n
// free ports of the test's own, which args turns into flags (--metrics-port,
// --grpc-port, ...). The server is started again on other ports when
// another process takes one first (rlproc.LaunchOnPorts).
func startServerOnPorts(t testing.TB, durable bool, n int, args func(ports []string) []string) (*rlproc.Process, []string) {
	t.Helper()
	mode := []string{"--in-memory"}
	if durable || durableSuite {
		mode = nil
	}
	dir := t.TempDir()
	var named []string
	p, _ := rlproc.LaunchOnPorts(t, n, func(ports []int) rlproc.Config {
		named = named[:0]
		for _, port := range ports {
			named = append(named, strconv.Itoa(port))
		}
		return rlproc.Config{Dir: dir, Args: join(mode, baseArgs, args(named))}
	})
	return p, named
}

// join concatenates argument lists into a new slice.
func join(lists ...[]string) []string {
	var out []string
	for _, l := range lists {
		out = append(out, l...)
	}
	return out
}

// launch runs rlserver with exactly args in the working directory dir, as
// startServer does.
func launch(t testing.TB, dir string, args ...string) *rlproc.Process {
	t.Helper()
	return rlproc.Launch(t, rlproc.Config{Dir: dir, Args: args})
}

// runBinary runs rlserver with exactly args (no baseArgs), in a fresh
// working directory, and expects it to exit on its own; it returns stdout,
// stderr and the exit code.
func runBinary(t testing.TB, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	return runBinaryIn(t, t.TempDir(), args...)
}

// runBinaryIn is runBinary in the working directory dir.
func runBinaryIn(t testing.TB, dir string, args ...string) (stdout, stderr string, code int) {
	t.Helper()
	stdout, stderr, code, err := rlproc.Run(rlproc.Config{Bin: rlproc.Binary(t), Dir: dir, Args: args}, rlproc.StartTimeout)
	if err != nil {
		t.Fatalf("%v; stderr:\n%s", err, stderr)
	}
	return stdout, stderr, code
}
