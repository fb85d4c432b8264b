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
		cfg := DefaultRaftConfig(self, []Member{self})
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
			_, err := openGroup(cfg, 0, nil, true, tr, &observerSlot{}, make(chan error, 1))
			return err
		}, func(*testing.T, *RaftConfig) {}},
		{"a shard whose directory cannot be made", func(cfg *RaftConfig, tr raft.StreamLayer) error {
			_, err := openGroup(cfg, 0, nil, false, tr, &observerSlot{}, make(chan error, 1))
			return err
		}, func(t *testing.T, cfg *RaftConfig) { blocked(t, cfg, "shards/000") }},
		{"a catalogue whose directory cannot be made", func(cfg *RaftConfig, tr raft.StreamLayer) error {
			_, err := openMeta(cfg, tr, make(chan error, 1), nil)
			return err
		}, func(t *testing.T, cfg *RaftConfig) { blocked(t, cfg, "catalogue") }},
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
