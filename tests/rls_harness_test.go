package tests

import (
	"os"
	"path/filepath"
	"sync"
	"testing"

	rlpb "github.com/envoyproxy/go-control-plane/envoy/extensions/common/ratelimit/v3"
	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// rlsServer is an rlserver serving Envoy's rate limit service, and the
// clients a test talks to it with: the generated gRPC client, the health
// client, and a Redis client (for DEBUG CLOCK).
type rlsServer struct {
	proc   *rlproc.Process
	rl     pb.RateLimitServiceClient
	health healthpb.HealthClient
	redis  *redis.Client
	config string // the --rls-config directory
}

// writeRLSConfig writes files (name -> YAML) into dir, making it.
func writeRLSConfig(t testing.TB, dir string, files map[string]string) {
	t.Helper()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	for name, body := range files {
		// Write and rename, as a deployment tool does: the watcher never
		// reads half a file.
		tmp := filepath.Join(dir, "."+name+".tmp")
		if err := os.WriteFile(tmp, []byte(body), 0o644); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(dir, name)); err != nil {
			t.Fatal(err)
		}
	}
}

// startRLS starts rlserver --in-memory (durable with RLSERVER_E2E_DURABLE)
// with the rate limit service on a free port, its config the files given,
// plus args.
func startRLS(t *testing.T, files map[string]string, args ...string) *rlsServer {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "rls")
	writeRLSConfig(t, dir, files)
	p, ports := startServerOnPorts(t, false, 1, func(ports []string) []string {
		return join([]string{"--grpc-port", ports[0], "--rls-config", dir}, args)
	})
	s := dialRLS(t, "127.0.0.1:"+ports[0])
	s.proc, s.redis, s.config = p, p.Client(t, 2), dir
	return s
}

// dialRLS is the gRPC clients of the rate limit service at addr.
func dialRLS(t testing.TB, addr string) *rlsServer {
	t.Helper()
	conn, err := grpc.NewClient(addr, grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return &rlsServer{rl: pb.NewRateLimitServiceClient(conn), health: healthpb.NewHealthClient(conn)}
}

// descriptor is a descriptor of key, value pairs.
func descriptor(kv ...string) *rlpb.RateLimitDescriptor {
	d := &rlpb.RateLimitDescriptor{}
	for i := 0; i+1 < len(kv); i += 2 {
		d.Entries = append(d.Entries, &rlpb.RateLimitDescriptor_Entry{Key: kv[i], Value: kv[i+1]})
	}
	return d
}

// ask sends one ShouldRateLimit and fails the test on an error.
func (s *rlsServer) ask(t testing.TB, domain string, hits uint32, ds ...*rlpb.RateLimitDescriptor) *pb.RateLimitResponse {
	t.Helper()
	resp, err := s.rl.ShouldRateLimit(ctx(t), &pb.RateLimitRequest{Domain: domain, Descriptors: ds, HitsAddend: hits})
	if err != nil {
		t.Fatalf("ShouldRateLimit %s %v: %v", domain, ds, err)
	}
	if len(resp.Statuses) != len(ds) {
		t.Fatalf("%d statuses for %d descriptors", len(resp.Statuses), len(ds))
	}
	return resp
}

// allowed sends n requests of ds and counts those answered OK.
func (s *rlsServer) allowed(t testing.TB, n int, domain string, ds ...*rlpb.RateLimitDescriptor) int {
	t.Helper()
	ok := 0
	for range n {
		if s.ask(t, domain, 0, ds...).OverallCode == pb.RateLimitResponse_OK {
			ok++
		}
	}
	return ok
}

// atOnce runs call(0) to call(n-1) concurrently and fails the test with
// the errors they return, once all have returned.
func atOnce(t *testing.T, n int, call func(i int) error) {
	t.Helper()
	errs := make(chan error, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Go(func() {
			if err := call(i); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}
	if t.Failed() {
		t.FailNow()
	}
}
