package resp

import "strconv"

// AppendCommand appends a command as a client sends it: an array of bulk
// strings, its name first.
func AppendCommand(b []byte, args ...string) []byte {
	b = AppendArray(b, len(args))
	for _, a := range args {
		b = AppendBulkString(b, a)
	}
	return b
}

// CommandLen is the length of args encoded as a client sends them, as
// AppendCommand writes them.
func CommandLen(args [][]byte) int64 {
	n := int64(len("*\r\n") + len(strconv.Itoa(len(args))))
	for _, a := range args {
		n += int64(len("$\r\n\r\n") + len(strconv.Itoa(len(a))) + len(a))
	}
	return n
}
