package tests

import (
	"crypto/tls"
	"fmt"
	"strings"
	"syscall"
	"testing"
	"time"

	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"
	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/rlproc"
	"github.com/rlserver/rlserver/internal/testcert"
	"github.com/rlserver/rlserver/internal/xdstest"
)

// egNode is the node id Envoy Gateway keys the rate limit config by.
const egNode = "envoy-ratelimit"

// usersPerMinute is Envoy Gateway's kind of resource: domain edge, each
// user n requests a minute.
func usersPerMinute(n uint32) *rlsconf.RateLimitConfig {
	return &rlsconf.RateLimitConfig{Name: "edge", Domain: "edge", Descriptors: []*rlsconf.RateLimitDescriptor{{
		Key: "user", RateLimit: &rlsconf.RateLimitPolicy{Unit: rlsconf.RateLimitUnit_MINUTE, RequestsPerUnit: n}}}}
}

// waitLimit waits until the service answers domain edge with a limit of n
// a minute, asking for a user of its own so that no other count moves.
func (s *rlsServer) waitLimit(t *testing.T, n uint32) {
	t.Helper()
	probe := fmt.Sprintf("probe-%d", n)
	poll.Until(t, 20*time.Second, fmt.Sprintf("a limit of %d a minute in force", n), func() (bool, error) {
		st := s.ask(t, "edge", 0, descriptor("user", probe)).Statuses[0]
		return st.GetCurrentLimit().GetRequestsPerUnit() == n, fmt.Errorf("status %v", st)
	})
}

// remaining is what one more request of user leaves under domain edge.
func (s *rlsServer) remaining(t *testing.T, user string) uint32 {
	t.Helper()
	return s.ask(t, "edge", 0, descriptor("user", user)).Statuses[0].GetLimitRemaining()
}

// The real binary with --rls-xds-server takes its limits from a
// go-control-plane xDS server: the first config, then an update, decide
// ShouldRateLimit without a restart; a config that fails the checks is
// refused and the one in force kept; with the control plane gone the
// config stays, and once it is back, restarted with nothing, its new
// config is taken. The metrics follow: connected or not, the sets
// accepted and refused, the version in force.
func TestRLSConfigOverXDS(t *testing.T) {
	cp := xdstest.Start(t, "127.0.0.1:0", nil)
	cp.Set(t, egNode, "1", usersPerMinute(2))
	p, ports := startServerOnPorts(t, false, 2, func(ports []string) []string {
		return []string{"--grpc-port", ports[0], "--rls-xds-server", cp.Addr(), "--rls-xds-node-id", egNode,
			"--rls-xds-retry-interval", "100ms", "--rls-xds-retry-max", "500ms", "--metrics-port", ports[1]}
	})
	s := dialRLS(t, "127.0.0.1:"+ports[0])
	metricsURL := "http://127.0.0.1:" + ports[1]

	s.waitLimit(t, 2)
	awaitXDSMetrics(t, metricsURL, 1, 1, 0, `version="1"`)
	if got := s.allowed(t, 3, "edge", descriptor("user", "ada")); got != 2 {
		t.Fatalf("%d of 3 allowed under 2 a minute", got)
	}
	// SIGHUP, which reloads --rls-config, has nothing to reload here, and
	// must not end the process.
	if err := p.Signal(syscall.SIGHUP); err != nil {
		t.Fatal(err)
	}
	poll.Until(t, 20*time.Second, "the log to say SIGHUP has nothing to reload", func() (bool, error) {
		return strings.Contains(p.Log(), "SIGHUP: nothing to reload"), nil
	})

	cp.Set(t, egNode, "2", usersPerMinute(10))
	s.waitLimit(t, 10)
	if got := s.remaining(t, "ada"); got != 6 { // her 3 hits carried over, the refused one too
		t.Fatalf("ada's remaining %d under 10 a minute after 4 hits, want 6 (the count carried over)", got)
	}

	bad := usersPerMinute(50)
	bad.Descriptors[0].Key = ""
	cp.Set(t, egNode, "3", bad)
	poll.Until(t, 20*time.Second, "version 3 refused", func() (bool, error) { return len(cp.Refusals()) > 0, nil })
	if msg := cp.Refusals()[0].GetErrorDetail().GetMessage(); !strings.Contains(msg, `RateLimitConfig "edge" at descriptors[0]`) {
		t.Fatalf("refusal %q", msg)
	}
	if got := s.remaining(t, "ada"); got != 5 {
		t.Fatalf("ada's remaining %d after the refusal, want version 2's 5", got)
	}
	awaitXDSMetrics(t, metricsURL, 1, 2, 1, `version="2"`)

	cp.Stop()
	poll.Until(t, 20*time.Second, "the log to say the control plane is gone", func() (bool, error) {
		return strings.Contains(p.Log(), "xDS config server unreachable"), nil
	})
	if got := s.remaining(t, "ada"); got != 4 {
		t.Fatalf("ada's remaining %d with the control plane away, want version 2's 4", got)
	}
	awaitXDSMetrics(t, metricsURL, 0, 2, 1, `version="2"`)
	cp.Restart(t)
	cp.Set(t, egNode, "1", usersPerMinute(20))
	s.waitLimit(t, 20)
}

