package server

import (
	"runtime"
	"runtime/debug"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/internal/resp"
)

// memoryCommand is MEMORY USAGE, STATS, PURGE and HELP.
func (c *conn) memoryCommand(spec *commands.Spec, args [][]byte, out []byte) []byte {
	sub, err := c.subcommand(spec, args)
	if err != nil {
		return appendError(out, err)
	}
	switch sub.Name {
	case "memory|usage":
		if err := c.checkRoute(sub, args); err != nil {
			return appendError(out, err)
		}
		c.batchKeyed(sub, args)
		return c.flush(out)
	case "memory|stats":
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
	case "memory|purge":
		debug.FreeOSMemory() // a full collection, then free pages go back to the system
		return resp.AppendOK(out)
	}
	return appendHelp(out, spec)
}

func perKey(bytes int64, keys int) int64 {
	if keys == 0 {
		return 0
	}
	return bytes / int64(keys)
}
