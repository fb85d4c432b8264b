package rls

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	healthpb "google.golang.org/grpc/health/grpc_health_v1"

	"github.com/rlserver/rlserver/internal/poll"
)

// A node that cannot serve yet says NOT_SERVING, and SERVING within moments
// of becoming ready, however long ReadyInterval is: a node that has just
// started is asked again soon (the end-to-end test of the README's examples
// once checked health before a durable node's first ReadyInterval had
// passed, and found it still NOT_SERVING).
func TestHealthSaysServingSoonAfterTheNodeIsReady(t *testing.T) {
	f := newFixture(t, "domain: unused\n", Options{})
	var ready atomic.Bool
	s := NewServer(f.svc, ServerOptions{ReadyInterval: time.Hour, Ready: func() error {
		if ready.Load() {
			return nil
		}
		return errors.New("not ready: shard 0 is loading")
	}})
	t.Cleanup(func() { s.Stop(time.Second) })
	status := func() (healthpb.HealthCheckResponse_ServingStatus, error) {
		h, err := s.health.Check(context.Background(), &healthpb.HealthCheckRequest{Service: ""})
		if err != nil {
			return 0, err
		}
		return h.Status, nil
	}
	if st, err := status(); err != nil || st != healthpb.HealthCheckResponse_NOT_SERVING {
		t.Fatalf("before the node is ready: %v %v", st, err)
	}
	ready.Store(true)
	poll.Until(t, 10*time.Second, "SERVING once the node is ready", func() (bool, error) {
		st, err := status()
		return st == healthpb.HealthCheckResponse_SERVING, err
	})
}
