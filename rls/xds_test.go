package rls

import (
	"crypto/tls"
	"fmt"
	"strings"
	"testing"
	"time"

	discoverypb "github.com/envoyproxy/go-control-plane/envoy/service/discovery/v3"
	rlsconf "github.com/envoyproxy/go-control-plane/ratelimit/config/ratelimit/v3"
	"google.golang.org/grpc/codes"
	"google.golang.org/protobuf/types/known/anypb"

	"github.com/rlserver/rlserver/internal/poll"
	"github.com/rlserver/rlserver/internal/testcert"
	"github.com/rlserver/rlserver/internal/xdstest"
)

// xdsNode is the node id the tests subscribe as (Envoy Gateway's).
const xdsNode = "envoy-ratelimit"

// xdsRetry and xdsMaxRetry are the subscriptions' waits in the tests.
const (
	xdsRetry    = 50 * time.Millisecond
	xdsMaxRetry = 200 * time.Millisecond
)

// edgeConfig is domain edge with users limited to n a minute.
func edgeConfig(n uint32) *rlsconf.RateLimitConfig {
	return &rlsconf.RateLimitConfig{Name: "edge", Domain: "edge", Descriptors: []*rlsconf.RateLimitDescriptor{
		rlDesc("user", "", perUnit(n, rlsconf.RateLimitUnit_MINUTE))}}
}

// subscribe starts a subscription of f's service to the control plane at
// addr; the test's end closes it.
func subscribe(t *testing.T, f *fixture, addr string, tlsConfig *tls.Config) *XDS {
	t.Helper()
	x, err := NewXDS(f.svc, XDSOptions{Server: addr, NodeID: xdsNode, NodeMetadata: map[string]string{"zone": "z1"},
		TLS: tlsConfig, RetryInterval: xdsRetry, MaxRetryInterval: xdsMaxRetry})
	if err != nil {
		t.Fatal(err)
	}
	x.Start()
	t.Cleanup(x.Close)
	return x
}

// waitVersion waits until the subscription has version in force, after
// accepted loads, and the control plane has its acknowledgement.
func waitVersion(t *testing.T, x *XDS, cp *xdstest.ControlPlane, version string, accepted uint64) {
	t.Helper()
	poll.Until(t, 10*time.Second, "version "+version+" in force and acknowledged", func() (bool, error) {
		s := x.Stats()
		return s.Version == version && s.Accepted == accepted && cp.Acked(version), fmt.Errorf("stats %+v", s)
	})
}

// subscribed is a control plane serving cfg as version, and a service
// subscribed to it without TLS, once the version is in force.
func subscribed(t *testing.T, version string, cfg *rlsconf.RateLimitConfig) (*xdstest.ControlPlane, *fixture, *XDS) {
	t.Helper()
	cp := xdstest.Start(t, "127.0.0.1:0", nil)
	cp.Set(t, xdsNode, version, cfg)
	f := newFixture(t, "domain: unused\n", Options{})
	x := subscribe(t, f, cp.Addr(), nil)
	waitVersion(t, x, cp, version, 1)
	return cp, f, x
}

// remaining is what one more request of user leaves under domain edge.
func (f *fixture) remaining(user string) uint32 {
	f.t.Helper()
	st := f.ask("edge", 0, desc("user", user)).Statuses[0]
	return st.GetLimitRemaining()
}