// awaitXDSMetrics polls the metrics until the xDS subscription is
// connected (1) or not (0), with the sets accepted and refused, and the
// config info gauge's labels.
func awaitXDSMetrics(t *testing.T, metricsURL string, connected, accepted, refused float64, version string) {
	t.Helper()
	poll.Until(t, 20*time.Second, "the xDS metrics", func() (bool, error) {
		m := scrape(t, metricsURL)
		ok := m.sum("rlserver_rls_xds_connected") == connected &&
			m.sum("rlserver_rls_xds_updates_total", `result="accepted"`) == accepted &&
			m.sum("rlserver_rls_xds_updates_total", `result="refused"`) == refused &&
			m.sum("rlserver_rls_xds_config_info") == 1 && m.sum("rlserver_rls_xds_config_info", version) == 1
		return ok, fmt.Errorf("connected %v, updates %v, config %v, want %v, %v accepted, %v refused, %s",
			m["rlserver_rls_xds_connected"], m["rlserver_rls_xds_updates_total"], m["rlserver_rls_xds_config_info"],
			connected, accepted, refused, version)
	})
}

// Envoy Gateway's ratelimit Deployment with rlserver's image: its
// environment as it sets it (CONFIG_TYPE=GRPC_XDS_SOTW, the control
// plane's address and node id, mutual TLS to the control plane, TLS on the
// gRPC port, the Redis and statsd settings rlserver ignores) and no flag
// but the test's own bind, serves the limits the control plane sends over
// TLS, and answers the Deployment's probe on /healthcheck.
func TestEnvoyGatewayDeploymentEnvironment(t *testing.T) {
	dir := t.TempDir()
	ca := testcert.NewCA(t, "envoy-gateway")
	caFile := ca.Write(t, dir, "ca.crt")
	cert, key := ca.Issue(t, egNode, "127.0.0.1").Write(t, dir, "tls")
	cpCert := ca.Issue(t, "envoy-gateway", "127.0.0.1")
	cp := xdstest.Start(t, "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{cpCert.TLS(t)},
		ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert})
	cp.Set(t, egNode, "1", usersPerMinute(3))

	p, ports := rlproc.LaunchOnPorts(t, 2, func(ports []int) rlproc.Config {
		env := []string{"env", "RLSERVER_IN_MEMORY=yes",
			"RUNTIME_ROOT=/data", "RUNTIME_SUBDIRECTORY=ratelimit", "RUNTIME_IGNOREDOTFILES=true", "RUNTIME_WATCH_ROOT=false",
			"LOG_LEVEL=info", "USE_STATSD=false", "CONFIG_TYPE=GRPC_XDS_SOTW",
			"CONFIG_GRPC_XDS_SERVER_URL=" + cp.Addr(), "CONFIG_GRPC_XDS_NODE_ID=" + egNode,
			"GRPC_SERVER_USE_TLS=true", "GRPC_SERVER_TLS_CERT=" + cert, "GRPC_SERVER_TLS_KEY=" + key, "GRPC_SERVER_TLS_CA_CERT=" + caFile,
			"CONFIG_GRPC_XDS_SERVER_USE_TLS=true", "CONFIG_GRPC_XDS_CLIENT_TLS_CERT=" + cert, "CONFIG_GRPC_XDS_CLIENT_TLS_KEY=" + key,
			"CONFIG_GRPC_XDS_SERVER_TLS_CACERT=" + caFile, "FORCE_START_WITHOUT_INITIAL_CONFIG=true",
			"REDIS_SOCKET_TYPE=tcp", "REDIS_URL=redis.invalid:6379",
			// Not Envoy Gateway's: the test's free ports, and retries
			// fit for a test.
			fmt.Sprintf("GRPC_PORT=%d", ports[0]), fmt.Sprintf("PORT=%d", ports[1]),
			"CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL=100ms", "XDS_CLIENT_BACKOFF_MAX_INTERVAL=500ms"}
		return rlproc.Config{Dir: dir, Wrap: env, Args: []string{"--bind", "127.0.0.1", "--port", "0"}}
	})
	conn, err := grpc.NewClient(fmt.Sprintf("127.0.0.1:%d", ports[0]), grpc.WithTransportCredentials(credentials.NewTLS(
		&tls.Config{RootCAs: ca.Pool(), ServerName: "127.0.0.1"})))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	s := &rlsServer{rl: pb.NewRateLimitServiceClient(conn), health: healthpb.NewHealthClient(conn)}

	s.waitLimit(t, 3)
	if got := s.allowed(t, 4, "edge", descriptor("user", "ada")); got != 3 {
		t.Fatalf("%d of 4 allowed under 3 a minute", got)
	}
	cp.Set(t, egNode, "2", usersPerMinute(30))
	s.waitLimit(t, 30)
	if code, body := httpGet(t, fmt.Sprintf("http://127.0.0.1:%d/healthcheck", ports[1])); code != 200 {
		t.Fatalf("/healthcheck: %d %q", code, body)
	}
	if log := p.Log(); !strings.Contains(log, "has no use for") || !strings.Contains(log, "REDIS_URL") {
		t.Fatalf("the log does not name the variables ignored:\n%s", log)
	}
}
