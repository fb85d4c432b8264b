package script

import (
	"os"
	"strconv"
	"testing"

	"github.com/rlserver/rlserver/engine"
)

// BenchmarkSeedScript runs the seed article's script (bench/seed.lua)
// through EVALSHA on a shard, over 1000 keys: the cost of a script
// decision without the network.
func BenchmarkSeedScript(b *testing.B) {
	body, err := os.ReadFile("../bench/seed.lua")
	if err != nil {
		b.Fatal(err)
	}
	s := engine.NewShard()
	s.SetScripts(New(Config{}))
	out := make([]engine.Result, 1)
	s.Apply(0, []engine.Command{{Op: engine.OpScriptLoad, Value: body}}, out)
	sha := []byte(engine.SHA1Hex(body))
	cmds := make([]engine.Command, 1000)
	for i := range cmds {
		key := []byte("seed:" + strconv.Itoa(i))
		cmds[i] = engine.Command{Op: engine.OpEval, Flags: engine.FlagSHA, Key: key,
			Value: engine.Pack([][]byte{sha, key, []byte("100"), []byte("60000"), []byte("-1")}), Args: [4]int64{engine.ScriptRuntime, 1}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Apply(1_700_000_000_000+int64(i), cmds[i%1000:i%1000+1], out)
		if out[0].Type != engine.ResValues {
			b.Fatalf("%+v", out[0])
		}
	}
}

// BenchmarkRedisRate runs go-redis/redis_rate's script
// (testdata/redis_rate.lua) through EVALSHA on a shard, over 1000 keys: a
// script whose reply is an array of integers and strings.
func BenchmarkRedisRate(b *testing.B) {
	body, err := os.ReadFile("testdata/redis_rate.lua")
	if err != nil {
		b.Fatal(err)
	}
	s := engine.NewShard()
	s.SetScripts(New(Config{}))
	out := make([]engine.Result, 1)
	s.Apply(0, []engine.Command{{Op: engine.OpScriptLoad, Value: body}}, out)
	sha := []byte(engine.SHA1Hex(body))
	cmds := make([]engine.Command, 1000)
	for i := range cmds {
		key := []byte("rate:" + strconv.Itoa(i))
		cmds[i] = engine.Command{Op: engine.OpEval, Flags: engine.FlagSHA, Key: key,
			Value: engine.Pack([][]byte{sha, key, []byte("10"), []byte("10"), []byte("1"), []byte("1")}), Args: [4]int64{engine.ScriptRuntime, 1}}
	}
	b.ReportAllocs()
	b.ResetTimer()
	for i := range b.N {
		s.Apply(1_700_000_000_000+int64(i), cmds[i%1000:i%1000+1], out)
		if out[0].Type != engine.ResValues {
			b.Fatalf("%+v", out[0])
		}
	}
}
