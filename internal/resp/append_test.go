package resp

import (
	"testing"
)

func TestAppendWritesRedisBytes(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{string(AppendInt(nil, -42)), ":-42\r\n"},
		{string(AppendBulk(nil, []byte("hi"))), "$2\r\nhi\r\n"},
		{string(AppendBulkString(nil, "")), "$0\r\n\r\n"},
		{string(AppendBulkString(nil, "0123456789")), "$10\r\n0123456789\r\n"},
		{string(AppendBulkInt(nil, 1500)), "$4\r\n1500\r\n"},
		{string(AppendBulkStrings(nil, []string{"a", "bc"})), "*2\r\n$1\r\na\r\n$2\r\nbc\r\n"},
		{string(AppendSimple(nil, "PONG")), "+PONG\r\n"},
		{string(AppendSimple(nil, "two\r\nlines")), "+two  lines\r\n"},
		{string(AppendOK(nil)), "+OK\r\n"},
		{string(AppendError(nil, "WRONGTYPE", "Operation against a key")), "-WRONGTYPE Operation against a key\r\n"},
		{string(AppendError(nil, "", "ERR a\nb")), "-ERR a b\r\n"},
		{string(AppendNull(nil, false)), "$-1\r\n"},
		{string(AppendNull(nil, true)), "_\r\n"},
		{string(AppendArray(nil, 0)), "*0\r\n"},
		{string(AppendArray(nil, 12)), "*12\r\n"},
		{string(AppendMap(nil, 5, false)), "*10\r\n"},
		{string(AppendMap(nil, 5, true)), "%5\r\n"},
		{string(AppendSet(nil, 2, false)), "*2\r\n"},
		{string(AppendSet(nil, 2, true)), "~2\r\n"},
		{string(AppendPush(nil, 2)), ">2\r\n"},
		{string(AppendEncoded(nil, EncodeBulk("allowed"))), "$7\r\nallowed\r\n"},
		{string(AppendCommand(nil, "GET", "k")), "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}

func TestAppendBulkSpaceIsFilledInPlace(t *testing.T) {
	b, body := AppendBulkSpace([]byte("*1\r\n"), 5)
	copy(body, "hello")
	if string(b) != "*1\r\n$5\r\nhello\r\n" {
		t.Fatalf("%q", b)
	}
}

func TestCommandLenIsWhatAppendCommandWrites(t *testing.T) {
	args := []string{"SET", "key", "a value of some length", ""}
	words := make([][]byte, len(args))
	for i, a := range args {
		words[i] = []byte(a)
	}
	if got, want := CommandLen(words), int64(len(AppendCommand(nil, args...))); got != want {
		t.Fatalf("CommandLen %d, AppendCommand wrote %d", got, want)
	}
}

// The writers of the hot path (a decision's integers, bulk strings, errors)
// allocate nothing once the buffer has room.
func TestAppendAllocatesNothing(t *testing.T) {
	b := make([]byte, 0, 1024)
	allowed := EncodeBulk("allowed")
	if n := testing.AllocsPerRun(100, func() {
		out := AppendMap(b, 5, true)
		out = AppendEncoded(out, allowed)
		out = AppendInt(out, 1)
		out = AppendBulkString(out, "value")
		out = AppendBulkInt(out, 1234567)
		out = AppendError(out, "ERR", "message")
		AppendNull(out, false)
	}); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
