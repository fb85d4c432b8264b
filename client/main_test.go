package client

import (
	"context"
	"os"
	"testing"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/client/internal/rltest"
)

// TestMain lets the integration tests build rlserver once (on first use)
// and removes the binary afterwards.
func TestMain(m *testing.M) {
	// The tests dial closed ports on purpose; go-redis would log each one.
	redis.SetLogger(silentRedisLog{})
	os.Exit(rltest.Main(m))
}

type silentRedisLog struct{}

func (silentRedisLog) Printf(context.Context, string, ...any) {}
