// Command rlserver is a rate-limit server that speaks the Redis protocol.
//
//	rlserver --bind 127.0.0.1 --port 6380 --in-memory
//
// Any Redis client asks it one atomic question, such as
// RL.SLIDING user:ada 100 60000, and gets the decision plus what an HTTP API
// needs for a 429 with Retry-After and RateLimit headers. See README.md and
// docs/.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/server"
)

// version is set at build time with -ldflags "-X main.version=...".
var version = "0.1.0-dev"

// options are rlserver's command-line settings.
type options struct {
	bind        string
	port        int
	inMemory    bool
	dataDir     string
	shards      int
	debug       bool
	requirePass string
	maxClients  int
	limits      server.Limits
	version     bool
}

func parseFlags(args []string, stderr io.Writer) (options, error) {
	var o options
	fs := flag.NewFlagSet("rlserver", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&o.bind, "bind", "127.0.0.1", "address to listen on for clients")
	fs.IntVar(&o.port, "port", 6380, "TCP port for clients")
	fs.BoolVar(&o.inMemory, "in-memory", false, "keep all state in memory only: no files, nothing survives a restart")
	fs.StringVar(&o.dataDir, "data-dir", "", "directory for durable state")
	fs.IntVar(&o.shards, "shards", 4, "number of shards (single-threaded partitions of the keyspace), 1 to 1024")
	fs.BoolVar(&o.debug, "enable-debug-command", false, "allow DEBUG CLOCK and DEBUG DIGEST (for tests)")
	fs.StringVar(&o.requirePass, "requirepass", "", "password clients must give with AUTH or HELLO AUTH")
	fs.IntVar(&o.maxClients, "maxclients", 10000, "maximum number of client connections")
	fs.Int64Var(&o.limits.MaxBulkLen, "max-bulk-len", 512*1024, "maximum bytes in one argument")
	fs.Int64Var(&o.limits.MaxArgs, "max-args", 4096, "maximum arguments in one command")
	fs.Int64Var(&o.limits.MaxRequestLen, "max-request-len", 4*1024*1024, "maximum bytes in one command")
	fs.IntVar(&o.limits.MaxKeyLen, "max-key-len", 1024, "maximum bytes in one key")
	fs.BoolVar(&o.version, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return o, err
	}
	if fs.NArg() > 0 {
		return o, fmt.Errorf("unexpected argument %q", fs.Arg(0))
	}
	return o, o.validate()
}

// validate names the setting at fault.
func (o options) validate() error {
	switch {
	case o.port < 0 || o.port > 65535:
		return fmt.Errorf("--port %d: must be from 0 to 65535", o.port)
	case o.shards < 1 || o.shards > 1024:
		return fmt.Errorf("--shards %d: must be from 1 to 1024", o.shards)
	case o.maxClients < 1:
		return fmt.Errorf("--maxclients %d: must be at least 1", o.maxClients)
	case o.limits.MaxBulkLen < 1:
		return fmt.Errorf("--max-bulk-len %d: must be at least 1", o.limits.MaxBulkLen)
	case o.limits.MaxArgs < 1:
		return fmt.Errorf("--max-args %d: must be at least 1", o.limits.MaxArgs)
	case o.limits.MaxRequestLen < 16:
		return fmt.Errorf("--max-request-len %d: must be at least 16", o.limits.MaxRequestLen)
	case o.limits.MaxKeyLen < 1:
		return fmt.Errorf("--max-key-len %d: must be at least 1", o.limits.MaxKeyLen)
	case o.inMemory && o.dataDir != "":
		return errors.New("--in-memory and --data-dir exclude each other")
	case !o.inMemory:
		return errors.New("this build keeps state in memory only: start it with --in-memory (durable --data-dir storage comes with Raft replication)")
	}
	return nil
}

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run starts rlserver and serves until SIGINT or SIGTERM; it returns the exit
// status.
func run(args []string, stdout, stderr io.Writer) int {
	o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(stderr, "rlserver:", err)
		return 2
	}
	if o.version {
		fmt.Fprintln(stdout, "rlserver", version)
		return 0
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	var clock cluster.Clock = cluster.SystemClock{}
	var debug server.DebugClock
	if o.debug {
		dc := &cluster.DebugClock{}
		clock, debug = dc, dc
	}
	shards := cluster.NewMemoryShards(o.shards, clock)
	srv := server.New(server.Config{
		Limits:      o.limits,
		MaxClients:  o.maxClients,
		RequirePass: o.requirePass,
		Version:     version,
		Shutdown:    5 * time.Second,
	}, shards, clock, debug)

	addr := net.JoinHostPort(o.bind, strconv.Itoa(o.port))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(stderr, "rlserver:", err)
		shards.Close()
		return 1
	}
	log.Info("rlserver ready", "version", version, "addr", ln.Addr().String(), "shards", o.shards, "mode", "in-memory", "debug", o.debug)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case err := <-served:
		log.Error("listener failed", "err", err)
		shards.Close()
		return 1
	}
	// Ordered shutdown: stop taking commands and answer the ones in flight,
	// then stop the shards.
	srv.Close()
	shards.Close()
	log.Info("stopped")
	return 0
}
