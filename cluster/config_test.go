package cluster

import (
	"crypto/tls"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/persistence"
)

func TestMemoryConfigValidate(t *testing.T) {
	if err := DefaultMemoryConfig().Validate(); err != nil {
		t.Fatalf("the defaults: %v", err)
	}
	cases := []struct {
		name   string
		change func(*MemoryConfig)
		want   string // in the error: the setting at fault
	}{
		{"no shards", func(c *MemoryConfig) { c.Shards = 0 }, "MemoryConfig.Shards"},
		{"more shards than SCAN's cursor holds", func(c *MemoryConfig) { c.Shards = MaxShards + 1 }, "MemoryConfig.Shards"},
		{"no clock", func(c *MemoryConfig) { c.Clock = nil }, "MemoryConfig.Clock"},
		{"a snapshot nice above 19", func(c *MemoryConfig) { c.SnapshotNice = 20 }, "MemoryConfig.SnapshotNice"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := DefaultMemoryConfig()
			c.change(&cfg)
			checkRefused(t, c.want, cfg.Validate, func() error {
				m, err := NewMemoryShards(cfg)
				if m != nil {
					m.Close()
				}
				return err
			})
		})
	}
	cfg := DefaultMemoryConfig()
	cfg.Shards = MaxShards
	if err := cfg.Validate(); err != nil {
		t.Fatalf("%d shards: %v", MaxShards, err)
	}
}

// The Raft defaults depend on the membership: a single node elects itself
// faster than a cluster, whose heartbeat rides out a loaded machine's pauses.
func TestDefaultRaftConfigFollowsTheMembership(t *testing.T) {
	cases := []struct {
		nodes     int
		heartbeat time.Duration
	}{
		{1, 100 * time.Millisecond},
		{3, 500 * time.Millisecond},
	}
	for _, c := range cases {
		cfg := DefaultRaftConfig(Member{ID: "n1", Bus: "a:1"}, c.nodes)
		if cfg.HeartbeatTimeout != c.heartbeat || cfg.ElectionTimeout != c.heartbeat || cfg.Shards != c.nodes {
			t.Errorf("%d nodes: heartbeat %v, election %v, %d shards; want %v and one shard a node",
				c.nodes, cfg.HeartbeatTimeout, cfg.ElectionTimeout, cfg.Shards, c.heartbeat)
		}
	}
}

func TestRaftConfigValidate(t *testing.T) {
	self := Member{ID: "n1", Client: "127.0.0.1:6381", Bus: "127.0.0.1:16381"}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	valid := func() RaftConfig {
		cfg := DefaultRaftConfig(self, 3)
		cfg.Layout, cfg.Bus = persistence.Layout{Dir: t.TempDir()}, ln
		cfg.Control = &staticControl{cat: InitialCatalogue([]Member{self}, 3)}
		return cfg
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("a valid config: %v", err)
	}
	cases := []struct {
		name   string
		change func(*RaftConfig)
		want   string
	}{
		{"no self", func(c *RaftConfig) { c.Self = Member{} }, "RaftConfig.Self.ID"},
		{"no shards", func(c *RaftConfig) { c.Shards = 0 }, "RaftConfig.Shards"},
		{"too many shards", func(c *RaftConfig) { c.Shards = MaxShards + 1 }, "RaftConfig.Shards"},
		{"no data directory", func(c *RaftConfig) { c.Layout = persistence.Layout{} }, "RaftConfig.Layout"},
		{"no clock", func(c *RaftConfig) { c.Clock = nil }, "RaftConfig.Clock"},
		{"no log", func(c *RaftConfig) { c.Log = nil }, "RaftConfig.Log"},
		{"no dialer", func(c *RaftConfig) { c.Dial = nil }, "RaftConfig.Dial"},
		{"bus TLS without a certificate", func(c *RaftConfig) { c.BusTLS = &BusTLS{} }, "RaftConfig.BusTLS.Certificate"},
		{"bus TLS without CAs", func(c *RaftConfig) {
			c.BusTLS = &BusTLS{Certificate: tls.Certificate{Certificate: [][]byte{{1}}}}
		}, "RaftConfig.BusTLS.CAs"},
		{"heartbeat too short", func(c *RaftConfig) { c.HeartbeatTimeout = time.Millisecond }, "RaftConfig.HeartbeatTimeout"},
		{"heartbeat too long", func(c *RaftConfig) { c.HeartbeatTimeout, c.ElectionTimeout = time.Hour, time.Hour }, "RaftConfig.HeartbeatTimeout"},
		{"election shorter than the heartbeat", func(c *RaftConfig) { c.ElectionTimeout = c.HeartbeatTimeout / 2 }, "RaftConfig.ElectionTimeout"},
		{"no snapshot threshold", func(c *RaftConfig) { c.SnapshotThreshold = 0 }, "RaftConfig.SnapshotThreshold"},
		{"a log percentage past 10,000", func(c *RaftConfig) { c.SnapshotLogPercent = 10_001 }, "RaftConfig.SnapshotLogPercent"},
		{"a negative snapshot nice", func(c *RaftConfig) { c.SnapshotNice = -1 }, "RaftConfig.SnapshotNice"},
		{"snapshot interval too short", func(c *RaftConfig) { c.SnapshotInterval = time.Millisecond }, "SnapshotInterval"},
		{"no request timeout", func(c *RaftConfig) { c.RequestTimeout = 0 }, "RaftConfig.RequestTimeout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := valid()
			c.change(&cfg)
			checkRefused(t, c.want, cfg.Validate, func() error {
				n, err := StartRaft(cfg)
				if n != nil {
					n.Close()
				}
				return err
			})
		})
	}
	// A single node needs no bus.
	cfg := DefaultRaftConfig(Member{ID: "n1", Bus: "local"}, 1)
	cfg.Layout = persistence.Layout{Dir: t.TempDir()}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a single node: %v", err)
	}
	// No node starts without the control plane that says which replicas
	// it holds.
	cfg.Control = nil
	if n, err := StartRaft(cfg); err == nil || !strings.Contains(err.Error(), "RaftConfig.Control") {
		if n != nil {
			n.Close()
		}
		t.Fatalf("StartRaft without a control plane: %v, want an error naming RaftConfig.Control", err)
	}
}

// checkRefused checks that validate's error names setting, and that start,
// which starts shards with the same config, fails with that error.
func checkRefused(t *testing.T, setting string, validate, start func() error) {
	t.Helper()
	err := validate()
	if err == nil || !strings.Contains(err.Error(), setting) {
		t.Fatalf("Validate: %v, want an error naming %s", err, setting)
	}
	if serr := start(); serr == nil || serr.Error() != err.Error() {
		t.Fatalf("starting: %v, want Validate's error", serr)
	}
}
