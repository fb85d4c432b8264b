package commands

import (
	"testing"

	"github.com/rlserver/rlserver/engine"
)

// RL.SHARE's options come in any order, each at most once; the defaults
// fill the others.
func TestParseShare(t *testing.T) {
	def := func(edit func(q *engine.ShareRequest)) engine.ShareRequest {
		q := engine.ShareRequest{Holder: []byte("envoy-1"), Limit: 1000, Window: 60000, Demand: engine.UnknownDemand,
			TTL: engine.DefaultShareTTL, Burst: engine.DefaultShareBurst}
		if edit != nil {
			edit(&q)
		}
		return q
	}
	for in, want := range map[string]engine.ShareRequest{
		"RL.SHARE k 1000 60000 envoy-1":                                     def(nil),
		"rl.share k 1000 60000 envoy-1 demand 700":                          def(func(q *engine.ShareRequest) { q.Demand = 700 }),
		"RL.SHARE k 1000 60000 envoy-1 ACK 5 TTL 3000 BURST 0 DEMAND 0":     def(func(q *engine.ShareRequest) { q.Ack, q.TTL, q.Burst, q.Demand = 5, 3000, 0, 0 }),
		"RL.SHARE k 1000 50 envoy-1":                                        def(func(q *engine.ShareRequest) { q.Window, q.Burst = 50, 50 }),
		"RL.SHARE k 1000 60000 envoy-1 BURST 60000 TTL 86400000":            def(func(q *engine.ShareRequest) { q.Burst, q.TTL = 60000, 86400000 }),
		"RL.SHARE k 1000 60000 envoy-1 ACK 9223372036854775807 DEMAND 0":    def(func(q *engine.ShareRequest) { q.Ack, q.Demand = 9223372036854775807, 0 }),
		"RL.SHARE k 1000000000000000 60000 envoy-1 DEMAND 1000000000000000": def(func(q *engine.ShareRequest) { q.Limit, q.Demand = 1000000000000000, 1000000000000000 }),
	} {
		args := words(in)
		spec := Lookup(args[0])
		if spec.CheckArity(args) != nil {
			t.Fatalf("%s: arity", in)
		}
		got, err := spec.Parse(args, nil)
		if err != nil || len(got) != 1 {
			t.Fatalf("%s: %v %v", in, got, err)
		}
		wc := want.Command([]byte("k"))
		if got[0].Op != engine.OpShare || got[0].Args != wc.Args || string(got[0].Value) != string(wc.Value) || string(got[0].Key) != "k" {
			t.Errorf("%s: %+v, want %+v", in, got[0], wc)
		}
	}
	got, err := Lookup([]byte("RL.UNSHARE")).Parse(words("RL.UNSHARE k envoy-1"), nil)
	if err != nil || len(got) != 1 || got[0].Op != engine.OpUnshare || string(got[0].Value) != "envoy-1" {
		t.Fatalf("RL.UNSHARE: %+v %v", got, err)
	}
}

func TestParseShareRejectsNonsense(t *testing.T) {
	param := func(msg string) error { return &engine.Error{Code: engine.CodeParam, Msg: msg} }
	for in, want := range map[string]error{
		"RL.SHARE k 0 1000 h":                   param("limit must be an integer from 1 to 1000000000000000"),
		"RL.SHARE k 10 0 h":                     param("window_ms must be an integer from 1 to 1000000000000"),
		"RL.SHARE k x 1000 h":                   ErrNotInteger,
		"RL.SHARE k 10 1000 h DEMAND -1":        param("demand must be an integer from 0 to 1000000000000000"),
		"RL.SHARE k 10 1000 h DEMAND x":         ErrNotInteger,
		"RL.SHARE k 10 1000 h TTL 0":            param("ttl must be an integer from 1 to 86400000"),
		"RL.SHARE k 10 1000 h TTL 86400001":     param("ttl must be an integer from 1 to 86400000"),
		"RL.SHARE k 10 1000 h BURST 1001":       param("burst must be an integer from 0 to 1000 (window_ms)"),
		"RL.SHARE k 10 1000 h BURST -1":         param("burst must be an integer from 0 to 1000000000000"),
		"RL.SHARE k 10 1000 h ACK 0":            param("ack must be an integer from 1 to 9223372036854775807"),
		"RL.SHARE k 10 1000 h TTL 5 TTL 6":      ErrSyntax,
		"RL.SHARE k 10 1000 h TTL":              ErrSyntax,
		"RL.SHARE k 10 1000 h COST 1":           ErrSyntax,
		"RL.SHARE k 10 1000 h DEMAND 1 PARTIAL": ErrSyntax,
		"RL.SHARE k 10 1000":                    WrongArity("rl.share"),
		"RL.UNSHARE k":                          WrongArity("rl.unshare"),
		"RL.UNSHARE k h h":                      WrongArity("rl.unshare"),
	} {
		checkParseError(t, in, want)
	}
	long := make([]byte, engine.MaxHolderLen+1)
	for i := range long {
		long[i] = 'h'
	}
	for _, in := range []string{"RL.SHARE k 10 1000 " + string(long), "RL.UNSHARE k " + string(long)} {
		checkParseError(t, in, param("holder must be 1 to 256 bytes long"))
	}
	if _, err := Lookup([]byte("RL.SHARE")).Parse([][]byte{[]byte("RL.SHARE"), []byte("k"), []byte("1"), []byte("1"), {}}, nil); err == nil {
		t.Error("an empty holder accepted")
	}
}
