package tests

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/testcert"
)

// sha256Hex is an aclfile's #<hash> of a password.
func sha256Hex(pass string) string {
	sum := sha256.Sum256([]byte(pass))
	return hex.EncodeToString(sum[:])
}

// writeFile writes text to a file in a fresh directory and returns its path.
func writeFile(t *testing.T, name, text string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(text), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

// An aclfile's users, through go-redis as applications connect
// (Options.Username and Password: HELLO 3 AUTH, or AUTH then RESP2): each
// runs what its rules allow and gets Redis's NOPERM for the rest; wrong
// passwords and unknown or disabled users get WRONGPASS; a client that does
// not authenticate gets NOAUTH, the default user being off.
func TestACLUsers(t *testing.T) {
	t.Parallel()
	users := writeFile(t, "users.acl", fmt.Sprintf(`user default off
user app on #%s ~* +@ratelimit +@connection -@dangerous
user monitor on #%s ~* +@read +@connection -@dangerous
user admin on #%s ~* +@all
user tenant on #%s ~tenant:* +@ratelimit +@connection -@dangerous
user retired off #%s ~* +@all
`, sha256Hex("app-pw"), sha256Hex("mon-pw"), sha256Hex("admin-pw"), sha256Hex("t-pw"), sha256Hex("old-pw")))
	srv := startServer(t, "--aclfile", users)
	as := func(user, pass string, protocol int) *redis.Client {
		return srv.Client(t, protocol, func(o *redis.Options) { o.Username, o.Password = user, pass })
	}
	noPerm := func(user, cmd string) string {
		return fmt.Sprintf("NOPERM User %s has no permissions to run the '%s' command", user, cmd)
	}
	const wrongPass = "WRONGPASS invalid username-password pair or user is disabled."

	if got := doErr(t, srv.Client(t, 2), "RL.SLIDING", "k", 10, 60000); got != "NOAUTH Authentication required." {
		t.Errorf("without a user: %q", got)
	}
	for _, who := range [][2]string{{"app", "wrong"}, {"nobody", "app-pw"}, {"retired", "old-pw"}, {"default", ""}} {
		for _, protocol := range []int{2, 3} {
			if got := doErr(t, as(who[0], who[1], protocol), "PING"); !strings.Contains(got, wrongPass) && !strings.Contains(got, "NOAUTH") {
				t.Errorf("RESP%d as %s/%s: %q", protocol, who[0], who[1], got)
			}
		}
	}

	for _, protocol := range []int{2, 3} {
		app := as("app", "app-pw", protocol)
		if d := decide(t, app, "RL.SLIDING app:ada 10 60000"); !d.Allowed {
			t.Errorf("RESP%d app's decision: %v", protocol, d)
		}
		for _, c := range []struct {
			args []any
			cmd  string
		}{
			{[]any{"RL.POLICY", "SET", "free", "SLIDING", "10", "60000"}, "rl.policy|set"},
			{[]any{"RL.RESET", "app:ada"}, "rl.reset"},
			{[]any{"FLUSHALL"}, "flushall"},
			{[]any{"CONFIG", "GET", "maxclients"}, "config|get"},
			{[]any{"CLIENT", "LIST"}, "client|list"},
			{[]any{"DEBUG", "CLOCK", "GET"}, "debug|clock"},
		} {
			if got := doErr(t, app, c.args...); got != noPerm("app", c.cmd) {
				t.Errorf("app %v: %q", c.args, got)
			}
		}
	}

	monitor := as("monitor", "mon-pw", 3)
	if n := doInt(t, monitor, "EXISTS", "app:ada"); n != 1 {
		t.Errorf("monitor EXISTS: %d", n)
	}
	if info := do(t, monitor, "INFO", "ratelimit").(string); !strings.Contains(info, "rl_decisions_allowed:2") {
		t.Errorf("monitor INFO: %q", info)
	}
	if got := doErr(t, monitor, "RL.SLIDING", "app:ada", 10, 60000); got != noPerm("monitor", "rl.sliding") {
		t.Errorf("monitor decides: %q", got)
	}

	tenant := as("tenant", "t-pw", 3)
	if d := decide(t, tenant, "RL.SLIDING tenant:1 10 60000"); !d.Allowed {
		t.Errorf("tenant on its keys: %v", d)
	}
	if got := doErr(t, tenant, "RL.SLIDING", "app:ada", 10, 60000); got != "NOPERM No permissions to access a key" {
		t.Errorf("tenant on another's key: %q", got)
	}

	admin := as("admin", "admin-pw", 2)
	if got := do(t, admin, "RL.POLICY", "SET", "free", "SLIDING", "10", "60000"); got != "OK" {
		t.Errorf("admin RL.POLICY SET: %v", got)
	}
	if got := do(t, admin, "ACL", "WHOAMI"); got != "admin" {
		t.Errorf("ACL WHOAMI: %v", got)
	}
	users2 := do(t, admin, "ACL", "USERS").([]any)
	if len(users2) != 6 {
		t.Errorf("ACL USERS: %v", users2)
	}
	if got := doErr(t, admin, "ACL", "SETUSER", "x", "on"); !strings.HasPrefix(got, "ERR ACL SETUSER is not supported") {
		t.Errorf("ACL SETUSER: %q", got)
	}
}

// An aclfile that would not do what it says stops the start, naming the
// file, the line and the rule.
func TestACLFileErrorStopsTheStart(t *testing.T) {
	t.Parallel()
	users := writeFile(t, "users.acl", "user default off\nuser app on >pw ~* +@ratelimit -flushal\n")
	_, stderr, code := runBinary(t, "--in-memory", "--port", "0", "--aclfile", users)
	want := "rlserver: --aclfile " + users + ":2: Unknown command or category name in ACL in rule '-flushal'"
	if code != 2 || !strings.Contains(stderr, want) {
		t.Fatalf("exit %d, stderr %q; want 2 and %q", code, stderr, want)
	}
}

// Protected mode: a server listening on every interface, without a
// password, refuses a client that reaches it through an address other than
// loopback with Redis's DENIED text (naming rlserver and its flags), and
// serves loopback clients; with --protected-mode no, or a password, the
// remote client is let in (to authenticate). The test needs an address of
// this machine other than loopback: without one it says so and skips, and
// server's TestProtectedModeDecision covers the decision with injected
// addresses.
func TestProtectedMode(t *testing.T) {
	t.Parallel()
	ip := nonLoopbackIPv4(t)
	srv := startServer(t, "--bind", "0.0.0.0")
	remote := dialRaw(t, net.JoinHostPort(ip, srv.Port()))
	got := remote.reply()
	if !strings.HasPrefix(got, "-DENIED rlserver is running in protected mode because protected mode is enabled and no password is set for the default user.") ||
		!strings.Contains(got, "--requirepass") || !strings.Contains(got, "'--protected-mode no'") {
		t.Fatalf("a client from %s got %q", ip, got)
	}
	remote.expectClosed()
	local := srv.Client(t, 3)
	if got := do(t, local, "CONFIG", "GET", "protected-mode"); fmt.Sprint(got) != "map[protected-mode:yes]" {
		t.Errorf("CONFIG GET protected-mode: %v", got)
	}

	open := startServer(t, "--bind", "0.0.0.0", "--protected-mode", "no")
	c := dialRaw(t, net.JoinHostPort(ip, open.Port()))
	c.send(command("PING"))
	if got := c.reply(); got != "+PONG" {
		t.Errorf("--protected-mode no: %q", got)
	}
	locked := startServer(t, "--bind", "0.0.0.0", "--requirepass", "s3cret")
	c = dialRaw(t, net.JoinHostPort(ip, locked.Port()))
	c.send(command("PING"))
	if got := c.reply(); got != "-NOAUTH Authentication required." {
		t.Errorf("with a password: %q", got)
	}
}

// nonLoopbackIPv4 is one of this machine's IPv4 addresses other than
// loopback, or skips the test.
func nonLoopbackIPv4(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err == nil {
		for _, a := range addrs {
			if n, ok := a.(*net.IPNet); ok && n.IP.To4() != nil && !n.IP.IsLoopback() && !n.IP.IsLinkLocalUnicast() {
				return n.IP.String()
			}
		}
	}
	t.Skip("this machine has no IPv4 address but loopback: protected mode's refusal is tested by its decision alone (server.TestProtectedModeDecision)")
	return ""
}

// tlsSetup writes a CA and the server's certificate from it (for
// 127.0.0.1), and a client certificate, to a fresh directory.
type tlsSetup struct {
	ca                    *testcert.CA
	caFile                string
	certFile, keyFile     string // the server's
	clientCert, clientKey string
}

func newTLSSetup(t *testing.T) tlsSetup {
	dir := t.TempDir()
	s := tlsSetup{ca: testcert.NewCA(t, "rlserver test CA")}
	s.caFile = s.ca.Write(t, dir, "ca.crt")
	s.certFile, s.keyFile = s.ca.Issue(t, "rlserver", "127.0.0.1", "localhost").Write(t, dir, "server")
	s.clientCert, s.clientKey = s.ca.Issue(t, "client").Write(t, dir, "client")
	return s
}

// args are the server's TLS flags.
func (s tlsSetup) args(port string, auth string) []string {
	return []string{"--tls-port", port, "--tls-cert-file", s.certFile, "--tls-key-file", s.keyFile,
		"--tls-ca-cert-file", s.caFile, "--tls-auth-clients", auth}
}

// TLS for clients, beside the plain port: go-redis with a tls.Config
// (RESP2 and RESP3) and redis-cli --tls --cacert decide on the TLS port,
// sharing state with the plain port; CONFIG GET reports both ports.
func TestTLSClients(t *testing.T) {
	t.Parallel()
	s := newTLSSetup(t)
	srv, ports := startServerOnPorts(t, false, 2, func(ports []string) []string {
		return append(s.args(ports[1], "no"), "--port", ports[0]) // --port 0 beside --tls-port would mean TLS only
	})
	port := ports[1]
	tlsAddr := net.JoinHostPort("127.0.0.1", port)
	for _, protocol := range []int{2, 3} {
		c := srv.Client(t, protocol, func(o *redis.Options) {
			o.Addr, o.TLSConfig = tlsAddr, &tls.Config{RootCAs: s.ca.Pool(), MinVersion: tls.VersionTLS12}
		})
		if d := decide(t, c, "RL.SLIDING tls:ada 10 60000"); !d.Allowed || d.Remaining != int64(9-protocol+2) {
			t.Errorf("RESP%d over TLS: %v", protocol, d)
		}
	}
	if n := doInt(t, srv.Client(t, 2), "EXISTS", "tls:ada"); n != 1 {
		t.Errorf("the plain port does not see the TLS port's key")
	}
	out := runCLI(t, "", "--tls", "--cacert", s.caFile, "-h", "127.0.0.1", "-p", port, "RL.SLIDING", "tls:ada", "10", "60000")
	if lines := strings.Fields(out); len(lines) != 5 || lines[0] != "1" || lines[2] != "7" {
		t.Errorf("redis-cli --tls: %q", out)
	}
	out = runCLI(t, "", "--tls", "--cacert", s.caFile, "-h", "127.0.0.1", "-p", port, "CONFIG", "GET", "*port")
	if want := fmt.Sprintf("port\n%s\ntls-port\n%s\n", srv.Port(), port); out != want {
		t.Errorf("CONFIG GET *port: %q, want %q", out, want)
	}
}

// --tls-auth-clients yes (the default, as Redis): a client must present a
// certificate from --tls-ca-cert-file. redis-cli with --cert and --key is
// served; without them its connection fails. With --port 0 only TLS is
// served, and the ready line gives the TLS address.
func TestTLSClientCertificates(t *testing.T) {
	t.Parallel()
	s := newTLSSetup(t)
	srv, ports := startServerOnPorts(t, false, 1, func(ports []string) []string {
		args := s.args(ports[0], "yes")
		return append(args[:len(args)-2], "--port", "0")
	})
	if port := ports[0]; srv.Port() != port {
		t.Fatalf("TLS only: the ready line's address is %s, want port %s", srv.Addr, port)
	}
	cli := []string{"--tls", "--cacert", s.caFile, "-h", "127.0.0.1", "-p", srv.Port()}
	if out := runCLI(t, "", append(cli, "--cert", s.clientCert, "--key", s.clientKey, "PING")...); out != "PONG\n" {
		t.Errorf("with a client certificate: %q", out)
	}
	if out := runCLI(t, "", append(cli, "--cert", s.clientCert, "--key", s.clientKey, "CONFIG", "GET", "port")...); out != "port\n0\n" {
		t.Errorf("TLS only: CONFIG GET port = %q", out)
	}
	if out, err := cliResult(t, append(cli, "PING")...); err == nil && strings.Contains(out, "PONG") {
		t.Errorf("without a client certificate: served (%q)", out)
	}
	noCert := srv.Client(t, 2, func(o *redis.Options) {
		o.TLSConfig = &tls.Config{RootCAs: s.ca.Pool(), MinVersion: tls.VersionTLS12}
	})
	if err := noCert.Ping(ctx(t)).Err(); err == nil {
		t.Error("go-redis without a client certificate: served")
	}
	withCert := srv.Client(t, 3, func(o *redis.Options) {
		pair, err := tls.LoadX509KeyPair(s.clientCert, s.clientKey)
		if err != nil {
			t.Fatal(err)
		}
		o.TLSConfig = &tls.Config{RootCAs: s.ca.Pool(), Certificates: []tls.Certificate{pair}, MinVersion: tls.VersionTLS12}
	})
	if d := decide(t, withCert, "RL.TOKEN cert:1 5 1 1000"); !d.Allowed {
		t.Errorf("go-redis with a client certificate: %v", d)
	}
}

// --timeout: a connection that sends nothing for that long is closed, one
// that keeps sending is not; CONFIG GET timeout reports it.
func TestIdleTimeout(t *testing.T) {
	t.Parallel()
	srv := startServer(t, "--timeout", "1")
	idle, busy := dialRaw(t, srv.Addr), dialRaw(t, srv.Addr)
	start := time.Now()
	idle.send(command("PING"))
	if got := idle.reply(); got != "+PONG" {
		t.Fatal(got)
	}
	closed := make(chan time.Duration, 1)
	go func() {
		idle.conn.SetReadDeadline(time.Now().Add(cmdTimeout))
		idle.conn.Read(make([]byte, 1))
		closed <- time.Since(start)
	}()
	tick := time.NewTicker(250 * time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case took := <-closed:
			if took < time.Second || took > 5*time.Second {
				t.Errorf("the idle connection was closed after %v, want about 1 s", took)
			}
			busy.send(command("CONFIG", "GET", "timeout"))
			if got := busy.reply(); got != "*[$timeout $1]" {
				t.Errorf("CONFIG GET timeout: %s", got)
			}
			return
		case <-tick.C:
			busy.send(command("PING"))
			if got := busy.reply(); got != "+PONG" {
				t.Fatalf("the busy connection: %s", got)
			}
		}
	}
}

// cliResult runs redis-cli, which may fail, bounded in time, and returns
// its output.
func cliResult(t *testing.T, args ...string) (string, error) {
	t.Helper()
	c, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	out, err := exec.CommandContext(c, redisCLI(t), args...).CombinedOutput()
	if c.Err() != nil {
		t.Fatalf("redis-cli %v hung", args)
	}
	return string(out), err
}
