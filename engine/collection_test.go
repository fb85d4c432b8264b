package engine

import (
	"strconv"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/resp"
)

// vcmd is a command whose Value packs vals.
func vcmd(op Op, flags Flags, key string, vals ...string) Command {
	parts := make([][]byte, len(vals))
	for i, v := range vals {
		parts[i] = []byte(v)
	}
	return Command{Op: op, Flags: flags, Key: []byte(key), Value: Pack(parts)}
}

// show renders a result for comparison: an integer, a bulk string, OK,
// nil, values as RESP3, or the error's text.
func show(r Result) string {
	switch r.Type {
	case ResInt:
		return ":" + itoa(r.Int)
	case ResBulk, ResText:
		return "$" + r.Text
	case ResOK:
		return "OK"
	case ResNil:
		return "nil"
	case ResValues:
		return strings.ReplaceAll(string(resp.AppendValues(nil, r.Values, true)), "\r\n", " ")
	case ResError:
		return "-" + r.Err.Error()
	}
	return "?"
}

func itoa(v int64) string {
	return strconv.FormatInt(v, 10)
}

func TestHashesAndLists(t *testing.T) {
	s := NewShard()
	steps := []struct {
		c    Command
		want string
	}{
		{vcmd(OpHSet, 0, "h", "a", "1", "b", "2", "a", "3"), ":2"},
		{Command{Op: OpHGet, Key: []byte("h"), Value: []byte("a")}, "$3"},
		{vcmd(OpHMGet, 0, "h", "b", "zz"), "*2 $1 2 _ "},
		{Command{Op: OpHIncrBy, Key: []byte("h"), Value: []byte("b"), Args: [4]int64{40}}, ":42"},
		{vcmd(OpHIncrByFloat, 0, "h", "c", "0.1"), "$0.1"},
		{vcmd(OpHIncrByFloat, 0, "h", "c", "10.5"), "$10.6"},
		{Command{Op: OpHIncrBy, Key: []byte("h"), Value: []byte("c"), Args: [4]int64{1}}, "-hash value is not an integer"},
		{Command{Op: OpHGetAll, Key: []byte("h")}, "%3 $1 a $1 3 $1 b $2 42 $1 c $4 10.6 "},
		{vcmd(OpHSet, FlagStatus, "h", "d", "x"), "OK"},
		{vcmd(OpHDel, 0, "h", "a", "zz", "d"), ":2"},
		{Command{Op: OpHLen, Key: []byte("h")}, ":2"},
		{Command{Op: OpHExists, Key: []byte("h"), Value: []byte("b")}, ":1"},
		{vcmd(OpHDel, 0, "h", "b", "c"), ":2"},
		{Command{Op: OpExists, Key: []byte("h")}, ":0"}, // emptied: gone
		{vcmd(OpPush, 0, "l", "a", "b", "c"), ":3"},
		{vcmd(OpPush, FlagRight, "l", "y", "z"), ":5"},
		{Command{Op: OpLRange, Key: []byte("l"), Args: [4]int64{0, -1}}, "*5 $1 c $1 b $1 a $1 y $1 z "},
		{Command{Op: OpLIndex, Key: []byte("l"), Args: [4]int64{-1}}, "$z"},
		{Command{Op: OpLIndex, Key: []byte("l"), Args: [4]int64{5}}, "nil"},
		{Command{Op: OpLTrim, Key: []byte("l"), Args: [4]int64{1, -2}}, "OK"},
		{Command{Op: OpLRange, Key: []byte("l"), Args: [4]int64{-100, 100}}, "*3 $1 b $1 a $1 y "},
		{Command{Op: OpPop, Key: []byte("l")}, "$b"},
		{Command{Op: OpPop, Flags: FlagRight, Key: []byte("l"), Args: [4]int64{5, 1}}, "*2 $1 y $1 a "},
		{Command{Op: OpLLen, Key: []byte("l")}, ":0"},
		{Command{Op: OpPop, Key: []byte("l")}, "nil"},
		{Command{Op: OpSet, Key: []byte("s"), Value: []byte("v")}, "OK"},
		{Command{Op: OpHGet, Key: []byte("s"), Value: []byte("f")}, "-" + ErrWrongType.Msg},
		{vcmd(OpPush, 0, "s", "x"), "-" + ErrWrongType.Msg},
		{Command{Op: OpType, Key: []byte("s")}, "$string"},
	}
	for i, st := range steps {
		if err := st.c.Check(); err != nil {
			t.Fatalf("step %d: %v", i, err)
		}
		if got := show(run(s, 1000, st.c)[0]); got != st.want {
			t.Errorf("step %d (op %d): got %q, want %q", i, st.c.Op, got, st.want)
		}
	}
	checkCounters(t, s)
}

