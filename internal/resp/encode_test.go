package resp

import "testing"

func TestAppendValuesInEitherProtocol(t *testing.T) {
	for _, c := range []struct {
		name         string
		vs           []Value
		resp2, resp3 string
	}{
		{"integer", []Value{Int(7)}, ":7\r\n", ":7\r\n"},
		{"bulk", []Value{Bulk("a\r\nb")}, "$4\r\na\r\nb\r\n", "$4\r\na\r\nb\r\n"},
		{"simple", []Value{Simple("OK")}, "+OK\r\n", "+OK\r\n"},
		{"error", []Value{ErrorReply("ERR bad\nthing")}, "-ERR bad thing\r\n", "-ERR bad thing\r\n"},
		{"null", []Value{Null()}, "$-1\r\n", "_\r\n"},
		{"booleans", []Value{Array(2), Bool(true), Bool(false)}, "*2\r\n:1\r\n:0\r\n", "*2\r\n#t\r\n#f\r\n"},
		{"double", []Value{Double("1.5")}, "$3\r\n1.5\r\n", ",1.5\r\n"},
		{"big number", []Value{{Kind: KindBigNumber, Str: "123"}}, "$3\r\n123\r\n", "(123\r\n"},
		{"HMGET", []Value{Array(3), Bulk("1"), Null(), Bulk("xy")},
			"*3\r\n$1\r\n1\r\n$-1\r\n$2\r\nxy\r\n", "*3\r\n$1\r\n1\r\n_\r\n$2\r\nxy\r\n"},
		{"HGETALL", []Value{Map(2), Bulk("a"), Bulk("1"), Bulk("b"), Bulk("2")},
			"*4\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n", "%2\r\n$1\r\na\r\n$1\r\n1\r\n$1\r\nb\r\n$1\r\n2\r\n"},
		{"nested", []Value{Array(2), Set(1), Int(1), Map(1), Bulk("k"), Array(0)},
			"*2\r\n*1\r\n:1\r\n*2\r\n$1\r\nk\r\n*0\r\n", "*2\r\n~1\r\n:1\r\n%1\r\n$1\r\nk\r\n*0\r\n"},
		{"push", []Value{{Kind: KindPush, Int: 1}, Bulk("x")}, "*1\r\n$1\r\nx\r\n", ">1\r\n$1\r\nx\r\n"},
		{"cut short", []Value{Array(3), Int(1)}, "*3\r\n:1\r\n$-1\r\n$-1\r\n", "*3\r\n:1\r\n_\r\n_\r\n"},
		{"two values", []Value{Int(1), Int(2)}, ":1\r\n:2\r\n", ":1\r\n:2\r\n"},
	} {
		if got := string(AppendValues(nil, c.vs, false)); got != c.resp2 {
			t.Errorf("%s in RESP2: %q, want %q", c.name, got, c.resp2)
		}
		if got := string(AppendValues(nil, c.vs, true)); got != c.resp3 {
			t.Errorf("%s in RESP3: %q, want %q", c.name, got, c.resp3)
		}
	}
}

func TestNextSplitsOneValue(t *testing.T) {
	vs := []Value{Array(2), Map(1), Bulk("k"), Array(1), Int(1), Int(2), Int(3)}
	first, rest := Next(vs)
	if len(first) != 6 || len(rest) != 1 || rest[0].Int != 3 {
		t.Fatalf("first %v, rest %v", first, rest)
	}
	if first, rest := Next(vs[:3]); len(first) != 3 || len(rest) != 0 {
		t.Fatalf("cut short: first %v, rest %v", first, rest)
	}
	if first, rest := Next(nil); len(first) != 0 || len(rest) != 0 {
		t.Fatalf("empty: first %v, rest %v", first, rest)
	}
}

// Values of several elements are written without allocating.
func TestAppendValuesAllocatesNothing(t *testing.T) {
	vs := []Value{Map(2), Bulk("a"), Double("1.5"), Bulk("b"), Array(2), Null(), Bool(true)}
	b := make([]byte, 0, 1024)
	for _, resp3 := range []bool{false, true} {
		if n := testing.AllocsPerRun(100, func() { AppendValues(b, vs, resp3) }); n != 0 {
			t.Errorf("resp3=%v: %v allocations", resp3, n)
		}
	}
}

func TestEncodedLenIsWhatAppendValuesWrites(t *testing.T) {
	vs := []Value{Array(12), Int(0), Int(-1), Int(-9223372036854775808), Int(9223372036854775807), Bulk(""),
		Bulk("0123456789"), Null(), Bool(false), Double("1.5"), Map(1), Simple("x"), ErrorReply("ERR y"),
		Set(1), {Kind: KindBigNumber, Str: "99"}, {Kind: KindPush, Int: 0}, {Kind: Kind(99)}}
	for _, resp3 := range []bool{false, true} {
		if got, want := EncodedLen(vs, resp3), len(AppendValues(nil, vs, resp3)); got != want {
			t.Errorf("resp3=%v: EncodedLen %d, AppendValues wrote %d", resp3, got, want)
		}
	}
}
