package status

import (
	_ "embed"
	"encoding/json"
	"errors"
	"net/http"
	"sync"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/server"
)

// Shards are the shard layer's counters (cluster.MemoryShards and
// cluster.RaftShards).
type Shards interface {
	Shards() int
	Stats(shard int) engine.Stats
}

// Cluster is what the page reads of a durable node's Raft groups and of the
// other nodes (cluster.RaftShards); nil in memory.
type Cluster interface {
	Self() cluster.Member
	Members() []cluster.Member
	Topology() []cluster.ShardView
	RaftStates() []cluster.RaftState
	PeerStatus(m cluster.Member) (cluster.PeerView, error)
}

// Server is the Redis-protocol server: its counters and the heaviest keys
// (server.Server).
type Server interface {
	Stats() server.Stats
	TopKeys(denied bool, n int) ([]engine.TopKey, error)
}

// Readiness says why the node is not ready, nil when it is (/readyz's
// answer).
type Readiness interface {
	Ready() error
}

// Sources are what the page reads. Shards and Server are required; Cluster
// is nil in memory, and a nil Ready counts as always ready.
type Sources struct {
	Version string
	Node    string // this node's id
	Shards  Shards
	Server  Server
	Cluster Cluster
	Ready   Readiness
}

const (
	// sampleEvery is the chart's step, and how often the other nodes are
	// asked whether they are up.
	sampleEvery = time.Second
	// downAfter is how long a node may go without answering before the page
	// shows it down, while a status call to it hangs.
	downAfter = 3 * time.Second
	// topRows is how many of the heaviest keys the page lists.
	topRows = 10
)

// Page is the status page and its sampler.
type Page struct {
	src  Sources
	stop chan struct{}
	done sync.WaitGroup

	mu      sync.Mutex
	history history
	peers   map[string]*peer // by node id
}

// peer is what the sampler last learnt of another node.
type peer struct {
	lastOK time.Time // its last answer
	err    string    // why it has not answered lately, "" after an answer
	view   cluster.PeerView
}

// New returns the page of src; Start begins its sampling.
func New(src Sources) (*Page, error) {
	if src.Shards == nil || src.Server == nil {
		return nil, errors.New("status: Sources.Shards and Sources.Server are required")
	}
	return &Page{src: src, stop: make(chan struct{}), peers: map[string]*peer{}}, nil
}

// Start samples the counters and asks the other nodes, once a second, until
// Close.
func (p *Page) Start() {
	p.done.Add(1)
	go func() {
		defer p.done.Done()
		tick := time.NewTicker(sampleEvery)
		defer tick.Stop()
		for {
			p.sample(time.Now())
			select {
			case <-tick.C:
			case <-p.stop:
				return
			}
		}
	}()
}

// Close stops the sampler. Status calls in flight end on their own.
func (p *Page) Close() {
	close(p.stop)
	p.done.Wait()
}

// sample records the decision counters and what every other node last said
// of itself.
func (p *Page) sample(now time.Time) {
	s := sample{at: now}
	for shard := range p.src.Shards.Shards() {
		st := p.src.Shards.Stats(shard)
		s.allowed += st.Allowed
		s.denied += st.Denied
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	p.history.add(s)
	if p.src.Cluster == nil {
		return
	}
	self := p.src.Cluster.Self().ID
	for _, m := range p.src.Cluster.Members() {
		if m.ID == self {
			continue
		}
		pr := p.peers[m.ID]
		if pr == nil {
			pr = &peer{}
			p.peers[m.ID] = pr
		}
		// The cluster answers from its own health polls: no call waits here.
		view, err := p.src.Cluster.PeerStatus(m)
		if err != nil {
			pr.err = err.Error()
			continue
		}
		pr.err, pr.lastOK, pr.view = "", now, view
	}
}

// Register serves the page on mux: "/" and "/status.json".
func (p *Page) Register(mux *http.ServeMux) {
	mux.HandleFunc("GET /{$}", p.serveHTML)
	mux.HandleFunc("GET /status.json", p.serveJSON)
}

//go:embed page.html
var pageHTML []byte

func (p *Page) serveHTML(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Cache-Control", "no-store")
	// Everything is in the page: nothing else may be loaded, or framed.
	h.Set("Content-Security-Policy", "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; connect-src 'self'; img-src data:; frame-ancestors 'none'")
	h.Set("X-Content-Type-Options", "nosniff")
	w.Write(pageHTML)
}

func (p *Page) serveJSON(w http.ResponseWriter, _ *http.Request) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("Cache-Control", "no-store")
	h.Set("X-Content-Type-Options", "nosniff")
	enc := json.NewEncoder(w)
	enc.SetIndent("", " ")
	enc.Encode(p.View(time.Now()))
}
