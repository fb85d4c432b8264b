package tests

import (
	"bytes"
	"context"
	"io"
	"net"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
)

// redisCLI returns the path of redis-cli. Without it the test is skipped,
// unless RLSERVER_REQUIRE_TOOLS=1 says the machine must have it (CI).
func redisCLI(t testing.TB) string {
	t.Helper()
	return requireTool(t, "redis-cli", "")
}

// requireTool returns the path of the program name: the one the
// environment variable env names when it is set, else name on PATH.
// Without it the test is skipped, unless RLSERVER_REQUIRE_TOOLS=1 says the
// machine must have it (CI).
func requireTool(t testing.TB, name, env string) string {
	t.Helper()
	if path := os.Getenv(env); env != "" && path != "" {
		name = path
	}
	path, err := exec.LookPath(name)
	if err != nil {
		if os.Getenv("RLSERVER_REQUIRE_TOOLS") == "1" {
			t.Fatalf("%s: %v (and RLSERVER_REQUIRE_TOOLS=1)", name, err)
		}
		t.Skipf("%s: %v", name, err)
	}
	return path
}

// runCLI runs redis-cli with args and stdin, bounded in time: a redis-cli
// that hangs on one of rlserver's replies fails the test.
func runCLI(t testing.TB, stdin string, args ...string) string {
	t.Helper()
	cli := redisCLI(t)
	ctx, cancel := context.WithTimeout(context.Background(), cmdTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, cli, args...)
	cmd.Stdin = strings.NewReader(stdin)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	if ctx.Err() != nil {
		t.Fatalf("redis-cli %v hung (killed after %v); stdout:\n%s", args, cmdTimeout, stdout.String())
	}
	if err != nil || stderr.Len() > 0 {
		t.Fatalf("redis-cli %v: %v; stderr:\n%s", args, err, stderr.String())
	}
	return stdout.String()
}

// redis-cli one-shot, in its raw output (stdout not a terminal), --no-raw
// and RESP3 (-3) formats: what a user at a shell sees.
func TestRedisCLIOneShot(t *testing.T) {
	t.Parallel()
	srv := startServer(t)
	cli := func(args ...string) string {
		t.Helper()
		return runCLI(t, "", append([]string{"-h", "127.0.0.1", "-p", srv.Port()}, args...)...)
	}
	if got := cli("DEBUG", "CLOCK", "SET", itoa(t0)); got != itoa(t0)+"\n" {
		t.Fatalf("DEBUG CLOCK SET: %q", got)
	}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"RL.SLIDING", "k", "10", "1000"}, "1\n10\n9\n0\n2000\n"},
		{[]string{"-3", "RL.SLIDING", "k", "10", "1000"},
			"allowed 1\nlimit 10\nremaining 8\nretry_after_ms 0\nreset_after_ms 2000\n"},
		{[]string{"--no-raw", "RL.SLIDING", "k", "10", "1000"},
			"1) (integer) 1\n2) (integer) 10\n3) (integer) 7\n4) (integer) 0\n5) (integer) 2000\n"},
		{[]string{"-3", "--no-raw", "RL.SLIDING", "k", "10", "1000"},
			"1# \"allowed\" => (integer) 1\n2# \"limit\" => (integer) 10\n3# \"remaining\" => (integer) 6\n" +
				"4# \"retry_after_ms\" => (integer) 0\n5# \"reset_after_ms\" => (integer) 2000\n"},
		{[]string{"-3", "--no-raw", "CL.THROTTLE", "user123", "15", "30", "60"},
			"1) (integer) 0\n2) (integer) 16\n3) (integer) 15\n4) (integer) -1\n5) (integer) 2\n"},
		{[]string{"--no-raw", "RL.SLIDING", "k", "0", "1000"},
			"(error) ERR limit must be an integer from 1 to 1000000000000000\n"},
		{[]string{"--no-raw", "TYPE", "k"}, "rl.sliding\n"},
		{[]string{"--no-raw", "PTTL", "k"}, "(integer) 2000\n"},
		{[]string{"--no-raw", "RL.INFO", "nothing"}, "(nil)\n"},
	}
	for _, tc := range cases {
		if got := cli(tc.args...); got != tc.want {
			t.Errorf("redis-cli %v:\n got %q\nwant %q", tc.args, got, tc.want)
		}
	}
}

