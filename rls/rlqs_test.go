package rls

import (
	"context"
	"fmt"
	"net"
	"testing"
	"time"

	qpb "github.com/envoyproxy/go-control-plane/envoy/service/rate_limit_quota/v3"
	typepb "github.com/envoyproxy/go-control-plane/envoy/type/v3"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/protobuf/types/known/durationpb"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/poll"
)

// quotaFixture is the quota service of a Server on 127.0.0.1, on in-memory
// shards the test can ask directly.
type quotaFixture struct {
	t      *testing.T
	svc    *Service
	srv    *Server
	shards *cluster.MemoryShards
	conn   *grpc.ClientConn
}

func newQuotaFixture(t *testing.T, body string) *quotaFixture {
	t.Helper()
	cfg, err := loadYAML(t, body)
	if err != nil {
		t.Fatal(err)
	}
	shards, err := cluster.NewMemoryShards(cluster.MemoryConfig{Shards: 4, Clock: cluster.SystemClock{}})
	if err != nil {
		t.Fatal(err)
	}
	svc := New(shards, cfg, Options{})
	srv := NewServer(svc, ServerOptions{})
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go srv.Serve(ln)
	conn, err := grpc.NewClient(ln.Addr().String(), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		conn.Close()
		srv.Stop(time.Second)
		shards.Close()
	})
	return &quotaFixture{t: t, svc: svc, srv: srv, shards: shards, conn: conn}
}

// open opens a stream; its context ends with the test.
func (f *quotaFixture) open() (qpb.RateLimitQuotaService_StreamRateLimitQuotasClient, context.CancelFunc) {
	f.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	f.t.Cleanup(cancel)
	s, err := qpb.NewRateLimitQuotaServiceClient(f.conn).StreamRateLimitQuotas(ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return s, cancel
}

// usage is a bucket's usage report.
func usage(elapsed time.Duration, allowed, denied uint64, kv ...string) *qpb.RateLimitQuotaUsageReports_BucketQuotaUsage {
	id := &qpb.BucketId{Bucket: map[string]string{}}
	for i := 0; i+1 < len(kv); i += 2 {
		id.Bucket[kv[i]] = kv[i+1]
	}
	return &qpb.RateLimitQuotaUsageReports_BucketQuotaUsage{BucketId: id, TimeElapsed: durationpb.New(elapsed),
		NumRequestsAllowed: allowed, NumRequestsDenied: denied}
}

// exchange sends a report and returns the next response.
func (f *quotaFixture) exchange(s qpb.RateLimitQuotaService_StreamRateLimitQuotasClient, domain string, us ...*qpb.RateLimitQuotaUsageReports_BucketQuotaUsage) *qpb.RateLimitQuotaResponse {
	f.t.Helper()
	if err := s.Send(&qpb.RateLimitQuotaUsageReports{Domain: domain, BucketQuotaUsages: us}); err != nil {
		f.t.Fatal(err)
	}
	resp, err := s.Recv()
	if err != nil {
		f.t.Fatal(err)
	}
	return resp
}

// info is RL.INFO of a share key: its fields by name.
func (f *quotaFixture) info(key []byte) map[string]int64 {
	f.t.Helper()
	r := submitAll(context.Background(), f.shards, []engine.Command{{Op: engine.OpInfo, Key: key}})[0]
	out := map[string]int64{}
	for _, fl := range r.Fields {
		out[fl.Name] = fl.Int
	}
	return out
}

// strategy describes an action's strategy: "allow", "deny", "abandon", or
// "bucket max/perFill/fill".
func strategy(a *qpb.RateLimitQuotaResponse_BucketAction) (string, time.Duration) {
	qa := a.GetQuotaAssignmentAction()
	if qa == nil {
		return "abandon", 0
	}
	ttl := qa.GetAssignmentTimeToLive().AsDuration()
	s := qa.GetRateLimitStrategy()
	if tb := s.GetTokenBucket(); tb != nil {
		return fmt.Sprintf("bucket %d/%d/%v", tb.GetMaxTokens(), tb.GetTokensPerFill().GetValue(), tb.GetFillInterval().AsDuration()), ttl
	}
	if s.GetBlanketRule() == typepb.RateLimitStrategy_DENY_ALL {
		return "deny", ttl
	}
	return "allow", ttl
}

// actions collects a stream's actions as they come, one by one.
func actions(s qpb.RateLimitQuotaService_StreamRateLimitQuotasClient) <-chan *qpb.RateLimitQuotaResponse_BucketAction {
	ch := make(chan *qpb.RateLimitQuotaResponse_BucketAction, 256)
	go func() {
		defer close(ch)
		for {
			r, err := s.Recv()
			if err != nil {
				return
			}
			for _, a := range r.BucketAction {
				ch <- a
			}
		}
	}()
	return ch
}

// awaitStats waits until the quota service's counters satisfy ok: a
// response is counted once sent, and its receiver may read it first.
func (f *quotaFixture) awaitStats(what string, ok func(QuotaStats) bool) {
	f.t.Helper()
	poll.Until(f.t, 3*time.Second, what, func() (bool, error) {
		st := f.srv.Quota().Stats()
		return ok(st), fmt.Errorf("stats %+v", st)
	})
}

// await reads ch until an action for bucket name has strategy want, and
// fails the test past timeout.
func (f *quotaFixture) await(ch <-chan *qpb.RateLimitQuotaResponse_BucketAction, name, want string, timeout time.Duration) {
	f.t.Helper()
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	var seen []string
	for {
		select {
		case a, ok := <-ch:
			if !ok {
				f.t.Fatalf("the stream ended waiting for %s: %s (saw %v)", name, want, seen)
			}
			if a.GetBucketId().GetBucket()["name"] != name {
				continue
			}
			got, _ := strategy(a)
			if got == want {
				return
			}
			seen = append(seen, got)
		case <-deadline.C:
			f.t.Fatalf("no %s for %s within %v (saw %v)", want, name, timeout, seen)
		}
	}
}
