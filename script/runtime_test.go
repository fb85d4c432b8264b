package script

import (
	"os"
	"testing"

	"github.com/rlserver/rlserver/engine"
)

// TestRuntimePinned pins what this runtime does with a few scripts: their
// replies and the instructions and bytes the meter counts. Replicas replay
// scripts, and a script near its budget fails or succeeds by these counts:
// a change of gopher-lua, or of this package, that changes them would make
// a replica of the new release replay an old entry differently. If the
// change is intended, bump engine.ScriptRuntime (replicas of the old
// release then refuse the new entries instead of diverging) and update
// the figures.
func TestRuntimePinned(t *testing.T) {
	seed, err := os.ReadFile("../bench/seed.lua")
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name, body        string
		instructions, mem int64
		reply             string
	}{
		{"seed", string(seed), 77, 1398, lines("*3", ":1", ":99", ":0")},
		{"loop", "local n = 0 for i = 1, 1000 do n = n + i end return n", 2007, 214, lines(":500500")},
		{"strings", "local t = {} for i = 1, 20 do t[#t+1] = tostring(i) .. ',' end return table.concat(t)", 171, 1340, ""},
	}
	if engine.ScriptRuntime != 2 {
		t.Fatalf("ScriptRuntime %d: pin this release's figures", engine.ScriptRuntime)
	}
	for _, tt := range tests {
		ts := newTestShard(t)
		runner := New(Config{})
		ts.s.SetScripts(runner)
		reply := ts.eval(tt.body, []string{"k"}, "100", "60000", "1700000000000")
		if tt.reply != "" && reply != tt.reply {
			t.Errorf("%s: reply %q, want %q", tt.name, reply, tt.reply)
		}
		in := runner.idle[len(runner.idle)-1] // the interpreter that ran it
		if in.meter.instructions != tt.instructions || in.meter.bytes != tt.mem {
			t.Errorf("%s: %d instructions, %d bytes; pinned %d and %d", tt.name, in.meter.instructions, in.meter.bytes, tt.instructions, tt.mem)
		}
	}
}
