package script

import (
	"strings"
	"testing"

	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// testShard is a shard with a runner, at a fixed time.
type testShard struct {
	t   *testing.T
	s   *engine.Shard
	now int64
}

func newTestShard(t *testing.T) *testShard {
	s := engine.NewShard()
	s.SetScripts(New(Config{}))
	return &testShard{t: t, s: s, now: 1_700_000_000_000}
}

// apply applies one command and returns its result.
func (ts *testShard) apply(c engine.Command) engine.Result {
	if err := c.Check(); err != nil {
		ts.t.Fatalf("invalid command %+v: %v", c, err)
	}
	out := make([]engine.Result, 1)
	ts.s.Apply(ts.now, []engine.Command{c}, out)
	return out[0]
}

// eval runs body with keys and args, and returns its reply (in RESP3) or
// error text.
func (ts *testShard) eval(body string, keys []string, args ...string) string {
	parts := [][]byte{[]byte(body)}
	for _, k := range keys {
		parts = append(parts, []byte(k))
	}
	for _, a := range args {
		parts = append(parts, []byte(a))
	}
	c := engine.Command{Op: engine.OpEval, Value: engine.Pack(parts), Args: [4]int64{engine.ScriptRuntime, int64(len(keys))}}
	if len(keys) > 0 {
		c.Key = []byte(keys[0])
	}
	r := ts.apply(c)
	if r.Type == engine.ResError {
		return "-" + r.Err.Error()
	}
	return string(resp.AppendValues(nil, r.Values, true))
}

// lines is the RESP text of lines, each ended by CRLF.
func lines(parts ...string) string { return strings.Join(parts, "\r\n") + "\r\n" }

// runRaw runs body without keys or arguments and returns its result.
func (ts *testShard) runRaw(body string) engine.Result {
	c := engine.Command{Op: engine.OpEval, Value: engine.Pack([][]byte{[]byte(body)}), Args: [4]int64{engine.ScriptRuntime, 0}}
	return ts.apply(c)
}
