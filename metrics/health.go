package metrics

import (
	"io"
	"net/http"
)

// healthz answers 200 while the process runs: it says nothing of the
// shards, so an orchestrator restarts only a process that no longer
// answers at all (a node waiting for an election is alive).
func (m *Metrics) healthz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	io.WriteString(w, "ok\n")
}

// readyz answers 200 once the node can serve every shard (its replicas have
// loaded their state and every shard's leader is known), and 503 with the
// reason otherwise, and from the moment shutdown begins.
func (m *Metrics) readyz(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.Header().Set("Cache-Control", "no-store")
	if err := m.notReady(); err != nil {
		w.WriteHeader(http.StatusServiceUnavailable)
		io.WriteString(w, err.Error()+"\n")
		return
	}
	io.WriteString(w, "ready\n")
}

// notReady is why the node is not ready, nil when it is.
func (m *Metrics) notReady() error {
	if m.stopping.Load() {
		return errStopping
	}
	if m.src.Ready == nil {
		return nil
	}
	return m.src.Ready.Ready()
}
