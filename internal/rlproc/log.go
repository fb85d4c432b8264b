package rlproc

import (
	"bytes"
	"io"
	"regexp"
	"sync"
)

// logBuffer keeps a process's output and reports the first submatch of the
// first line that matches a pattern: how Start learns that rlserver is
// ready, and where.
type logBuffer struct {
	mu      sync.Mutex
	buf     bytes.Buffer
	scanned int            // bytes of buf already searched for whole lines
	re      *regexp.Regexp // nil once matched
	ready   chan string    // receives the submatch, once
	copy    io.Writer      // Config.Output, or nil
}

func newLogBuffer(re *regexp.Regexp, copy io.Writer) *logBuffer {
	return &logBuffer{re: re, ready: make(chan string, 1), copy: copy}
}

// Write appends p and looks for the pattern in the lines it completes. It
// never fails: an error would stop os/exec copying the output, and the
// process would block once the pipe is full.
func (l *logBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.copy != nil {
		_, _ = l.copy.Write(p) // a copy that fails (a full disk) must not stop the process
	}
	l.buf.Write(p)
	for l.re != nil {
		rest := l.buf.Bytes()[l.scanned:]
		i := bytes.IndexByte(rest, '\n')
		if i < 0 {
			break
		}
		l.scanned += i + 1
		if m := l.re.FindSubmatch(rest[:i]); m != nil {
			l.ready <- string(m[1])
			l.re = nil
		}
	}
	return len(p), nil
}

// String is everything written so far.
func (l *logBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.buf.String()
}
