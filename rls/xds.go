package rls

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sync"
	"time"

	corepb "github.com/envoyproxy/go-control-plane/envoy/config/core/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/backoff"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/types/known/structpb"
)

// The config over xDS, as Envoy Gateway and WSO2 APK give it to
// envoyproxy/ratelimit (its CONFIG_TYPE=GRPC_XDS_SOTW): XDS subscribes to
// the control plane's RateLimitConfig resources on the aggregated discovery
// service (ADS), state of the world, and puts each set it receives in force
// with Service.SetConfig, as the Watcher does a file's: calls in progress
// finish under the config they started with.
//
// The protocol is in xds_stream.go. Between streams: a stream that fails
// (the control plane stopped, restarted or unreachable) is opened again
// after a wait that starts at RetryInterval and doubles up to
// MaxRetryInterval while the attempts keep failing, less a random part of
// up to a fifth so that the replicas of a fleet do not all come back in
// the same instant; a stream that delivered a response starts the waits
// again from RetryInterval. The config in force is kept all along, and is
// what the service answers with; it is replaced only by a set that passes
// the checks.

// DefaultXDSRetryInterval is envoyproxy/ratelimit's default
// CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL.
const DefaultXDSRetryInterval = 3 * time.Second

// DefaultXDSMaxRetryInterval is envoyproxy/ratelimit's default
// XDS_CLIENT_BACKOFF_MAX_INTERVAL.
const DefaultXDSMaxRetryInterval = time.Minute

// XDSOptions configure an XDS subscription.
type XDSOptions struct {
	// Server is the control plane's address, host:port (a gRPC target).
	Server string
	// NodeID is the node id the requests name; the control plane keys its
	// snapshots by it (Envoy Gateway's: envoy-ratelimit).
	NodeID string
	// NodeMetadata are the node's metadata, as strings.
	NodeMetadata map[string]string
	// TLS, when set, is the TLS the connection speaks (its ServerName, when
	// empty, is Server's host); nil for plain gRPC.
	TLS *tls.Config
	// Headers are sent with the stream as gRPC metadata.
	Headers map[string]string
	// RetryInterval is the first wait before a stream that failed is
	// opened again, and before a set refused before is refused again; 0
	// for DefaultXDSRetryInterval.
	RetryInterval time.Duration
	// MaxRetryInterval bounds the waits as they double; 0 for
	// DefaultXDSMaxRetryInterval (RetryInterval when that is larger).
	MaxRetryInterval time.Duration
	// MaxRecvMsgSize bounds a response's bytes; 0 for gRPC's default.
	MaxRecvMsgSize int
	// Log hears of every config loaded or refused and of the connection;
	// nil for none.
	Log *slog.Logger
}

// XDSStats say what the subscription has done.
type XDSStats struct {
	// Connected is true while a stream to the control plane is open.
	Connected bool
	// Version is the version_info of the config in force, "" before the
	// first.
	Version string
	// Accepted and Refused count the responses put in force (and
	// acknowledged) and those refused, the config in force kept; a set
	// refused again is counted once.
	Accepted, Refused uint64
	// Streams counts the streams opened.
	Streams uint64
	// LastError is why the last set was refused, or the last stream
	// failed; "" when nothing has failed.
	LastError string
}

// XDS is a subscription of a Service to its config over xDS.
type XDS struct {
	svc  *Service
	opts XDSOptions
	log  *slog.Logger
	conn *grpc.ClientConn
	node *corepb.Node

	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}

	mu       sync.Mutex
	stats    XDSStats
	accepted [sha256.Size]byte // the resources of the config in force
	refused  [sha256.Size]byte // the resources last refused
	why      string            // why they were
	repeats  int               // how often in a row they were sent again
}