func TestCollectionBounds(t *testing.T) {
	s := NewShard()
	fields := make([]string, 0, 2*(maxHashFields+1))
	for i := range maxHashFields + 1 {
		fields = append(fields, itoa(int64(i)), "v")
	}
	if got := show(run(s, 0, vcmd(OpHSet, 0, "h", fields...))[0]); got != "-"+errHashFull.Msg {
		t.Fatalf("a hash past its bound: %s", got)
	}
	if got := show(run(s, 0, vcmd(OpHSet, 0, "h", fields[2:]...))[0]); got != ":1024" {
		t.Fatalf("a full hash: %s", got)
	}
	if got := show(run(s, 0, vcmd(OpHSet, 0, "h", "new", "v"))[0]); got != "-"+errHashFull.Msg {
		t.Fatalf("one field more: %s", got)
	}
}

func TestExpiryOfHashesAndLists(t *testing.T) {
	s := NewShard()
	run(s, 1000, vcmd(OpHSet, 0, "h", "a", "1"), vcmd(OpPush, 0, "l", "x"))
	if st := s.Stats(); st.Persistent != 2 {
		t.Fatalf("persistent %d", st.Persistent)
	}
	r := run(s, 1000, Command{Op: OpExpire, Key: []byte("h"), Args: [4]int64{500, ExpiryRelative}},
		Command{Op: OpExpire, Key: []byte("l"), Args: [4]int64{700, ExpiryRelative}}, cmd(OpPTTL, "h"))
	if r[0].Int != 1 || r[1].Int != 1 || r[2].Int != 500 {
		t.Fatalf("%+v", r)
	}
	if r := run(s, 1600, cmd(OpExists, "h"), cmd(OpExists, "l")); r[0].Int != 0 || r[1].Int != 1 {
		t.Fatalf("at 1600: %+v", r)
	}
	checkCounters(t, s)
}

func TestRename(t *testing.T) {
	s := NewShard()
	run(s, 0, cmd(OpSliding, "{u}:a", 10, 1000, 0, 3), vcmd(OpPush, 0, "{u}:l", "x"))
	steps := []struct {
		c    Command
		want string
	}{
		{Command{Op: OpRename, Key: []byte("{u}:nope"), Value: []byte("{u}:b")}, "-no such key"},
		{Command{Op: OpRename, Key: []byte("{u}:a"), Value: []byte("{u}:a-key-longer-than-twenty-seven-bytes")}, "OK"},
		{Command{Op: OpType, Key: []byte("{u}:a-key-longer-than-twenty-seven-bytes")}, "$rl.sliding"},
		{Command{Op: OpRename, Flags: FlagNX, Key: []byte("{u}:a-key-longer-than-twenty-seven-bytes"), Value: []byte("{u}:l")}, ":0"},
		{Command{Op: OpRename, Key: []byte("{u}:a-key-longer-than-twenty-seven-bytes"), Value: []byte("{u}:l")}, "OK"},
		{Command{Op: OpType, Key: []byte("{u}:l")}, "$rl.sliding"},
		{Command{Op: OpExists, Key: []byte("{u}:a-key-longer-than-twenty-seven-bytes")}, ":0"},
	}
	for i, st := range steps {
		if got := show(run(s, 10, st.c)[0]); got != st.want {
			t.Errorf("step %d: got %q, want %q", i, got, st.want)
		}
	}
	// The renamed limiter kept its state: 3 of 10 spent.
	if d := decision(t, s, 10, OpSliding, "{u}:l", 10, 1000, 0, 0); d.Remaining != 7 {
		t.Errorf("renamed limiter: %+v", d)
	}
	checkCounters(t, s)
}

