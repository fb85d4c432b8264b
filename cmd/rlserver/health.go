package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"time"
)

// rlserver health asks a running node whether it is ready: it reads
// /readyz on the node's metrics port (/healthz with --live) and exits 0 on
// a 200, 1 on anything else. It is the image's HEALTHCHECK: the image holds
// rlserver and nothing else, so there is no shell, curl or redis-cli to
// ask with. It speaks HTTP to the metrics port rather than RESP to the
// client port so that it needs no password, whichever way the node gets
// one (--requirepass, a config file, an aclfile). Docker reserves exit
// status 2 of a health check, so every failure, a bad flag included, is 1.

// healthTimeout bounds one check by default: under the 3 s a HEALTHCHECK
// gives by default in the image (Dockerfile).
const healthTimeout = 2 * time.Second

// runHealth is `rlserver health`; it returns the exit status.
func runHealth(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("rlserver health", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		addr    string
		live    bool
		timeout time.Duration
	)
	fs.StringVar(&addr, "addr", healthAddr(lookupEnv), "host:port of the node's metrics port (default: RLSERVER_METRICS_PORT on RLSERVER_BIND, or on 127.0.0.1 when that is a wildcard or unset)")
	fs.BoolVar(&live, "live", false, "ask /healthz (the process answers) instead of /readyz (it can decide: every shard has a leader)")
	fs.DurationVar(&timeout, "timeout", healthTimeout, "longest wait for the answer")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: rlserver health [--addr HOST:PORT] [--live] [--timeout D]")
		fmt.Fprintln(stderr, "Exits 0 when the node's metrics port answers 200 on /readyz (or /healthz), else 1.")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 1
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "rlserver health: unexpected argument %q\n", fs.Arg(0))
		return 1
	}
	if addr == "" {
		fmt.Fprintln(stderr, "rlserver health: no metrics port to ask: give --addr HOST:PORT, or set RLSERVER_METRICS_PORT (the node's --metrics-port)")
		return 1
	}
	path := "/readyz"
	if live {
		path = "/healthz"
	}
	body, err := checkHealth("http://"+addr+path, timeout)
	if err != nil {
		fmt.Fprintln(stderr, "rlserver health:", err)
		return 1
	}
	fmt.Fprintln(stdout, body)
	return 0
}

// healthAddr is where a node in the same environment serves its metrics:
// RLSERVER_METRICS_PORT on RLSERVER_BIND, loopback when the bind is a
// wildcard or unset (as in the image, whose environment a HEALTHCHECK
// shares). "" when no metrics port is set.
func healthAddr(lookupEnv func(string) (string, bool)) string {
	port, _ := lookupEnv(envName("metrics-port"))
	if port == "" || port == "0" {
		return ""
	}
	host, _ := lookupEnv(envName("bind"))
	switch host {
	case "", "0.0.0.0", "::", "[::]":
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port)
}

// checkHealth GETs url and returns the body of a 200 answer; any other
// answer is an error carrying its status and body (/readyz says why it is
// not ready).
func checkHealth(url string, timeout time.Duration) (string, error) {
	// No proxy: an HTTP_PROXY in a container's environment must not carry
	// the node's own health check elsewhere.
	client := &http.Client{Timeout: timeout, Transport: &http.Transport{Proxy: nil}}
	resp, err := client.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(io.LimitReader(resp.Body, 4096))
	body := strings.TrimSpace(string(b))
	if err != nil {
		return "", fmt.Errorf("GET %s: %w", url, err)
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return body, nil
}
