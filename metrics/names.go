package metrics

import (
	"strconv"

	"github.com/rlserver/rlserver/engine"
)

// commandNames label decisions by the command that asks for them, in the
// lower case Redis's INFO commandstats uses. RL.ALL's limits are counted
// under their own commands; RL.CHECK's under rl.check.
var commandNames = map[engine.Op]string{
	engine.OpSliding:  "rl.sliding",
	engine.OpFixed:    "rl.fixed",
	engine.OpLog:      "rl.log",
	engine.OpToken:    "rl.token",
	engine.OpLeaky:    "rl.leaky",
	engine.OpGCRA:     "rl.gcra",
	engine.OpThrottle: "cl.throttle",
	engine.OpShape:    "rl.shape",
	engine.OpQuota:    "rl.quota",
	engine.OpAcquire:  "rl.acquire",
	engine.OpCheck:    "rl.check",
}

// commandName is op's command, or "op<n>" for an op added to the engine
// after this table: counted, if not yet well named.
func commandName(op engine.Op) string {
	if name, ok := commandNames[op]; ok {
		return name
	}
	return "op" + strconv.Itoa(int(op))
}
