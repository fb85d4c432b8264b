package rls

import (
	"crypto/tls"
	"net"
	"sync"
	"time"

	qpb "github.com/envoyproxy/go-control-plane/envoy/service/rate_limit_quota/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/health"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"
	"google.golang.org/grpc/keepalive"
)

// healthNames are the services the health service answers for: the whole
// server (""), the rate limit service by its full name, and by the name
// envoyproxy/ratelimit answers to, and the quota service.
var healthNames = []string{"", pb.RateLimitService_ServiceDesc.ServiceName, "ratelimit",
	qpb.RateLimitQuotaService_ServiceDesc.ServiceName}

// ServerOptions configure a Server.
type ServerOptions struct {
	// TLS, when set, is the TLS the port speaks (rlserver gives it the
	// client port's); nil for plain gRPC.
	TLS *tls.Config
	// MaxRecvMsgSize bounds a request's bytes; 0 for gRPC's default.
	MaxRecvMsgSize int
	// Ready, when set, is asked every ReadyInterval (every 50 ms while it
	// says no) whether this node can serve every shard (nil: it can); the
	// health service says SERVING only while it can, so that Envoy's
	// health checks send requests to the nodes that can answer them.
	Ready         func() error
	ReadyInterval time.Duration
}

// Server is the gRPC server of a Service: the rate limit service, the
// quota service on the same shards and config, and grpc.health.v1.Health.
type Server struct {
	grpc   *grpc.Server
	health *health.Server
	quota  *Quota
	opts   ServerOptions

	stopOnce sync.Once
	stop     chan struct{}
	done     chan struct{}
}

// streamWorkers is how many goroutines serve calls, each one call at a
// time; a call that finds them all busy gets a goroutine of its own, as
// without them. A new goroutine per call costs more than its start: a
// call's stack (grpc-go's frames, the protobuf decoder, the handler) is
// deeper than a new goroutine's, so every call grew and copied its stack
// (docs/performance.md#envoys-rate-limit-service, "grpc-go's stream
// workers"). A worker's stack stays grown. A call holds its worker until it is answered, so the workers
// needed are the calls in flight, one per waiting caller: 64 in bench/rls.
const streamWorkers = 256

// Fixed flow-control windows. grpc-go otherwise estimates each
// connection's bandwidth-delay product by sending a PING (and a window
// update) whenever data arrives with no estimate in flight, about once a
// round trip per connection, forever: a call of a few hundred bytes never
// grows the estimate to its limit, where grpc-go stops. Each PING is a frame
// written, an acknowledgement read and a wake-up of the connection's
// writer. A rate limit call is far smaller than these windows, so a
// connection can carry hundreds of them unread before it waits for a
// window update.
const (
	streamWindow = 64 << 10
	connWindow   = 1 << 20
)

// NewServer returns the gRPC server of svc.
func NewServer(svc *Service, opts ServerOptions) *Server {
	// Envoy may ping its upstreams (connection_keepalive): allow a ping
	// every 10 s, idle or not, rather than gRPC's default of one in 5
	// minutes, past which it would close Envoy's connections.
	grpcOpts := []grpc.ServerOption{grpc.KeepaliveEnforcementPolicy(keepalive.EnforcementPolicy{
		MinTime: 10 * time.Second, PermitWithoutStream: true,
	}), grpc.NumStreamWorkers(streamWorkers),
		grpc.StaticStreamWindowSize(streamWindow), grpc.StaticConnWindowSize(connWindow)}
	if opts.TLS != nil {
		grpcOpts = append(grpcOpts, grpc.Creds(credentials.NewTLS(opts.TLS)))
	}
	if opts.MaxRecvMsgSize > 0 {
		grpcOpts = append(grpcOpts, grpc.MaxRecvMsgSize(opts.MaxRecvMsgSize))
	}
	if opts.ReadyInterval <= 0 {
		opts.ReadyInterval = time.Second
	}
	s := &Server{grpc: grpc.NewServer(grpcOpts...), health: health.NewServer(), quota: NewQuota(svc), opts: opts,
		stop: make(chan struct{}), done: make(chan struct{})}
	pb.RegisterRateLimitServiceServer(s.grpc, svc)
	qpb.RegisterRateLimitQuotaServiceServer(s.grpc, s.quota)
	healthpb.RegisterHealthServer(s.grpc, s.health)
	ready := s.ready()
	s.setServing(ready)
	go s.watchReadiness(ready)
	return s
}

// Serve serves on ln until Stop; it returns nil after Stop.
func (s *Server) Serve(ln net.Listener) error {
	err := s.grpc.Serve(ln)
	if err == grpc.ErrServerStopped {
		return nil
	}
	return err
}

// Quota is the quota service the server serves.
func (s *Server) Quota() *Quota { return s.quota }

// Stop says NOT_SERVING, ends the quota service's streams (their Envoys
// report to another node), stops taking calls and waits up to timeout for
// the calls in progress, then ends those still running.
func (s *Server) Stop(timeout time.Duration) {
	s.stopOnce.Do(func() { close(s.stop) })
	<-s.done
	s.health.Shutdown()
	s.quota.Close()
	stopped := make(chan struct{})
	go func() {
		s.grpc.GracefulStop()
		close(stopped)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-stopped:
	case <-t.C:
		s.grpc.Stop()
		<-stopped
	}
}

// ready reports whether the node can serve every shard.
func (s *Server) ready() bool { return s.opts.Ready == nil || s.opts.Ready() == nil }

// setServing sets every health name's status.
func (s *Server) setServing(ok bool) {
	st := healthpb.HealthCheckResponse_NOT_SERVING
	if ok {
		st = healthpb.HealthCheckResponse_SERVING
	}
	for _, name := range healthNames {
		s.health.SetServingStatus(name, st)
	}
}

// notReadyInterval is how often a node that cannot serve asks again, when
// ReadyInterval is longer. A node that has just started is ready within
// moments (a durable node elects itself, a replica replays its log), and
// its health checks should say so then, not a ReadyInterval later: until
// they do, Envoy sends it nothing.
const notReadyInterval = 50 * time.Millisecond

// watchReadiness keeps the health status in step with Ready until Stop;
// ready is the status New set.
func (s *Server) watchReadiness(ready bool) {
	defer close(s.done)
	if s.opts.Ready == nil {
		<-s.stop
		return
	}
	t := time.NewTimer(s.readyWait(ready))
	defer t.Stop()
	for {
		select {
		case <-s.stop:
			return
		case <-t.C:
			ready = s.ready()
			s.setServing(ready)
			t.Reset(s.readyWait(ready))
		}
	}
}

// readyWait is how long to wait before asking Ready again.
func (s *Server) readyWait(ready bool) time.Duration {
	if ready {
		return s.opts.ReadyInterval
	}
	return min(s.opts.ReadyInterval, notReadyInterval)
}

// interface check: the service is the generated server interface.
var _ pb.RateLimitServiceServer = (*Service)(nil)
