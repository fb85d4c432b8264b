package cluster

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/persistence"
)

// closeRecorder is a transport that records whether it was closed.
type closeRecorder struct {
	raft.Transport
	closed bool
}

func (c *closeRecorder) Close() error {
	c.closed = true
	return nil
}

// A group or catalogue that fails to open closes the transport it was
// given: on the bus, a transport's stream would otherwise stay registered,
// accepting for a group that does not exist, with its goroutines.
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
		open func(*RaftConfig, raft.Transport) error
		prep func(*testing.T, *RaftConfig)
	}{
		{"a shard the catalogue says holds state, without it", func(cfg *RaftConfig, tr raft.Transport) error {
			_, err := openGroup(cfg, 0, nil, true, tr, &observerSlot{}, make(chan error, 1))
			return err
		}, func(*testing.T, *RaftConfig) {}},
		{"a shard whose directory cannot be made", func(cfg *RaftConfig, tr raft.Transport) error {
			_, err := openGroup(cfg, 0, nil, false, tr, &observerSlot{}, make(chan error, 1))
			return err
		}, func(t *testing.T, cfg *RaftConfig) { blocked(t, cfg, "shards/000") }},
		{"a catalogue whose directory cannot be made", func(cfg *RaftConfig, tr raft.Transport) error {
			_, err := openMeta(cfg, tr, make(chan error, 1), nil)
			return err
		}, func(t *testing.T, cfg *RaftConfig) { blocked(t, cfg, "catalogue") }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cfg := config(t)
			tc.prep(t, cfg)
			_, inmem := raft.NewInmemTransport("local")
			tr := &closeRecorder{Transport: inmem}
			if err := tc.open(cfg, tr); err == nil {
				t.Fatal("opened, want an error")
			}
			if !tr.closed {
				t.Error("the transport was left open")
			}
		})
	}
}
