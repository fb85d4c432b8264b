package commands

import (
	"strings"
	"testing"

	"github.com/rlserver/rlserver/engine"
)

// MGET is a GET a key and MSET a SET a pair (no options); MSET's keys are
// every other argument, and its arity wants whole pairs, checked before its
// keys' slots as Redis checks it; WATCH names keys too.
func TestMGetMSetAndWatchParse(t *testing.T) {
	args := words("MGET a b a")
	cmds, err := Lookup(args[0]).Parse(args, nil)
	if err != nil || len(cmds) != 3 || cmds[1].Op != engine.OpGet || string(cmds[2].Key) != "a" {
		t.Fatalf("MGET: %+v %v", cmds, err)
	}
	args = words("MSET {t}a 1 {t}b two")
	spec := Lookup(args[0])
	cmds, err = spec.Parse(args, nil)
	if err != nil || len(cmds) != 2 || cmds[1].Op != engine.OpSet || string(cmds[1].Key) != "{t}b" ||
		string(cmds[1].Value) != "two" || cmds[1].Flags != 0 || cmds[1].Args != [4]int64{} || !spec.SameSlot {
		t.Fatalf("MSET: %+v %v", cmds, err)
	}
	var keys []string
	spec.Keys(args, func(k []byte) { keys = append(keys, string(k)) })
	if strings.Join(keys, ",") != "{t}a,{t}b" {
		t.Fatalf("MSET keys %v", keys)
	}
	for _, bad := range []string{"MSET a", "MSET a 1 b"} {
		if err := spec.CheckArity(words(bad)); err == nil || err.Error() != "ERR wrong number of arguments for 'mset' command" {
			t.Errorf("%s: %v", bad, err)
		}
	}
	if _, err := spec.Parse([][]byte{[]byte("MSET"), []byte("k"), make([]byte, engine.MaxValue+1)}, nil); err != errValueTooLong {
		t.Errorf("MSET of a long value: %v", err)
	}
	keys = keys[:0]
	Lookup([]byte("watch")).Keys(words("WATCH x y"), func(k []byte) { keys = append(keys, string(k)) })
	if strings.Join(keys, ",") != "x,y" || Lookup([]byte("unwatch")).CheckArity(words("UNWATCH x")) == nil {
		t.Fatalf("WATCH keys %v, or UNWATCH takes an argument", keys)
	}
}
