package commands

import (
	"bytes"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/engine"
)

// keyedSpecs are every command and subcommand parsed into engine commands.
func keyedSpecs() []*Spec {
	var specs []*Spec
	for _, s := range All() {
		if s.Route == RouteKey {
			specs = append(specs, s)
		}
		for _, sub := range s.Sub {
			if sub.Route == RouteKey {
				specs = append(specs, sub)
			}
		}
	}
	return specs
}

// FuzzParse feeds every keyed command arbitrary arguments (the words of
// line, split at spaces): parsing never panics, and whatever it accepts the
// engine accepts too (Command.Valid), keys where Keys says, RL.ALL as one
// well-formed group.
func FuzzParse(f *testing.F) {
	for _, line := range []string{
		"k 100 60000", "k 100 60000 COST -5 PARTIAL", "k 10 DAY OFFSET 180", "k 2 5000", "k 17",
		"SLIDING {u}a 10 1000 QUOTA {u}b 5 MONTH OFFSET -60 POLICY {u}c orders COST 2",
		"k v NX GET PX 100", "k v EXAT 1700000000", "k 10 NX", "k orders PARTIAL", "k 15 30 60 1",
	} {
		for i := range keyedSpecs() {
			f.Add(uint8(i), []byte(line))
		}
	}
	specs := keyedSpecs()
	f.Fuzz(func(t *testing.T, pick uint8, line []byte) {
		spec := specs[int(pick)%len(specs)]
		args := [][]byte{[]byte(spec.Name)}
		if i := strings.IndexByte(spec.Name, '|'); i >= 0 {
			args = [][]byte{[]byte(spec.Name[:i]), []byte(spec.Name[i+1:])}
		}
		args = append(args, bytes.Fields(line)...)
		if spec.CheckArity(args) != nil {
			return
		}
		keys := map[string]bool{}
		spec.Keys(args, func(k []byte) { keys[string(k)] = true })
		cmds, err := spec.Parse(args, nil)
		if err != nil {
			return
		}
		for i, c := range cmds {
			if !c.Valid() {
				t.Fatalf("%q parsed into an invalid command %d: %+v", args, i, c)
			}
			if c.Op != engine.OpAll && len(keys) > 0 && !keys[string(c.Key)] {
				t.Fatalf("%q: command %d's key %q is not among the keys %v", args, i, c.Key, keys)
			}
		}
		if cmds[0].Op == engine.OpAll && int(cmds[0].Args[0]) != len(cmds)-1 {
			t.Fatalf("%q: RL.ALL group of %d limits in %d commands", args, cmds[0].Args[0], len(cmds))
		}
	})
}
