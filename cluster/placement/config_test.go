package placement

import (
	"net"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/persistence"
)

// A node's place in its cluster is checked before anything starts, with
// an error that names the setting at fault; the data plane's own settings
// are checked too (cluster.RaftConfig.Validate).
func TestConfigValidate(t *testing.T) {
	self := cluster.Member{ID: "n1", Client: "127.0.0.1:6381", Bus: "127.0.0.1:16381"}
	three := []cluster.Member{self, {ID: "n2", Client: "127.0.0.1:6382", Bus: "127.0.0.1:16382"}, {ID: "n3", Client: "127.0.0.1:6383", Bus: "127.0.0.1:16383"}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	valid := func() Config {
		cfg := DefaultConfig(self, three)
		cfg.Layout, cfg.Bus, cfg.Incarnation = persistence.Layout{Dir: t.TempDir()}, ln, "0123456789abcdef"
		return cfg
	}
	if err := valid().Validate(); err != nil {
		t.Fatalf("a valid config: %v", err)
	}
	cases := []struct {
		name   string
		change func(*Config)
		want   string
	}{
		{"no self", func(c *Config) { c.Self = cluster.Member{} }, "Config.Self.ID"},
		{"self not a member", func(c *Config) { c.Self = cluster.Member{ID: "n9"} }, "Config.Self"},
		{"self unlike its entry", func(c *Config) { c.Self.Bus = "127.0.0.1:1" }, "Config.Self"},
		{"a member twice", func(c *Config) { c.Members = append(c.Members[:3:3], c.Members[1]) }, "Config.Members"},
		{"a member without an id", func(c *Config) { c.Members = append(c.Members[:3:3], cluster.Member{}) }, "Config.Members"},
		{"two members on one bus address", func(c *Config) {
			c.Members = append(c.Members[:3:3], cluster.Member{ID: "n4", Client: "127.0.0.1:6384", Bus: c.Members[1].Bus})
		}, "Config.Members"},
		{"two members on one client address", func(c *Config) {
			c.Members = append(c.Members[:3:3], cluster.Member{ID: "n4", Client: c.Members[2].Client, Bus: "127.0.0.1:16384"})
		}, "Config.Members"},
		{"a joining node with members, not one of them", func(c *Config) { c.Join, c.Members = "127.0.0.1:16390", c.Members[1:] }, "Config.Self"},
		{"a cluster without a bus", func(c *Config) { c.Bus = nil }, "Config.Bus"},
		{"a cluster without an incarnation", func(c *Config) { c.Incarnation = "" }, "Config.Incarnation"},
		{"a negative replace-dead-after", func(c *Config) { c.ReplaceDeadAfter = -time.Second }, "Config.ReplaceDeadAfter"},
		{"no shards", func(c *Config) { c.Shards = 0 }, "RaftConfig.Shards"},
		{"no data directory", func(c *Config) { c.Layout = persistence.Layout{} }, "RaftConfig.Layout"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			cfg := valid()
			c.change(&cfg)
			err := cfg.Validate()
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Validate: %v, want an error naming %s", err, c.want)
			}
			n, serr := Start(cfg)
			if n != nil {
				n.Close()
			}
			if serr == nil || serr.Error() != err.Error() {
				t.Fatalf("Start: %v, want Validate's error", serr)
			}
		})
	}
	// A joining node learns the shard count from the cluster.
	cfg := valid()
	cfg.Members, cfg.Join, cfg.Shards = nil, "127.0.0.1:16390", 0
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a joining node: %v", err)
	}
	// A single node needs no bus.
	cfg = DefaultConfig(self, []cluster.Member{self})
	cfg.Layout = persistence.Layout{Dir: t.TempDir()}
	if err := cfg.Validate(); err != nil {
		t.Fatalf("a single node: %v", err)
	}
}
