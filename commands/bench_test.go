package commands

import (
	"strings"
	"testing"

	"github.com/rlserver/rlserver/engine"
)

// BenchmarkParse parses the decision commands as the server does for every
// request: the spec's lookup, its arity, and the engine commands.
func BenchmarkParse(b *testing.B) {
	for _, line := range []string{
		"RL.SLIDING user:ada 100 60000",
		"RL.GCRA user:ada 99 100 60000 COST 2",
		"RL.QUOTA user:ada 1000000 MONTH OFFSET 180",
		"RL.ALL SLIDING {u}:s 10 1000 QUOTA {u}:m 100 DAY",
	} {
		args := words(line)
		dst := make([]engine.Command, 0, 4)
		b.Run(strings.Fields(line)[0], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				spec := Lookup(args[0])
				if spec.CheckArity(args) != nil {
					b.Fatal("arity")
				}
				var err error
				if dst, err = spec.Parse(args, dst[:0]); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
