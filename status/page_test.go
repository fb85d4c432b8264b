package status

import (
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/server"
)

type fakeShards struct {
	mu    sync.Mutex
	stats []engine.Stats
}

func (f *fakeShards) Shards() int { return len(f.stats) }
func (f *fakeShards) Stats(i int) engine.Stats {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.stats[i]
}
func (f *fakeShards) add(i int, allowed, denied int64) {
	f.mu.Lock()
	f.stats[i].Allowed += allowed
	f.stats[i].Denied += denied
	f.mu.Unlock()
}

type fakeServer struct{}

func (fakeServer) Stats() server.Stats { return server.Stats{MaxMemory: 1000} }
func (fakeServer) TopKeys(denied bool, n int) ([]engine.TopKey, error) {
	if denied {
		return []engine.TopKey{{Key: "<script>alert(1)</script>", Count: 9, Error: 1}}, nil
	}
	return nil, nil
}

// fakeCluster is three nodes; n3 does not answer.
type fakeCluster struct{}

var members = []cluster.Member{{ID: "n1", Client: "127.0.0.1:1", Bus: "b1"}, {ID: "n2", Client: "127.0.0.1:2", Bus: "b2"}, {ID: "n3", Client: "127.0.0.1:3", Bus: "b3"}}

func (fakeCluster) Self() cluster.Member      { return members[0] }
func (fakeCluster) Members() []cluster.Member { return members }
func (fakeCluster) Topology() []cluster.ShardView {
	return []cluster.ShardView{
		{Shard: 0, First: 0, Last: 8191, Leader: members[0], LeaderKnown: true, Replicas: members},
		{Shard: 1, First: 8192, Last: 16383, Leader: members[1], LeaderKnown: false, Replicas: []cluster.Member{members[1], members[2], members[0]}},
	}
}
func (fakeCluster) RaftStates() []cluster.RaftState {
	return []cluster.RaftState{{Shard: 0, State: "Leader"}, {Shard: 1, State: "Candidate"}}
}
func (fakeCluster) PeerStatus(m cluster.Member) (cluster.PeerView, error) {
	if m.ID == "n3" {
		return cluster.PeerView{}, errors.New("connection refused")
	}
	return cluster.PeerView{Holds: []int{0, 1}, Leads: []int{}}, nil
}

type notReady struct{}

func (notReady) Ready() error { return errors.New("not ready: shard 1 has no known leader") }

func TestView(t *testing.T) {
	shards := &fakeShards{stats: []engine.Stats{{Keys: 3, Charged: 300}, {Keys: 4, Charged: 400}}}
	p, err := New(Sources{Version: "9.9", Node: "n1", Shards: shards, Server: fakeServer{}, Cluster: fakeCluster{}, Ready: notReady{}})
	if err != nil {
		t.Fatal(err)
	}
	t0 := time.Unix(1_700_000_000, 0)
	p.sample(t0)
	shards.add(0, 10, 2)
	p.sample(t0.Add(time.Second))
	shards.add(1, 30, 0)
	p.sample(t0.Add(2 * time.Second))
	shards.mu.Lock()
	shards.stats[0] = engine.Stats{Keys: 3, Charged: 300} // counters restart with a snapshot
	shards.mu.Unlock()
	p.sample(t0.Add(3 * time.Second))

	v := p.View(t0.Add(3 * time.Second))
	if v.Mode != "cluster" || v.Ready || v.NotReady == "" {
		t.Errorf("mode %q ready %v %q", v.Mode, v.Ready, v.NotReady)
	}
	if got := v.Rates.Allowed; len(got) != 3 || got[0] != 10 || got[1] != 30 || got[2] != 0 {
		t.Errorf("allowed rates %v, want [10 30 0]", got)
	}
	if got := v.Rates.Denied; got[0] != 2 || got[1] != 0 {
		t.Errorf("denied rates %v", got)
	}
	if v.Rates.UntilMs != t0.Add(3*time.Second).UnixMilli() {
		t.Errorf("until %d", v.Rates.UntilMs)
	}
	up := map[string]bool{}
	for _, n := range v.Nodes {
		up[n.ID] = n.Up
	}
	if !up["n1"] || !up["n2"] || up["n3"] || v.Nodes[2].Reason != "connection refused" {
		t.Errorf("nodes %+v", v.Nodes)
	}
	s1 := v.Shards[1]
	if s1.Slots != "8192-16383" || s1.LeaderKnown || s1.Replicas[1].Node != "n3" || s1.Replicas[1].Up || s1.Replicas[2].State != "Candidate" {
		t.Errorf("shard 1: %+v", s1)
	}
	if v.Memory.Charged != 700 || v.Memory.MaxMemory != 1000 {
		t.Errorf("memory %+v", v.Memory)
	}
	if len(v.Top.Denied) != 1 || v.Top.Denied[0].Decisions != 9 || v.Top.Allowed == nil {
		t.Errorf("top %+v", v.Top)
	}
}

func TestHandlers(t *testing.T) {
	p, err := New(Sources{Version: "9.9", Node: "n1", Shards: &fakeShards{stats: make([]engine.Stats, 2)}, Server: fakeServer{}})
	if err != nil {
		t.Fatal(err)
	}
	p.Start()
	defer p.Close()
	mux := http.NewServeMux()
	p.Register(mux)

	w := httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/", nil))
	body := w.Body.String()
	if w.Code != 200 || !strings.Contains(w.Header().Get("Content-Security-Policy"), "default-src 'none'") ||
		!strings.Contains(body, `id="chart"`) {
		t.Fatalf("/: %d %v", w.Code, w.Header())
	}
	// No external assets: nothing is loaded from another origin.
	for _, ext := range []string{"http://", "https://", "//cdn", "<link", "src="} {
		if strings.Contains(body, ext) {
			t.Errorf("the page refers to %q", ext)
		}
	}

	w = httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/status.json", nil))
	var v View
	if err := json.Unmarshal(w.Body.Bytes(), &v); err != nil || w.Code != 200 {
		t.Fatalf("/status.json: %d %v", w.Code, err)
	}
	if v.Mode != "in-memory" || len(v.Nodes) != 1 || !v.Nodes[0].Up || len(v.Shards) != 2 || v.Shards[1].Slots != "8192-16383" {
		t.Errorf("%+v", v)
	}
	w = httptest.NewRecorder()
	mux.ServeHTTP(w, httptest.NewRequest("GET", "/other", nil))
	if w.Code != 404 {
		t.Errorf("/other: %d", w.Code)
	}
}
