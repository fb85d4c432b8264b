package metrics

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
)

// get requests path from h and returns the status and body.
func get(t *testing.T, h http.Handler, path string) (int, string) {
	t.Helper()
	rec := httptest.NewRecorder()
	h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
	body, _ := io.ReadAll(rec.Result().Body)
	return rec.Code, string(body)
}

// /readyz says 503 with the reason until the node is ready, then 200, and
// 503 again once shutdown begins; /healthz says 200 throughout; the
// rlserver_ready gauge follows /readyz.
func TestReadyzFlipsToReady(t *testing.T) {
	src := testSources()
	ready := src.Ready.(*fakeReady)
	ready.set(errors.New("not ready: shard 1 has no known leader"))
	m, err := New(src)
	if err != nil {
		t.Fatal(err)
	}
	h := m.Handler()
	readyGauge := func() float64 {
		v, _ := find(t, gather(t, m), "rlserver_ready", "")
		return v
	}

	if code, body := get(t, h, "/readyz"); code != 503 || !strings.Contains(body, "shard 1 has no known leader") {
		t.Errorf("/readyz while not ready: %d %q", code, body)
	}
	if code, _ := get(t, h, "/healthcheck"); code != 503 {
		t.Errorf("/healthcheck while not ready: %d", code)
	}
	if v := readyGauge(); v != 0 {
		t.Errorf("rlserver_ready = %v while not ready", v)
	}
	if code, body := get(t, h, "/healthz"); code != 200 || body != "ok\n" {
		t.Errorf("/healthz while not ready: %d %q", code, body)
	}

	ready.set(nil)
	if code, body := get(t, h, "/readyz"); code != 200 || body != "ready\n" {
		t.Errorf("/readyz once ready: %d %q", code, body)
	}
	if code, body := get(t, h, "/healthcheck"); code != 200 || body != "ready\n" {
		t.Errorf("/healthcheck (envoyproxy/ratelimit's /readyz) once ready: %d %q", code, body)
	}
	if v := readyGauge(); v != 1 {
		t.Errorf("rlserver_ready = %v once ready", v)
	}

	m.Stopping()
	if code, body := get(t, h, "/readyz"); code != 503 || !strings.Contains(body, "shutting down") {
		t.Errorf("/readyz while stopping: %d %q", code, body)
	}
	if code, _ := get(t, h, "/healthz"); code != 200 {
		t.Errorf("/healthz while stopping: %d", code)
	}
}

func TestMetricsEndpointServesTheTextFormat(t *testing.T) {
	m, err := New(testSources())
	if err != nil {
		t.Fatal(err)
	}
	code, body := get(t, m.Handler(), "/metrics")
	if code != 200 || !strings.Contains(body, `rlserver_decisions_total{command="rl.sliding",outcome="allowed",shard="0"} 7`) {
		t.Errorf("/metrics: %d, body without the sliding decisions:\n%.2000s", code, body)
	}
	if code, _ := get(t, m.Handler(), "/debug/pprof/"); code != 404 {
		t.Errorf("/debug/pprof/ on the metrics port: %d, want 404 (pprof has its own --pprof address)", code)
	}
}
