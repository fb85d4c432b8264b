package commands

import (
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/engine"
)

func words(s string) [][]byte {
	var out [][]byte
	for _, w := range strings.Fields(s) {
		out = append(out, []byte(w))
	}
	return out
}

func TestParseInt(t *testing.T) {
	good := map[string]int64{
		"0": 0, "1": 1, "-1": -1, "60000": 60000,
		"9223372036854775807": math.MaxInt64, "-9223372036854775808": math.MinInt64,
	}
	for s, want := range good {
		if v, ok := ParseInt([]byte(s)); !ok || v != want {
			t.Errorf("ParseInt(%q) = %d, %v", s, v, ok)
		}
	}
	for _, s := range []string{"", "-", "+1", " 1", "1 ", "01", "-0", "1.5", "1e3", "9223372036854775808",
		"-9223372036854775809", "99999999999999999999", "abc", "0x10"} {
		if v, ok := ParseInt([]byte(s)); ok {
			t.Errorf("ParseInt(%q) accepted: %d", s, v)
		}
	}
}

func TestParseDecisions(t *testing.T) {
	cases := []struct {
		in   string
		want engine.Command
	}{
		{"RL.SLIDING user:ada 100 60000", engine.Command{Op: engine.OpSliding, Args: [4]int64{100, 60000, 0, 1}}},
		{"rl.sliding user:ada 100 60000 cost 5", engine.Command{Op: engine.OpSliding, Args: [4]int64{100, 60000, 0, 5}}},
		{"RL.FIXED k 1 1 COST 0", engine.Command{Op: engine.OpFixed, Args: [4]int64{1, 1, 0, 0}}},
		{"RL.LOG k 10000 1000", engine.Command{Op: engine.OpLog, Args: [4]int64{10000, 1000, 0, 1}}},
		{"RL.TOKEN k 10 1 1000", engine.Command{Op: engine.OpToken, Args: [4]int64{10, 1, 1000, 1}}},
		{"RL.LEAKY k 10 1 1000 COST 3", engine.Command{Op: engine.OpLeaky, Args: [4]int64{10, 1, 1000, 3}}},
		{"RL.GCRA k 0 1 1000", engine.Command{Op: engine.OpGCRA, Args: [4]int64{0, 1, 1000, 1}}},
		{"CL.THROTTLE user123 15 30 60", engine.Command{Op: engine.OpThrottle, Args: [4]int64{15, 30, 60, 1}}},
		{"CL.THROTTLE user123 15 30 60 0", engine.Command{Op: engine.OpThrottle, Args: [4]int64{15, 30, 60, 0}}},
	}
	for _, c := range cases {
		args := words(c.in)
		spec := Lookup(args[0])
		if spec == nil || spec.CheckArity(args) != nil {
			t.Fatalf("%s: no spec or bad arity", c.in)
		}
		got, err := spec.Parse(args, nil)
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %v %v", c.in, got, err)
		}
		c.want.Key = args[1]
		if got[0].Op != c.want.Op || got[0].Args != c.want.Args || string(got[0].Key) != string(c.want.Key) {
			t.Errorf("%s: got %+v, want %+v", c.in, got[0], c.want)
		}
	}
}

func TestParseRejectsNonsense(t *testing.T) {
	// The bounds are the engine's: its errors carry a code (the server
	// turns it into the reply's first word) and a message naming the
	// parameter. The syntax errors are this package's, in Redis's words.
	param := func(msg string) error { return &engine.Error{Code: engine.CodeParam, Msg: msg} }
	cases := map[string]error{
		"RL.SLIDING k 0 60000":                          param("limit must be an integer from 1 to 1000000000000000"),
		"RL.SLIDING k -5 60000":                         param("limit must be an integer from 1 to 1000000000000000"),
		"RL.SLIDING k 100 0":                            param("window_ms must be an integer from 1 to 1000000000000"),
		"RL.SLIDING k 1.5 60000":                        ErrNotInteger,
		"RL.SLIDING k 100 60000 COST":                   ErrSyntax,
		"RL.SLIDING k 100 60000 COST -1000000000000001": param("cost must be an integer from -1000000000000000 to 1000000000000000"),
		"RL.SLIDING k 100 60000 PRICE 1":                ErrSyntax,
		"RL.SLIDING k 100 60000 COST 1 COST 2":          ErrSyntax,
		"RL.SLIDING k 99999999999999999999 1000":        ErrNotInteger,
		"RL.SLIDING k 1000000000000001 1000":            param("limit must be an integer from 1 to 1000000000000000"),
		"RL.SLIDING k 0 abc":                            param("limit must be an integer from 1 to 1000000000000000"),
		"RL.LOG k 10001 1000":                           param("limit must be an integer from 1 to 10000"),
		"RL.TOKEN k 1000000000000000 1 1000000":         param("capacity * refill_ms / refill_tokens (the time to drain a full bucket) must be at most 1000000000000 ms"),
		"RL.GCRA k -1 1 1000":                           param("burst must be an integer from 0 to 999999999999999"),
		"CL.THROTTLE k 15 30 60 -1":                     param("quantity must be an integer from 0 to 1000000000000000"),
		"CL.THROTTLE k 15 -1 60":                        param("count must be an integer from 1 to 1000000000000000"),
		// redis-cell's words for a zero rate, whichever way it comes.
		"CL.THROTTLE k 15 0 60":         engine.ErrZeroRate,
		"CL.THROTTLE k 15 30 0":         engine.ErrZeroRate,
		"CL.THROTTLE k 15 2000000000 1": engine.ErrZeroRate,
		"CL.THROTTLE k 15 30 60 1 1":    WrongArity("cl.throttle"),
	}
	for in, want := range cases {
		checkParseError(t, in, want)
	}
	if err := Lookup([]byte("rl.sliding")).CheckArity(words("RL.SLIDING k 100")); err == nil ||
		err.Error() != "ERR wrong number of arguments for 'rl.sliding' command" {
		t.Errorf("arity: %v", err)
	}
}

