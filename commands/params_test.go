package commands

import (
	"errors"
	"math/rand/v2"
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/engine"
)

// A limit is read the same by its own command, by RL.ALL and by RL.POLICY
// SET, optional parameters included.
func TestLimitsReadAlikeEverywhere(t *testing.T) {
	for _, tc := range []struct {
		limit string // an algorithm's word, then its parameters
		want  [4]int64
	}{
		{"SLIDING 100 60000", [4]int64{100, 60000, 0, 1}},
		{"GCRA 0 1 1000", [4]int64{0, 1, 1000, 1}},
		{"QUOTA 10 DAY", [4]int64{10, 1, 0, 1}},
		{"QUOTA 10 month offset -90", [4]int64{10, 3, -90 * 60_000, 1}},
		{"quota 10 Week OFFSET 840", [4]int64{10, 2, 840 * 60_000, 1}},
	} {
		w := strings.Fields(tc.limit)
		own := "RL." + strings.ToUpper(w[0]) + " {u}k " + strings.Join(w[1:], " ")
		all := "RL.ALL " + w[0] + " {u}k " + strings.Join(w[1:], " ") + " SLIDING {u}x 1 1"
		for _, line := range []string{own, all} {
			args := words(line)
			got, err := Lookup(args[0]).Parse(args, nil)
			c := got[len(got)-1]
			if line == all {
				c = got[1]
			}
			if err != nil || c.Args != tc.want || string(c.Key) != "{u}k" {
				t.Errorf("%s: %+v %v, want %v", line, got, err, tc.want)
			}
		}
		set, err := ParsePolicySet(words("RL.POLICY SET p " + tc.limit))
		want := tc.want
		want[3] = int64(set.Args[3])
		if err != nil || set.Args != want {
			t.Errorf("policy %s: %+v %v, want %v", tc.limit, set, err, want)
		}
	}
}

// What is wrong in a limit is reported as its command reports it,
// whichever command holds it.
func TestLimitErrors(t *testing.T) {
	for _, tc := range []struct{ line, want string }{
		{"RL.QUOTA k 10 FORTNIGHT", "ERR no such period: use DAY, WEEK, MONTH or YEAR"},
		{"RL.QUOTA k 10 DAY OFFSET 841", "offset must be an integer from -840 to 840"},
		{"RL.QUOTA k 10 DAY OFFSET x", ErrNotInteger.Error()},
		{"RL.QUOTA k 10 DAY OFFSET", ErrSyntax.Error()},
		{"RL.ALL QUOTA k 10 DAY OFFSET 841", "offset must be an integer from -840 to 840"},
		{"RL.ALL QUOTA k 10", errAllNotLimit.Error()},
		{"RL.POLICY SET p QUOTA 10 DAY OFFSET", ErrSyntax.Error()},
		{"RL.POLICY SET p QUOTA x DAY junk", ErrNotInteger.Error()}, // read, then measured
		{"RL.POLICY SET p SLIDING x 1000 junk", ErrSyntax.Error()},  // measured, then read
		{"RL.POLICY SET p QUOTA 10", ErrSyntax.Error()},
	} {
		args := words(tc.line)
		var err error
		if strings.HasPrefix(tc.line, "RL.POLICY") {
			_, err = ParsePolicySet(args)
		} else {
			_, err = Lookup(args[0]).Parse(args, nil)
		}
		if err == nil || !strings.HasSuffix(err.Error(), tc.want) {
			t.Errorf("%s: %v, want %q", tc.line, err, tc.want)
		}
	}
}

// Every policy's definition, as the engine writes it for RL.POLICY LIST,
// reads back as the same policy.
func TestPolicyDefinitionsReadBack(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, a := range policyAlgorithms {
		for range 200 {
			words := []string{"RL.POLICY", "SET", "p", a.word}
			for _, p := range a.op.Spec().Params {
				switch {
				case p.Words != nil:
					words = append(words, p.Words[rng.IntN(len(p.Words))])
				case p.Keyword != "":
					if m := p.InCommand(); rng.IntN(2) == 0 {
						words = append(words, p.Keyword, strconv.FormatInt(m.Min+rng.Int64N(m.Max-m.Min+1), 10))
					}
				default:
					words = append(words, strconv.FormatInt(max(p.Min, 1)+rng.Int64N(1000), 10))
				}
			}
			if rng.IntN(2) == 0 {
				words = append(words, "SHADOW")
			}
			set, err := ParsePolicySet(wordsOf(words))
			var param *engine.Error
			if errors.As(err, &param) {
				continue // parameters the algorithm refuses together
			}
			if err != nil {
				t.Fatalf("%q: %v", words, err)
			}
			s := engine.NewShard()
			s.Apply(1, []engine.Command{set}, make([]engine.Result, 1))
			list := s.Inspect(&engine.Command{Op: engine.OpPolicyList})
			again, err := ParsePolicySet(wordsOf(append([]string{"RL.POLICY", "SET", "p"}, strings.Fields(list.Fields[0].Text)...)))
			if err != nil || again.Args != set.Args || again.Flags != set.Flags {
				t.Fatalf("%q was listed as %q, which reads as %+v %v", words, list.Fields[0].Text, again, err)
			}
		}
	}
}

