package wire

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"math/rand/v2"
	"testing"
)

var errBad = errors.New("bad test input")

// What the Append functions write, a Reader reads back, and the lengths
// are those written.
func TestRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for range 10_000 {
		u := rng.Uint64() >> rng.IntN(64)
		v := int64(rng.Uint64()>>rng.IntN(64)) * []int64{1, -1}[rng.IntN(2)]
		s := make([]byte, rng.IntN(300))
		flag := rng.IntN(2) == 1
		b := AppendUvarint(nil, u)
		if len(b) != UvarintLen(u) {
			t.Fatalf("UvarintLen(%d) = %d, written %d", u, UvarintLen(u), len(b))
		}
		b = AppendVarint(b, v)
		if len(b)-UvarintLen(u) != VarintLen(v) {
			t.Fatalf("VarintLen(%d) = %d, written %d", v, VarintLen(v), len(b)-UvarintLen(u))
		}
		b = AppendVarints(b, v, -v)
		b = AppendBool(b, flag)
		b = AppendBytes(b, s)
		b = AppendString(b, string(s))
		r := NewReader(b, errBad)
		gotU, gotV, gotV1, gotV2, gotFlag := r.Uvarint(), r.Varint(), r.Varint(), r.Varint(), r.Bool()
		gotS, gotStr := r.Bytes(uint64(len(s))), r.Bytes(uint64(len(s)))
		if r.Err() != nil || r.Len() != 0 || gotU != u || gotV != v || gotV1 != v || gotV2 != -v || gotFlag != flag ||
			!bytes.Equal(gotS, s) || !bytes.Equal(gotStr, s) {
			t.Fatalf("%d %d %v %d bytes: read %d %d %d %d %v %d %d, err %v", u, v, flag, len(s),
				gotU, gotV, gotV1, gotV2, gotFlag, len(gotS), len(gotStr), r.Err())
		}
	}
}

// The encoding is encoding/binary's, which snapshots and Raft logs already
// hold: it must never change.
func TestSameBytesAsEncodingBinary(t *testing.T) {
	for _, v := range []int64{0, 1, -1, 63, -64, 64, 1 << 20, math.MaxInt64, math.MinInt64} {
		if got, want := AppendVarint(nil, v), binary.AppendVarint(nil, v); !bytes.Equal(got, want) {
			t.Errorf("varint %d: % x, want % x", v, got, want)
		}
		if got, want := AppendUvarint(nil, uint64(v)), binary.AppendUvarint(nil, uint64(v)); !bytes.Equal(got, want) {
			t.Errorf("uvarint %d: % x, want % x", uint64(v), got, want)
		}
	}
	if got := AppendString([]byte{9}, "ab"); !bytes.Equal(got, []byte{9, 2, 'a', 'b'}) {
		t.Errorf("AppendString: % x", got)
	}
	if got := AppendBool(AppendBool(nil, true), false); !bytes.Equal(got, []byte{1, 0}) {
		t.Errorf("AppendBool: % x", got)
	}
}

func TestReaderErrors(t *testing.T) {
	overlong := bytes.Repeat([]byte{0x80}, 10)
	for _, tc := range []struct {
		name string
		in   []byte
		read func(r *Reader)
		want string
	}{
		{"byte of nothing", nil, func(r *Reader) { r.Byte() }, "truncated"},
		{"uvarint of nothing", nil, func(r *Reader) { r.Uvarint() }, "bad uvarint"},
		{"overlong uvarint", overlong, func(r *Reader) { r.Uvarint() }, "bad uvarint"},
		{"overlong varint", overlong, func(r *Reader) { r.Varint() }, "bad varint"},
		{"bytes over max", AppendString(nil, "abc"), func(r *Reader) { r.Bytes(2) }, "bad length"},
		{"bytes past the end", []byte{5, 'a'}, func(r *Reader) { r.Bytes(10) }, "bad length"},
		{"bytes of a bad length", overlong, func(r *Reader) { r.Bytes(10) }, "bad uvarint"},
		{"next past the end", []byte{1, 2}, func(r *Reader) { r.Next(3) }, "truncated"},
		{"bool of nothing", nil, func(r *Reader) { r.Bool() }, "truncated"},
		{"bool of a byte not 0 or 1", []byte{2}, func(r *Reader) { r.Bool() }, "bad boolean"},
		{"the first error stays", nil, func(r *Reader) { r.Varint(); r.Byte(); r.Fail("later") }, "bad varint"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := NewReader(tc.in, errBad)
			tc.read(&r)
			if err := r.Err(); !errors.Is(err, errBad) || err.Error() != "bad test input: "+tc.want {
				t.Fatalf("error %v, want %q wrapping errBad", err, tc.want)
			}
		})
	}
}