// redis-cli without a command reads commands from stdin through its
// interactive loop, which first asks for COMMAND DOCS (for its hints). That
// must neither fail nor hang, and the commands after it must work. A
// recording proxy between the two shows what redis-cli sent.
func TestRedisCLIInteractive(t *testing.T) {
	t.Parallel()
	redisCLI(t)
	srv := startServer(t)
	for _, resp3 := range []bool{false, true} {
		name := "RESP2"
		if resp3 {
			name = "RESP3"
		}
		t.Run(name, func(t *testing.T) {
			proxy := startProxy(t, srv.Addr)
			args := []string{"-h", "127.0.0.1", "-p", proxy.port()}
			if resp3 {
				args = append(args, "-3")
			}
			stdin := "DEBUG CLOCK SET " + itoa(t0) + "\n" +
				"RL.SLIDING cli:" + name + " 10 1000\n" +
				"RL.SLIDING cli:" + name + " 10 1000 COST 0\n" +
				"CL.THROTTLE cli:cell:" + name + " 15 30 60\n" +
				"PING\n"
			out := runCLI(t, stdin, args...)
			want := itoa(t0) + "\n1\n10\n9\n0\n2000\n1\n10\n9\n0\n2000\n0\n16\n15\n-1\n2\nPONG\n"
			if resp3 {
				want = itoa(t0) + "\n" +
					"allowed 1\nlimit 10\nremaining 9\nretry_after_ms 0\nreset_after_ms 2000\n" +
					"allowed 1\nlimit 10\nremaining 9\nretry_after_ms 0\nreset_after_ms 2000\n" +
					"0\n16\n15\n-1\n2\nPONG\n"
			}
			if out != want {
				t.Errorf("redis-cli %v fed on stdin:\n got %q\nwant %q", args, out, want)
			}
			sent, answered := proxy.recorded()
			if !strings.Contains(strings.ToUpper(sent), "COMMAND\r\n$4\r\nDOCS") {
				t.Errorf("redis-cli did not ask for COMMAND DOCS; it sent:\n%.300q", sent)
			}
			if strings.HasPrefix(answered, "-") {
				t.Errorf("redis-cli's first command was refused: %.200q", answered)
			}
		})
	}
	// The COMMAND DOCS reply is a map that documents the RL commands.
	docs, ok := do(t, srv.Client(t, 3), "COMMAND", "DOCS").(map[any]any)
	if !ok || docs["rl.sliding"] == nil || docs["cl.throttle"] == nil {
		t.Errorf("COMMAND DOCS does not document rl.sliding and cl.throttle")
	}
}

// redis-cli -a PASSWORD authenticates against --requirepass.
func TestRedisCLIPassword(t *testing.T) {
	t.Parallel()
	redisCLI(t)
	srv := startServer(t, "--requirepass", "s3cret")
	base := []string{"-h", "127.0.0.1", "-p", srv.Port(), "--no-auth-warning"}
	if got := runCLI(t, "", append(base, "-a", "s3cret", "PING")...); got != "PONG\n" {
		t.Errorf("with -a: %q", got)
	}
	if got := runCLI(t, "", append(base, "--no-raw", "PING")...); got != "(error) NOAUTH Authentication required.\n" {
		t.Errorf("without -a: %q", got)
	}
}

// proxy forwards TCP connections to a server and records both directions of
// the first one.
type proxy struct {
	ln       net.Listener
	mu       sync.Mutex
	sent     bytes.Buffer // client to server
	answered bytes.Buffer // server to client
	wg       sync.WaitGroup
}

// startProxy listens on a free loopback port and forwards to addr until the
// test ends.
func startProxy(t testing.TB, addr string) *proxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{ln: ln}
	t.Cleanup(func() {
		ln.Close()
		p.wg.Wait()
	})
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		first := true
		for {
			client, err := ln.Accept()
			if err != nil {
				return
			}
			p.wg.Add(1)
			go p.forward(client, addr, first)
			first = false
		}
	}()
	return p
}

func (p *proxy) forward(client net.Conn, addr string, record bool) {
	defer p.wg.Done()
	defer client.Close()
	upstream, err := net.Dial("tcp", addr)
	if err != nil {
		return
	}
	defer upstream.Close()
	copyRecorded := func(dst, src net.Conn, rec *bytes.Buffer) {
		var w io.Writer = dst
		if record {
			w = io.MultiWriter(lockedWriter{&p.mu, rec}, dst) // recorded before the peer can see it
		}
		io.Copy(w, src)
		// Pass the close on, so the other side's copy ends too.
		dst.Close()
		src.Close()
	}
	done := make(chan struct{})
	go func() {
		copyRecorded(upstream, client, &p.sent)
		close(done)
	}()
	copyRecorded(client, upstream, &p.answered)
	<-done
}

func (p *proxy) port() string {
	return itoa(int64(p.ln.Addr().(*net.TCPAddr).Port))
}

// recorded returns what the first client sent and what it was answered.
func (p *proxy) recorded() (sent, answered string) {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.sent.String(), p.answered.String()
}

// lockedWriter writes to a buffer under a mutex.
type lockedWriter struct {
	mu  *sync.Mutex
	buf *bytes.Buffer
}

func (w lockedWriter) Write(b []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.Write(b)
}