func wordsOf(ws []string) [][]byte { return words(strings.Join(ws, " ")) }

// Reading a limit allocates nothing, its words and options included.
func TestParseLimitAllocatesNothing(t *testing.T) {
	for _, line := range []string{"RL.QUOTA k 10 month OFFSET -90 COST 2", "RL.ALL SLIDING {u}a 10 1000 QUOTA {u}b 5 DAY"} {
		args := words(line)
		spec := Lookup(args[0])
		dst := make([]engine.Command, 0, 4)
		allocs := testing.AllocsPerRun(1000, func() {
			var err error
			if dst, err = spec.Parse(args, dst[:0]); err != nil {
				t.Fatal(err)
			}
		})
		if allocs != 0 {
			t.Errorf("%s: %v allocations", line, allocs)
		}
	}
}

func TestGlobalOption(t *testing.T) {
	for _, tc := range []struct {
		line  string
		flags engine.Flags
		err   string // a prefix of the error, "" for none
	}{
		{"RL.SLIDING k 10 1000 GLOBAL", engine.FlagGlobal, ""},
		{"RL.SLIDING k 10 1000 global strict COST 2", engine.FlagGlobal, ""},
		{"RL.FIXED k 10 1000 COST 2 GLOBAL RELAXED PARTIAL", engine.FlagGlobal | engine.FlagRelaxed | engine.FlagPartial, ""},
		{"RL.TOKEN k 10 1 1000 GLOBAL", engine.FlagGlobal, ""},
		{"RL.GCRA k 10 1 1000 GLOBAL", engine.FlagGlobal, ""},
		{"RL.TOKEN k 10 1 1000 GLOBAL RELAXED", 0, "ERR syntax error"},
		{"RL.LOG k 10 1000 GLOBAL", 0, "ERR syntax error"},
		{"RL.SLIDING k 10 1000 GLOBAL GLOBAL", 0, "ERR syntax error"},
		{"RL.SLIDING k 10 1000 RELAXED", 0, "ERR syntax error"},
	} {
		args := words(tc.line)
		got, err := Lookup(args[0]).Parse(args, nil)
		switch {
		case tc.err != "":
			if err == nil || !strings.HasPrefix(err.Error(), tc.err) {
				t.Errorf("%s: %v, want %s", tc.line, err, tc.err)
			}
		case err != nil || got[0].Flags != tc.flags:
			t.Errorf("%s: %+v %v, want flags %#x", tc.line, got, err, tc.flags)
		}
	}
}

func TestGlobalPolicyOption(t *testing.T) {
	for line, want := range map[string]engine.Flags{
		"RL.POLICY SET p SLIDING 100 60000 GLOBAL":        engine.FlagGlobal,
		"RL.POLICY SET p SLIDING 100 60000 global strict": engine.FlagGlobal,
		"RL.POLICY SET p FIXED 100 60000 GLOBAL RELAXED":  engine.FlagGlobal | engine.FlagRelaxed,
		"RL.POLICY SET p TOKEN 10 1 1000 GLOBAL":          engine.FlagGlobal,
		"RL.POLICY SET p SLIDING 100 60000 SHADOW":        engine.FlagShadow,
	} {
		set, err := ParsePolicySet(words(line))
		if err != nil || set.Flags != want {
			t.Errorf("%s: %+v %v, want flags %#x", line, set, err, want)
		}
	}
	for _, line := range []string{
		"RL.POLICY SET p TOKEN 10 1 1000 GLOBAL RELAXED",
		"RL.POLICY SET p LOG 10 1000 GLOBAL",
		"RL.POLICY SET p SLIDING 100 60000 GLOBAL SHADOW",
	} {
		if _, err := ParsePolicySet(words(line)); err == nil {
			t.Errorf("%s parsed", line)
		}
	}
}
