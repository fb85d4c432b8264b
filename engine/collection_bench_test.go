package engine

import (
	"strconv"
	"testing"
)

// benchmarkCollection applies one command to a shard holding a hash of four
// fields and a list of ten elements, the replies of several values.
func benchmarkCollection(b *testing.B, cmd Command) {
	s := NewShard()
	out := make([]Result, 1)
	now := int64(1_700_000_000_000)
	fields := [][]byte{}
	for i := range 4 {
		fields = append(fields, []byte("f"+strconv.Itoa(i+1)), []byte("value-"+strconv.Itoa(i+1)))
	}
	s.Apply(now, []Command{{Op: OpHSet, Key: []byte("h"), Value: Pack(fields)}}, out)
	for i := range 10 {
		s.Apply(now, []Command{{Op: OpPush, Flags: FlagRight, Key: []byte("l"), Value: Pack([][]byte{[]byte("element-" + strconv.Itoa(i))})}}, out)
	}
	if out[0].Type == ResError {
		b.Fatal(out[0].Err)
	}
	b.ReportAllocs()
	for b.Loop() {
		s.Apply(now, []Command{cmd}, out)
	}
	if out[0].Type == ResError {
		b.Fatal(out[0].Err)
	}
}

// BenchmarkHMGet is HMGET of a hash's four fields.
func BenchmarkHMGet(b *testing.B) {
	benchmarkCollection(b, Command{Op: OpHMGet, Key: []byte("h"),
		Value: Pack([][]byte{[]byte("f1"), []byte("f2"), []byte("f3"), []byte("f4")})})
}

// BenchmarkLRange is LRANGE of a list's ten elements.
func BenchmarkLRange(b *testing.B) {
	benchmarkCollection(b, Command{Op: OpLRange, Key: []byte("l"), Args: [4]int64{0, -1}})
}