// fakeRunner runs every script as one LPUSH of its ARGV to the key "l".
type fakeRunner struct{ runs int }

func (f *fakeRunner) Compile(body []byte) error {
	if string(body) == "bad" {
		return &Error{CodeScript, "ERR Error compiling script"}
	}
	return nil
}

func (f *fakeRunner) Run(call *ScriptCall, dst []resp.Value) ([]resp.Value, error) {
	f.runs++
	c := []Command{{Op: OpPush, Key: []byte("l"), Value: Pack(call.Args)}}
	out := make([]Result, 1)
	if err := call.Apply(c, out); err != nil {
		return nil, err
	}
	return append(dst, resp.Int(out[0].Int)), nil
}

// eval is EVAL of body, or with sha EVALSHA of body's SHA1.
func eval(body string, sha bool, keys []string, args ...string) Command {
	parts := [][]byte{[]byte(body)}
	if sha {
		parts[0] = []byte(SHA1Hex(parts[0]))
	}
	for _, k := range append(keys, args...) {
		parts = append(parts, []byte(k))
	}
	c := Command{Op: OpEval, Value: Pack(parts), Args: [4]int64{ScriptRuntime, int64(len(keys))}}
	if sha {
		c.Flags = FlagSHA
	}
	if len(keys) > 0 {
		c.Key = []byte(keys[0])
	}
	return c
}

func TestScriptCacheAndReplay(t *testing.T) {
	a, b := NewShard(), NewShard()
	runner := &fakeRunner{}
	a.SetScripts(runner)
	b.SetScripts(runner)
	sha := SHA1Hex([]byte("push"))
	log := [][]Command{
		{eval("push", true, []string{"l"}, "x")},  // not cached yet
		{eval("push", false, []string{"l"}, "x")}, // EVAL caches it
		{eval("push", true, []string{"l"}, "y")},  // now EVALSHA finds it
		{eval("push", false, []string{"other"}, "y")},
		{{Op: OpScriptLoad, Value: []byte("bad")}},
		{{Op: OpScriptLoad, Value: []byte("load")}},
		{{Op: OpScriptExists, Value: Pack([][]byte{[]byte(sha), []byte(SHA1Hex([]byte("load"))), []byte("nope")})}},
	}
	var replies []string
	for _, cmds := range log {
		for _, c := range cmds {
			if err := c.Check(); err != nil {
				t.Fatalf("%+v: %v", c, err)
			}
		}
		ra, rb := run(a, 100, cmds...), run(b, 100, cmds...)
		if show(ra[0]) != show(rb[0]) {
			t.Fatalf("replicas differ: %s, %s", show(ra[0]), show(rb[0]))
		}
		replies = append(replies, show(ra[0]))
	}
	want := []string{"-" + ErrNoScript.Msg, ":1 ", ":2 ", "-ERR Script attempted to access a key not declared in KEYS: 'l'",
		"-ERR Error compiling script", "$" + SHA1Hex([]byte("load")), "*3 :1 :1 :0 "}
	if strings.Join(replies, "|") != strings.Join(want, "|") {
		t.Fatalf("replies\n%q\nwant\n%q", replies, want)
	}
	if run(a, 100, Command{Op: OpDigest})[0].Text != run(b, 100, Command{Op: OpDigest})[0].Text {
		t.Fatal("replicas' digests differ")
	}
	restored, err := RestoreShard(a.AppendSnapshot(nil), SnapshotFormat)
	if err != nil {
		t.Fatal(err)
	}
	if restored.Inspect(&Command{Op: OpDigest}).Text != a.Inspect(&Command{Op: OpDigest}).Text {
		t.Fatal("a restored shard's digest differs")
	}
	if st := restored.Stats(); st.Scripts != 2 || st.ScriptBytes != a.Stats().ScriptBytes {
		t.Fatalf("restored cache: %+v", st)
	}
	run(a, 100, Command{Op: OpScriptFlush})
	if a.Inspect(&Command{Op: OpDigest}).Text == restored.Inspect(&Command{Op: OpDigest}).Text {
		t.Fatal("the digest does not cover the script cache")
	}
}

