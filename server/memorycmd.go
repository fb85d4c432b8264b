package server

import (
	"runtime"
	"runtime/debug"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/resp"
)

// memoryUsage is MEMORY USAGE key: answered by the key's shard, as a keyed
// command is.
func (c *conn) memoryUsage(sub *commands.Spec, args [][]byte, out []byte) []byte {
	if err := c.checkRoute(sub, args); err != nil {
		return appendError(out, err)
	}
	c.batchKeyed(sub, args)
	return c.flush(out)
}

// memoryStats is MEMORY STATS: the Go heap's figures and the keys'.
func (c *conn) memoryStats(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	var m runtime.MemStats
	runtime.ReadMemStats(&m)
	t := c.srv.total()
	stats := []struct {
		name string
		v    int64
	}{
		{"peak.allocated", int64(m.HeapSys)},
		{"total.allocated", int64(m.HeapAlloc)},
		{"keys.count", int64(t.Keys)},
		{"keys.bytes-per-key", perKey(t.Bytes, t.Keys)},
		{"dataset.bytes", t.Bytes},
		{"go.heap-objects", int64(m.HeapObjects)},
		{"go.gc-cycles", int64(m.NumGC)},
	}
	out = resp.AppendMap(out, len(stats), c.resp3.Load())
	for _, s := range stats {
		out = resp.AppendBulkString(out, s.name)
		out = resp.AppendInt(out, s.v)
	}
	return out
}

// memoryPurge is MEMORY PURGE: a full collection, then the free pages go
// back to the system.
func (c *conn) memoryPurge(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	debug.FreeOSMemory()
	return resp.AppendOK(out)
}

func perKey(bytes int64, keys int) int64 {
	if keys == 0 {
		return 0
	}
	return bytes / int64(keys)
}