// NewXDS returns a subscription of svc to the control plane opts.Server
// names; Start starts it. Nothing is dialled yet.
func NewXDS(svc *Service, opts XDSOptions) (*XDS, error) {
	if opts.RetryInterval <= 0 {
		opts.RetryInterval = DefaultXDSRetryInterval
	}
	if opts.MaxRetryInterval <= 0 {
		opts.MaxRetryInterval = DefaultXDSMaxRetryInterval
	}
	opts.MaxRetryInterval = max(opts.MaxRetryInterval, opts.RetryInterval)
	if opts.Log == nil {
		opts.Log = slog.New(slog.DiscardHandler)
	}
	creds := insecure.NewCredentials()
	if opts.TLS != nil {
		creds = credentials.NewTLS(opts.TLS)
	}
	// gRPC's own reconnection waits as the streams' do, not its default of
	// up to two minutes: a control plane that comes back is found within
	// MaxRetryInterval.
	dial := []grpc.DialOption{grpc.WithTransportCredentials(creds), grpc.WithConnectParams(grpc.ConnectParams{
		Backoff: backoff.Config{BaseDelay: opts.RetryInterval, Multiplier: 2, Jitter: 0.2, MaxDelay: opts.MaxRetryInterval},
	})}
	if opts.MaxRecvMsgSize > 0 {
		dial = append(dial, grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(opts.MaxRecvMsgSize)))
	}
	conn, err := grpc.NewClient(opts.Server, dial...)
	if err != nil {
		return nil, fmt.Errorf("xds server %s: %w", opts.Server, err)
	}
	fields := map[string]*structpb.Value{}
	for k, v := range opts.NodeMetadata {
		fields[k] = structpb.NewStringValue(v)
	}
	x := &XDS{svc: svc, opts: opts, log: opts.Log, conn: conn, done: make(chan struct{}),
		node: &corepb.Node{Id: opts.NodeID, Metadata: &structpb.Struct{Fields: fields}, UserAgentName: "rlserver"}}
	x.ctx, x.cancel = context.WithCancel(metadata.NewOutgoingContext(context.Background(), metadata.New(opts.Headers)))
	return x, nil
}

// Start subscribes in the background until Close.
func (x *XDS) Start() { go x.run() }

// Close ends the subscription; the config in force stays.
func (x *XDS) Close() {
	x.cancel()
	<-x.done
	x.conn.Close()
}

// Stats are the subscription's state and counters.
func (x *XDS) Stats() XDSStats {
	x.mu.Lock()
	defer x.mu.Unlock()
	return x.stats
}

// run opens a stream, and another after each one fails, waiting longer
// while they keep failing.
func (x *XDS) run() {
	defer close(x.done)
	x.log.Info("subscribing to the rate limit config over xDS", "server", x.opts.Server, "node_id", x.opts.NodeID, "tls", x.opts.TLS != nil)
	failures := 0
	for {
		received, err := x.stream()
		if x.ctx.Err() != nil {
			return
		}
		if received {
			failures = 0
		}
		failures++
		x.mu.Lock()
		wasConnected := x.stats.Connected
		x.stats.Connected, x.stats.LastError = false, err.Error()
		version := x.stats.Version
		x.mu.Unlock()
		wait := x.backoff(failures)
		// Said once, not at every attempt while the control plane is away.
		if wasConnected || failures == 1 {
			x.log.Warn("xDS config server unreachable: the rate limit config in force stays; retrying",
				"server", x.opts.Server, "in", wait.Round(time.Millisecond), "version_in_force", version, "err", err)
		}
		if !x.sleep(wait) {
			return
		}
	}
}

// backoff is the wait after n failures in a row: RetryInterval, doubled
// for each failure after the first up to MaxRetryInterval, less a random
// part of up to a fifth.
func (x *XDS) backoff(n int) time.Duration {
	d := x.opts.RetryInterval
	for i := 1; i < n && d < x.opts.MaxRetryInterval; i++ {
		d *= 2
	}
	d = min(d, x.opts.MaxRetryInterval)
	return d - time.Duration(rand.Int64N(int64(d)/5+1))
}

// sleep waits d, or until Close; it reports whether to go on.
func (x *XDS) sleep(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-x.ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