func TestEvalScriptsAreEvictedLeastRecentlyUsedFirst(t *testing.T) {
	s := NewShard()
	s.SetScripts(&fakeRunner{})
	for i := range maxEvalScripts + 2 {
		run(s, 0, eval("push"+itoa(int64(i)), false, []string{"l"}, "x"))
		if i == 0 {
			run(s, 0, Command{Op: OpScriptLoad, Value: []byte("push0")}) // loaded: never evicted
		}
	}
	if st := s.Stats(); st.Scripts != maxEvalScripts+1 { // push0, loaded, and 500 more
		t.Fatalf("%d scripts cached", st.Scripts)
	}
	if r := run(s, 0, eval("push1", true, []string{"l"}, "x"))[0]; r.Err != ErrNoScript {
		t.Fatalf("the least recently used survived: %s", show(r))
	}
	if r := run(s, 0, eval("push0", true, []string{"l"}, "x"))[0]; r.Type != ResValues {
		t.Fatalf("a loaded script was evicted: %s", show(r))
	}
}

func TestCollectionsSnapshot(t *testing.T) {
	s := NewShard()
	run(s, 0, vcmd(OpHSet, 0, "h", "b", "1", "a", "2"), vcmd(OpPush, 0, "l", "1", "2", "3"),
		Command{Op: OpExpire, Key: []byte("l"), Args: [4]int64{5000, ExpiryRelative}})
	r, err := RestoreShard(s.AppendSnapshot(nil), SnapshotFormat)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []Command{{Op: OpHGetAll, Key: []byte("h")}, {Op: OpLRange, Key: []byte("l"), Args: [4]int64{0, -1}}, cmd(OpPTTL, "l")} {
		if a, b := show(run(s, 10, c)[0]), show(run(r, 10, c)[0]); a != b {
			t.Errorf("op %d: %s before, %s restored", c.Op, a, b)
		}
	}
	if s.Stats().Charged != r.Stats().Charged {
		t.Errorf("charged %d, restored %d", s.Stats().Charged, r.Stats().Charged)
	}
	checkCounters(t, r)
}

// Cached scripts are charged to the memory limit like keys: a SCRIPT LOAD
// that does not fit is refused with OOM, and a key that no longer fits
// because of the scripts is refused too.
func TestScriptsCountAgainstTheMemoryLimit(t *testing.T) {
	s := NewShard()
	s.SetScripts(&fakeRunner{})
	limit := int64(recordSize+2*indexSlotSize) + 2048
	run(s, 0, Command{Op: OpMemoryLimit, Args: [4]int64{limit, int64(NoEviction)}})
	big := strings.Repeat("x", 1500)
	if r := run(s, 0, Command{Op: OpScriptLoad, Value: []byte(big)})[0]; r.Type != ResBulk {
		t.Fatalf("a script that fits: %s", show(r))
	}
	if r := run(s, 0, Command{Op: OpScriptLoad, Value: []byte(big + "y")})[0]; r.Err != ErrOOM {
		t.Fatalf("a script past the limit: %s", show(r))
	}
	if r := run(s, 0, vcmd(OpHSet, 0, "h", "f", strings.Repeat("v", 600)))[0]; r.Type != ResInt {
		t.Fatalf("a key that fits beside the script: %s", show(r))
	}
	if r := run(s, 0, cmd(OpSliding, "k", 10, 1000, 0, 1))[0]; r.Err != ErrOOM {
		t.Fatalf("a key past the limit: %s", show(r))
	}
	if st := s.Stats(); st.Charged != s.keys.charged()+st.ScriptBytes {
		t.Fatalf("charged %d, keys %d, scripts %d", st.Charged, s.keys.charged(), st.ScriptBytes)
	}
}
