package commands

import (
	"errors"
	"testing"

	"github.com/rlserver/rlserver/engine"
)

// FORCE is an option of every decision that has a budget to go past, of
// RL.CHECK and of RL.ALL (all its limits), in any place among the options.
func TestParseForce(t *testing.T) {
	for _, in := range []string{
		"RL.SLIDING k 1000 60000 COST 1200 FORCE",
		"RL.FIXED k 1000 60000 FORCE COST 1200",
		"rl.log k 1000 60000 force",
		"RL.TOKEN k 1000 1000 60000 COST 1200 FORCE",
		"RL.LEAKY k 1000 1000 60000 FORCE",
		"RL.GCRA k 999 1000 60000 FORCE",
		"RL.SHAPE k 1000 1000 60000 FORCE",
		"RL.QUOTA k 1000 DAY OFFSET 60 FORCE COST 3",
		"RL.CHECK k orders COST 1200 FORCE",
	} {
		args := words(in)
		got, err := Lookup(args[0]).Parse(args, nil)
		if err != nil || len(got) != 1 || got[0].Flags != engine.FlagForce {
			t.Errorf("%s: %+v %v", in, got, err)
		}
	}
	args := words("RL.ALL FIXED {u}m 1000 60000 TOKEN {u}t 10 1 1000 COST 1200 FORCE")
	got, err := Lookup(args[0]).Parse(args, nil)
	if err != nil || len(got) != 3 || got[1].Flags != engine.FlagForce || got[2].Flags != engine.FlagForce || got[2].Args[3] != 1200 {
		t.Fatalf("RL.ALL: %+v %v", got, err)
	}
	for in, want := range map[string]error{
		"RL.TOKEN k 10 1 1000 FORCE FORCE":        ErrSyntax,
		"RL.TOKEN k 10 1 1000 FORCE PARTIAL":      engine.ErrParam,
		"RL.CHECK k orders PARTIAL COST 3 FORCE":  engine.ErrParam,
		"RL.ALL FIXED {u}m 10 1000 FORCE FORCE":   ErrSyntax,
		"RL.ACQUIRE k 10 1000 FORCE":              WrongArity("rl.acquire"),
		"CL.THROTTLE k 15 30 60 FORCE":            ErrNotInteger,
		"RL.ALL FIXED {u}m 10 1000 FORCE PARTIAL": ErrSyntax,
	} {
		args := words(in)
		spec := Lookup(args[0])
		err := spec.CheckArity(args)
		if err == nil {
			_, err = spec.Parse(args, nil)
		}
		if !errors.Is(err, want) && (err == nil || err.Error() != want.Error()) {
			t.Errorf("%s: %v, want %v", in, err, want)
		}
	}
}