func TestMultiKeyCommandsParseOneEngineCommandPerKey(t *testing.T) {
	args := words("DEL a b c")
	cmds, err := Lookup(args[0]).Parse(args, nil)
	if err != nil || len(cmds) != 3 || cmds[2].Op != engine.OpDel || string(cmds[2].Key) != "c" {
		t.Fatalf("%+v %v", cmds, err)
	}
	var keys []string
	Lookup(args[0]).Keys(args, func(k []byte) { keys = append(keys, string(k)) })
	if strings.Join(keys, ",") != "a,b,c" {
		t.Fatalf("keys %v", keys)
	}
}

func TestParseScan(t *testing.T) {
	a, err := ParseScan(words("SCAN 42 MATCH user:* COUNT 100 TYPE rl.sliding"))
	if err != nil || a.Cursor != 42 || string(a.Match) != "user:*" || a.Count != 100 || a.Kind != engine.KindSliding {
		t.Fatalf("%+v %v", a, err)
	}
	if a, _ := ParseScan(words("SCAN 0 TYPE RL.Sliding")); a.Kind != engine.KindSliding {
		t.Fatal("TYPE is compared ignoring case, as Redis does")
	}
	if a, _ := ParseScan(words("SCAN 0 TYPE hash")); a.Kind != engine.KindHash {
		t.Fatal("TYPE hash is not the hashes'")
	}
	if a, _ := ParseScan(words("SCAN 0 TYPE zset")); !a.UnknownType {
		t.Fatal("unknown TYPE not flagged")
	}
	for _, bad := range []string{"SCAN x", "SCAN 0 COUNT 0", "SCAN 0 COUNT", "SCAN 0 FOO bar", "SCAN -1"} {
		if _, err := ParseScan(words(bad)); err == nil {
			t.Errorf("%s accepted", bad)
		}
	}
}

func TestErrorTexts(t *testing.T) {
	if got := UnknownCommand(words("FOO a b")).Error(); got != "ERR unknown command 'FOO', with args beginning with: 'a' 'b' " {
		t.Errorf("%q", got)
	}
	if got := UnknownSubcommand("client", []byte("nope")).Error(); got != "ERR unknown subcommand 'nope'. Try CLIENT HELP." {
		t.Errorf("%q", got)
	}
	if !errors.Is(ErrCrossSlot, ErrCrossSlot) || !strings.HasPrefix(ErrCrossSlot.Error(), "CROSSSLOT ") {
		t.Error("CROSSSLOT text")
	}
}

func TestTableIsConsistent(t *testing.T) {
	seen := map[string]bool{}
	var check func(s *Spec)
	check = func(s *Spec) {
		if seen[s.Name] {
			t.Errorf("%s listed twice", s.Name)
		}
		seen[s.Name] = true
		if s.Name != strings.ToLower(s.Name) || s.Summary == "" || s.Arity == 0 || s.Group == "" {
			t.Errorf("%s: incomplete spec", s.Name)
		}
		if s.Route == RouteKey && (s.parse == nil || !s.HasKeys()) {
			t.Errorf("%s: keyed command without a parser or key positions", s.Name)
		}
		for _, sub := range s.Sub {
			if !strings.HasPrefix(sub.Name, s.Name+"|") {
				t.Errorf("%s: subcommand %s misnamed", s.Name, sub.Name)
			}
			check(sub)
		}
	}
	for _, s := range All() {
		check(s)
		if Lookup([]byte(strings.ToUpper(s.Name))) != s {
			t.Errorf("Lookup(%s) failed", s.Name)
		}
	}
}

func TestParseAllocatesNothing(t *testing.T) {
	args := words("RL.SLIDING user:ada 100 60000 COST 2")
	dst := make([]engine.Command, 0, 4)
	allocs := testing.AllocsPerRun(1000, func() {
		spec := Lookup(args[0])
		if spec.CheckArity(args) != nil {
			t.Fatal("arity")
		}
		dst, _ = spec.Parse(args, dst[:0])
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per parse", allocs)
	}
}

// checkParseError parses in and fails the test unless it fails with want.
func checkParseError(t *testing.T, in string, want error) {
	t.Helper()
	args := words(in)
	spec := Lookup(args[0])
	err := spec.CheckArity(args)
	if err == nil {
		_, err = spec.Parse(args, nil)
	}
	var e, we *engine.Error
	switch {
	case err == nil:
		t.Errorf("%s: no error, want %q", in, want)
	case errors.As(want, &we):
		if !errors.As(err, &e) || e.Code != we.Code || err.Error() != we.Msg {
			t.Errorf("%s: error %#v, want engine error %#v", in, err, want)
		}
	case err.Error() != want.Error():
		t.Errorf("%s: error %v, want %q", in, err, want)
	}
}
