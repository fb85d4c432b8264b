package server

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/rlserver/rlserver/cluster"
)

// DefaultConfig is valid; a zero Config is not, nor any setting out of its
// range: Validate, and New with it, name the setting at fault.
func TestConfigValidate(t *testing.T) {
	if err := DefaultConfig().Validate(); err != nil {
		t.Fatalf("DefaultConfig: %v", err)
	}
	debug := &cluster.DebugClock{}
	for _, tc := range []struct {
		change func(*Config)
		want   string
	}{
		{func(c *Config) { *c = Config{} }, "max-bulk-len must be at least 1, not 0"},
		{func(c *Config) { c.Limits.MaxBulkLen = 0 }, "max-bulk-len must be at least 1, not 0"},
		{func(c *Config) { c.Limits.MaxArgs = -1 }, "max-args must be at least 1, not -1"},
		{func(c *Config) { c.Limits.MaxRequestLen = 15 }, "max-request-len must be at least 16, not 15"},
		{func(c *Config) { c.Limits.MaxKeyLen = 0 }, "max-key-len must be at least 1, not 0"},
		{func(c *Config) { c.MaxClients = 0 }, "maxclients must be at least 1, not 0"},
		{func(c *Config) { c.Users = nil }, "users must be set (acl.New or acl.Load)"},
		{func(c *Config) { c.IdleTimeout = -time.Second }, "timeout must not be negative (0: never), not -1s"},
		{func(c *Config) { c.Shutdown = 0 }, "shutdown must be positive, not 0s"},
		{func(c *Config) { c.MaxMemory.Bytes = -1 }, "maxmemory must not be negative (0: no limit), not -1"},
		{func(c *Config) { c.MaxMemory.Policy = 7 }, "maxmemory-policy 7 is not a policy"},
		{func(c *Config) { c.TrackingMaxKeys = 0 }, "tracking-table-max-keys must be at least 1, not 0"},
		{func(c *Config) { c.Clock = nil }, "clock must be set"},
		{func(c *Config) { c.Debug = debug }, "debug must be the clock itself, or DEBUG CLOCK would move another clock than the one decisions use"},
	} {
		cfg := DefaultConfig()
		tc.change(&cfg)
		err := cfg.Validate()
		if !errors.Is(err, errInvalidConfig) || !strings.HasSuffix(err.Error(), ": "+tc.want) {
			t.Errorf("Validate: %v, want %q", err, tc.want)
		}
		if srv, err := New(cfg, nil); srv != nil || !errors.Is(err, errInvalidConfig) {
			t.Errorf("New with %q: %v", tc.want, err)
		}
	}
	cfg := DefaultConfig()
	cfg.Clock, cfg.Debug = debug, debug
	if err := cfg.Validate(); err != nil {
		t.Errorf("the debug clock as the clock: %v", err)
	}
	if _, err := New(cfg, nil); err == nil {
		t.Error("New without shards: no error")
	}
}
