package resp

import (
	"bufio"
	"errors"
	"io"
	"slices"
	"strings"
	"testing"
)

func TestReaderReadsRepliesInTurn(t *testing.T) {
	r := NewReader(bufio.NewReader(strings.NewReader("*2\r\n:1\r\n$3\r\nabc\r\n-MOVED 1 h:1\r\n*7\r\n")))
	got, err := r.Read(nil)
	if want := []Value{Array(2), Int(1), Bulk("abc")}; err != nil || !slices.Equal(got, want) {
		t.Fatalf("%v %v", got, err)
	}
	got, err = r.Read(got[:0])
	if err != nil || len(got) != 1 || got[0] != ErrorReply("MOVED 1 h:1") {
		t.Fatalf("%v %v", got, err)
	}
	if line, err := r.ReadLine(); err != nil || line != "*7" {
		t.Fatalf("line %q %v", line, err)
	}
	if _, err := r.Read(nil); !errors.Is(err, io.EOF) {
		t.Fatalf("at the end: %v", err)
	}
}

func TestReaderKeepsItsBounds(t *testing.T) {
	for _, s := range []string{"$1073741825\r\n", "*1048577\r\n", "+no crlf\n", "\r\n"} {
		r := NewReader(bufio.NewReader(strings.NewReader(s)))
		if _, err := r.Read(nil); !errors.Is(err, ErrProtocol) {
			t.Errorf("%q: %v, want a protocol error", s, err)
		}
	}
	r := NewReader(bufio.NewReader(strings.NewReader("$5\r\nab")))
	if _, err := r.Read(nil); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("a bulk string cut short: %v", err)
	}
}
