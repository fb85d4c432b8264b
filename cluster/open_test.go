package cluster

import (
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/persistence"
)

// closeRecorder is a group's stream that records whether it was closed.
type closeRecorder struct {
	raft.StreamLayer
	closed bool
}

func (c *closeRecorder) Close() error {
	c.closed = true
	return nil
}

// A group or catalogue that fails to open closes the stream it was given:
// on the bus, a stream would otherwise stay registered, accepting for a
// group that does not exist.
func TestAFailedOpenClosesItsTransport(t *testing.T) {
	self := Member{ID: "n1", Bus: "local"}
	config := func(t *testing.T) *RaftConfig {
		cfg := DefaultRaftConfig(self, 1)
		cfg.Layout = persistence.Layout{Dir: t.TempDir()}
		return &cfg
	}
	// blocked puts a file where the directory of a group's stores goes.
	blocked := func(t *testing.T, cfg *RaftConfig, dir string) {
		path := filepath.Join(cfg.Layout.Dir, dir)
		if err := os.MkdirAll(filepath.Dir(path), 0o750); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name string
		open func(*RaftConfig, raft.StreamLayer) error
		prep func(*testing.T, *RaftConfig)
	}{
		{"a shard the catalogue says holds state, without it", func(cfg *RaftConfig, tr raft.StreamLayer) error {
			_, err := openGroup(cfg, 0, nil, true, tr, &observerSlot{}, make(chan error, 1), nodeFitness{})
			return err
		}, func(*testing.T, *RaftConfig) {}},
		{"a shard whose directory cannot be made", func(cfg *RaftConfig, tr raft.StreamLayer) error {
			_, err := openGroup(cfg, 0, nil, false, tr, &observerSlot{}, make(chan error, 1), nodeFitness{})
			return err
		}, func(t *testing.T, cfg *RaftConfig) { blocked(t, cfg, "shards/000") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(t)
			tc.prep(t, cfg)
			tr := &closeRecorder{StreamLayer: idleStream{make(chan struct{})}}
			if err := tc.open(cfg, tr); err == nil {
				t.Fatal("opened, want an error")
			}
			if !tr.closed {
				t.Error("the stream was left open")
			}
		})
	}
}

// idleStream is a stream layer that accepts nothing until it is closed.
type idleStream struct{ closed chan struct{} }

func (s idleStream) Accept() (net.Conn, error) { <-s.closed; return nil, net.ErrClosed }
func (s idleStream) Close() error              { close(s.closed); return nil }
func (s idleStream) Addr() net.Addr            { return &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1)} }
func (s idleStream) Dial(raft.ServerAddress, time.Duration) (net.Conn, error) {
	return nil, net.ErrClosed
}

// A catalogue group that fails to start takes its stream off the bus.
func TestAFailedCatalogueGroupLeavesTheBus(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	self := Member{ID: "n1", Bus: ln.Addr().String()}
	cfg := DefaultRaftConfig(self, 3)
	cfg.Layout, cfg.Bus = persistence.Layout{Dir: t.TempDir()}, ln
	cfg.Control = &staticControl{cat: InitialCatalogue([]Member{self}, 3)}
	n, err := StartRaft(cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer n.Close()
	if err := os.WriteFile(filepath.Join(cfg.Layout.Dir, "catalogue"), nil, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, _, err := n.StartCatalogueGroup(nil); err == nil {
		t.Fatal("started, want an error")
	}
	if n.bus.group(catalogueGroup) != nil {
		t.Error("the catalogue's stream was left on the bus")
	}
}
