package resp

import (
	"errors"
	"slices"
	"testing"
)

func TestParseReadsWhatAppendValuesWrites(t *testing.T) {
	vs := []Value{Array(9), Int(-3), Bulk(""), Bulk("a\r\nb"), Null(), Simple("OK"), ErrorReply("ERR x"),
		Map(1), Bulk("k"), Set(2), Bool(true), Double("2.5"), {Kind: KindBigNumber, Str: "12"}, {Kind: KindPush, Int: 0}}
	text := string(AppendValues(nil, vs, true)) + "+after\r\n"
	got, rest, err := Parse(nil, text)
	if err != nil || !slices.Equal(got, vs) || rest != "+after\r\n" {
		t.Fatalf("Parse: %v\n got %v\nwant %v\nrest %q", err, got, vs, rest)
	}
}

func TestParseReadsRESP2Nils(t *testing.T) {
	got, _, err := Parse(nil, "*2\r\n$-1\r\n*-1\r\n")
	if want := []Value{Array(2), Null(), Null()}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("%v %v", got, err)
	}
	got, _, err = Parse(nil, "!5\r\nERR x\r\n")
	if err != nil || len(got) != 1 || got[0] != ErrorReply("ERR x") {
		t.Fatalf("blob error: %v %v", got, err)
	}
}

func TestParseRefusesWhatIsNotRESP(t *testing.T) {
	for _, s := range []string{
		"", "+OK", "\r\n", "?x\r\n", ":1x\r\n", "$3\r\nab\r\n", "$3\r\nabcd\r\n", "$-2\r\n", "#x\r\n",
		"*2\r\n:1\r\n", "%-1\r\n", "*99999999999\r\n", "$99999999999\r\n", "!-1\r\n",
	} {
		if _, _, err := Parse(nil, s); !errors.Is(err, ErrProtocol) {
			t.Errorf("Parse(%q): %v, want a protocol error", s, err)
		}
	}
}

// FuzzParse checks that Parse never panics, and that what it reads, written
// again in RESP3, reads back the same.
func FuzzParse(f *testing.F) {
	f.Add("*3\r\n$1\r\na\r\n_\r\n%1\r\n+k\r\n#t\r\n")
	f.Add(":12\r\n")
	f.Add("~1\r\n,1.5\r\n")
	f.Fuzz(func(t *testing.T, s string) {
		vs, _, err := Parse(nil, s)
		if err != nil {
			return
		}
		again, rest, err := Parse(nil, string(AppendValues(nil, vs, true)))
		if err != nil || rest != "" {
			t.Fatalf("%q read as %v, written again does not read: %v (rest %q)", s, vs, err, rest)
		}
		for i := range vs {
			if vs[i].Kind == KindSimple || vs[i].Kind == KindError || vs[i].Kind == KindDouble || vs[i].Kind == KindBigNumber {
				continue // written on one line: a line break in them is not kept
			}
			if vs[i] != again[i] {
				t.Fatalf("%q read as %v, written again reads %v", s, vs, again)
			}
		}
	})
}
