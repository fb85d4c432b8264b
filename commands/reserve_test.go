package commands

import (
	"bytes"
	"errors"
	"testing"

	"github.com/rlserver/rlserver/engine"
)

func TestParseReserve(t *testing.T) {
	args := words("rl.reserve token k 1000 1000 60000 COST 100 TTL 5000")
	spec := Lookup(args[0])
	got, err := spec.Parse(args, nil)
	want := engine.ReserveCommand(engine.OpToken, []byte("k"), [3]int64{1000, 1000, 60000}, 100, 5000)
	if err != nil || len(got) != 1 || got[0].Op != want.Op || got[0].Args != want.Args || !bytes.Equal(got[0].Value, want.Value) {
		t.Fatalf("%+v %v, want %+v", got, err, want)
	}
	var keys []string
	spec.Keys(args, func(k []byte) { keys = append(keys, string(k)) })
	if len(keys) != 1 || keys[0] != "k" {
		t.Fatalf("keys %q", keys)
	}
	args = words("RL.RESERVE QUOTA k 10 MONTH OFFSET 60 COST 2")
	if got, err := Lookup(args[0]).Parse(args, nil); err != nil || got[0].Args != [4]int64{10, 3, 3_600_000, 2} {
		t.Fatalf("%s: %+v %v", args, got, err)
	}
	param := func(msg string) error { return &engine.Error{Code: engine.CodeParam, Msg: msg} }
	for in, want := range map[string]error{
		"RL.RESERVE TOKEN k 10 1 1000 TTL 5":                 errReserveCost,
		"RL.RESERVE TOKEN k 10 1 1000 COST 0 TTL 5":          param("cost must be an integer from 1 to 1000000000000000"),
		"RL.RESERVE TOKEN k 10 1 1000 COST 1 TTL 0":          param("ttl must be an integer from 1 to 86400000"),
		"RL.RESERVE TOKEN k 10 1 1000 COST 1 TTL 1 TTL 2":    ErrSyntax,
		"RL.RESERVE TOKEN k 10 1 1000 COST 1 FORCE":          ErrSyntax,
		"RL.RESERVE TOKEN k 10 1 1000 COST 1 PARTIAL":        ErrSyntax,
		"RL.RESERVE ACQUIRE k 10 1000 COST 1 TTL 5":          errReserveAlgorithm,
		"RL.RESERVE TOKEN k 0 1 1000 COST 1 TTL 5":           param("capacity must be an integer from 1 to 1000000000000000"),
		"RL.RESERVE TOKEN k 10 1 1000 COST 11":               nil, // a cost above the limit is refused by the shard, as its command's
		"RL.RESERVE TOKEN k 10 1 1000 COST 1000000000000001": param("cost must be an integer from 1 to 1000000000000000"),
	} {
		args := words(in)
		spec := Lookup(args[0])
		err := spec.CheckArity(args)
		if err == nil {
			_, err = spec.Parse(args, nil)
		}
		if !errors.Is(err, want) && (err == nil || want == nil || err.Error() != want.Error()) {
			t.Errorf("%s: %v, want %v", in, err, want)
		}
	}
}

func TestReservationIDs(t *testing.T) {
	for _, key := range []string{"user:ada", "{user:ada}:m", "a}b", "{", "x:y:z"} {
		id := AppendReservationID(nil, "b4", 1782579200220200960, []byte(key))
		seq, k, ok := ParseReservationID(id)
		if !ok || seq != 1782579200220200960 || string(k) != key {
			t.Fatalf("%q: %d %q %v", id, seq, k, ok)
		}
		args := [][]byte{[]byte("RL.SETTLE"), id, []byte("40")}
		spec := Lookup(args[0])
		var keys []string
		spec.Keys(args, func(k []byte) { keys = append(keys, string(k)) })
		got, err := spec.Parse(args, nil)
		if len(keys) != 1 || keys[0] != key || err != nil || string(got[0].Key) != key || got[0].Args != [4]int64{1782579200220200960, 40} {
			t.Fatalf("RL.SETTLE %q: keys %q, %+v %v", id, keys, got, err)
		}
	}
	for _, id := range []string{"", "{", "{}", "{b4}", "{b4}12", "{b4}12:", "{b4}x:k", "{b4}0:k", "{b4}-1:k", "b4}1:k", "{b4}01:k"} {
		if _, _, ok := ParseReservationID([]byte(id)); ok {
			t.Errorf("%q parsed", id)
		}
		if _, err := Lookup([]byte("rl.settle")).Parse([][]byte{[]byte("RL.SETTLE"), []byte(id), []byte("1")}, nil); err != errReservationID {
			t.Errorf("RL.SETTLE %q: %v", id, err)
		}
	}
	args := words("RL.SETTLE {b4}12:k -1")
	if _, err := Lookup(args[0]).Parse(args, nil); !errors.Is(err, engine.ErrParam) {
		t.Errorf("a negative actual: %v", err)
	}
}