// Against go-control-plane's own ADS server and snapshot cache, as Envoy
// Gateway runs them: the first config is served and put in force; an
// update changes the decisions without a restart; a bad resource is
// refused (error_detail, the version in force), again after a wait when
// the server sends it again, and the config in force stays; with the
// server stopped the config stays, and the server started again, empty
// and reusing version "1" for other content, is subscribed to again and
// its config put in force.
func TestXDSWithGoControlPlane(t *testing.T) {
	cp, f, x := subscribed(t, "1", edgeConfig(2))
	first := cp.Requests()[0]
	if first.GetNode().GetId() != xdsNode || first.GetNode().GetMetadata().GetFields()["zone"].GetStringValue() != "z1" ||
		first.GetTypeUrl() != XDSTypeURL || first.GetVersionInfo() != "" || len(first.GetResourceNames()) != 0 {
		t.Fatalf("first request: %v", first.DiscoveryRequest)
	}
	if got := f.allowed(3, "edge", desc("user", "ada")); got != 2 {
		t.Fatalf("%d of 3 allowed under version 1's 2 a minute", got)
	}

	cp.Set(t, xdsNode, "2", edgeConfig(10))
	waitVersion(t, x, cp, "2", 2)
	if st := f.ask("edge", 0, desc("user", "bob")).Statuses[0]; st.GetCurrentLimit().GetRequestsPerUnit() != 10 || st.GetLimitRemaining() != 9 {
		t.Fatalf("version 2 not in force: %v", st)
	}

	bad := edgeConfig(50)
	bad.Descriptors[0].RateLimit.Unit = rlsconf.RateLimitUnit_UNKNOWN
	cp.Set(t, xdsNode, "3", bad)
	poll.Until(t, 10*time.Second, "version 3 refused twice", func() (bool, error) {
		return len(cp.Refusals()) >= 2, nil
	})
	refusals := cp.Refusals()
	for _, r := range refusals[:2] {
		if d := r.GetErrorDetail(); r.GetVersionInfo() != "2" || d.GetCode() != int32(codes.InvalidArgument) ||
			!strings.Contains(d.GetMessage(), `RateLimitConfig "edge" at descriptors[0].rate_limit: rate_limit needs a unit`) {
			t.Fatalf("refusal: version %q, %v", r.GetVersionInfo(), d)
		}
	}
	// The server sends a refused set again at once: the second refusal
	// waits, so that the exchange does not spin.
	if gap := refusals[1].At.Sub(refusals[0].At); gap < xdsRetry*4/5 {
		t.Fatalf("refused again after %v, before the retry interval %v", gap, xdsRetry)
	}
	if s, svc := x.Stats(), f.svc.ServiceStats(); s.Refused != 1 || s.Version != "2" || svc.ConfigErrors != 1 {
		t.Fatalf("after the refusals: %+v, config errors %d", s, svc.ConfigErrors)
	}
	if got := f.remaining("bob"); got != 8 {
		t.Fatalf("remaining %d after the refusal, want version 2's 8", got)
	}

	cp.Stop()
	poll.Until(t, 10*time.Second, "the subscription to see the server gone", func() (bool, error) {
		return !x.Stats().Connected, nil
	})
	if got := f.remaining("bob"); got != 7 {
		t.Fatalf("remaining %d with the control plane away, want version 2's 7", got)
	}

	cp.Restart(t)
	cp.Set(t, xdsNode, "1", edgeConfig(5)) // a restarted Envoy Gateway numbers from 1 again
	waitVersion(t, x, cp, "1", 3)
	if st := f.ask("edge", 0, desc("user", "cy")).Statuses[0]; st.GetCurrentLimit().GetRequestsPerUnit() != 5 || st.GetLimitRemaining() != 4 {
		t.Fatalf("the restarted control plane's config not in force: %v", st)
	}
	if s := x.Stats(); s.Streams < 2 || !s.Connected {
		t.Fatalf("after the restart: %+v", s)
	}
}

// A stream that ends while the config in force is still the control
// plane's: the new stream gets the same set, which is acknowledged with no
// reload. Resources of another type are refused.
func TestXDSSameSetAgainAndWrongType(t *testing.T) {
	cp, f, x := subscribed(t, "7", edgeConfig(3))
	loads := f.svc.ServiceStats().ConfigLoads

	cp.Restart(t)
	cp.Set(t, xdsNode, "7", edgeConfig(3))
	poll.Until(t, 10*time.Second, "the same set acknowledged on a new stream", func() (bool, error) {
		return cp.Acked("7"), fmt.Errorf("stats %+v", x.Stats())
	})
	if s := x.Stats(); s.Accepted != 1 || f.svc.ServiceStats().ConfigLoads != loads {
		t.Fatalf("the same set was loaded again: %+v", s)
	}

	resp := xdsResponseOf(t, "8", edgeConfig(3))
	resp.Resources[0].TypeUrl = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	if _, err := decodeXDS(resp); err == nil || !strings.Contains(err.Error(), "not a "+XDSTypeURL) {
		t.Fatalf("a resource of another type: %v", err)
	}
	resp.TypeUrl = "type.googleapis.com/envoy.config.cluster.v3.Cluster"
	if _, err := decodeXDS(resp); err == nil || !strings.Contains(err.Error(), "a response of type") {
		t.Fatalf("a response of another type: %v", err)
	}
}

// xdsResponseOf is a response of version holding configs.
func xdsResponseOf(t *testing.T, version string, configs ...*rlsconf.RateLimitConfig) *discoverypb.DiscoveryResponse {
	t.Helper()
	r := &discoverypb.DiscoveryResponse{VersionInfo: version, Nonce: "n", TypeUrl: XDSTypeURL}
	for _, c := range configs {
		a, err := anypb.New(c)
		if err != nil {
			t.Fatal(err)
		}
		r.Resources = append(r.Resources, a)
	}
	return r
}

// The subscription speaks mutual TLS when given it: the control plane
// checks its certificate, it checks the control plane's.
func TestXDSOverMutualTLS(t *testing.T) {
	ca := testcert.NewCA(t, "xds-ca")
	server, client := ca.Issue(t, "envoy-gateway", "127.0.0.1"), ca.Issue(t, "envoy-ratelimit")
	cp := xdstest.Start(t, "127.0.0.1:0", &tls.Config{Certificates: []tls.Certificate{server.TLS(t)},
		ClientCAs: ca.Pool(), ClientAuth: tls.RequireAndVerifyClientCert})
	cp.Set(t, xdsNode, "1", edgeConfig(1))
	f := newFixture(t, "domain: unused\n", Options{})
	x := subscribe(t, f, cp.Addr(), &tls.Config{Certificates: []tls.Certificate{client.TLS(t)}, RootCAs: ca.Pool()})
	waitVersion(t, x, cp, "1", 1)
	if got := f.allowed(2, "edge", desc("user", "ada")); got != 1 {
		t.Fatalf("%d of 2 allowed under 1 a minute", got)
	}
}