// FailWith keeps the caller's own error, unless there is one already.
func TestFailWith(t *testing.T) {
	errMine := errors.New("mine")
	r := NewReader(nil, errBad)
	r.FailWith(errMine)
	r.Fail("later")
	if r.Err() != errMine {
		t.Fatalf("%v, want errMine", r.Err())
	}
	r = NewReader(nil, errBad)
	r.Byte()
	if r.FailWith(errMine); !errors.Is(r.Err(), errBad) {
		t.Fatalf("%v, want the first error", r.Err())
	}
}

// Reads alias the input, and appending to one never overwrites what
// follows it.
func TestReadsAliasTheInput(t *testing.T) {
	in := AppendString(AppendString(nil, "ab"), "cd")
	r := NewReader(in, errBad)
	ab := r.Bytes(10)
	if &ab[0] != &in[1] || cap(ab) != 2 {
		t.Fatalf("Bytes does not alias the input with its own length: cap %d", cap(ab))
	}
	_ = append(ab, 'x')
	if rest := r.Rest(); !bytes.Equal(rest, []byte{2, 'c', 'd'}) || r.Len() != 3 {
		t.Fatalf("rest % x", rest)
	}
	if next := r.Next(2); !bytes.Equal(next, []byte{2, 'c'}) || cap(next) != 2 || r.Len() != 1 {
		t.Fatalf("Next: % x, cap %d, %d left", next, cap(next), r.Len())
	}
}

// Reading allocates nothing while the input is good.
func TestReadingAllocatesNothing(t *testing.T) {
	in := AppendString(AppendVarints(AppendUvarint(nil, 300), -5, 7), "key")
	allocs := testing.AllocsPerRun(100, func() {
		r := NewReader(in, errBad)
		_, _, _, _ = r.Uvarint(), r.Varint(), r.Varint(), r.Bytes(10)
		if r.Err() != nil {
			t.Fatal(r.Err())
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations", allocs)
	}
}

// FuzzReader reads arbitrary bytes as every kind of value: it never panics,
// and what it reads is within the input.
func FuzzReader(f *testing.F) {
	f.Add([]byte{1, 2, 3}, uint8(0))
	f.Add(AppendString(AppendVarint(nil, -1), "abc"), uint8(3))
	f.Fuzz(func(t *testing.T, in []byte, ops uint8) {
		r := NewReader(in, errBad)
		for i := 0; r.Len() > 0 && i < 64; i++ {
			before := r.Len()
			switch (int(ops) + i) % 5 {
			case 0:
				r.Byte()
			case 1:
				r.Uvarint()
			case 2:
				r.Varint()
			case 3:
				if v := r.Bytes(uint64(ops)); len(v) > before {
					t.Fatal("read past the input")
				}
			case 4:
				r.Next(int(ops % 4))
			}
			if r.Len() > before {
				t.Fatal("the reader went back")
			}
			if r.Err() != nil && !errors.Is(r.Err(), errBad) {
				t.Fatalf("error %v does not wrap the sentinel", r.Err())
			}
		}
	})
}
