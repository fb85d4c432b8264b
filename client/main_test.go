package client

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/rlproc"
)

// TestMain lets the integration tests build rlserver once (on first use,
// see rlproc.Binary) and removes the binary afterwards.
func TestMain(m *testing.M) {
	// The tests dial closed ports on purpose; go-redis would log each one.
	redis.SetLogger(silentRedisLog{})
	os.Exit(rlproc.Main(m))
}

type silentRedisLog struct{}

func (silentRedisLog) Printf(context.Context, string, ...any) {}

// startServer runs rlserver --in-memory with the debug clock on a free
// loopback port; it is stopped when the test ends.
func startServer(t testing.TB) *rlproc.Process {
	t.Helper()
	return rlproc.Launch(t, rlproc.Config{
		Dir:  t.TempDir(),
		Args: []string{"--in-memory", "--enable-debug-command", "--bind", "127.0.0.1", "--port", "0"},
	})
}

// contextTimeouts makes a go-redis client honour its contexts' deadlines,
// as a limiter's client should.
func contextTimeouts(o *redis.Options) { o.ContextTimeoutEnabled = true }
