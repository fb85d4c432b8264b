//go:build linux

package tests

import (
	"regexp"
	"testing"

	"github.com/rlserver/rlserver/internal/rlproc"
)

// A durable node started on a disk where nothing can be written (a file
// size limit of zero: every write to a regular file fails, as on a disk
// with no room left) refuses to start, exiting non-zero with an error that
// names the file it could not write, rather than serve without a log. Once
// there is room again it starts with every decision it had acknowledged.
func TestFaultStartOnFullDisk(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	s := launch(t, dir, baseArgs...)
	c := s.Client(t, 2)
	do(t, c, "DEBUG", "CLOCK", "SET", "1700000040000") // no window boundary between the starts
	for want := int64(4); want >= 2; want-- {
		if d := decide(t, c, "RL.SLIDING full:a 5 600000"); !d.Allowed || d.Remaining != want {
			t.Fatalf("before the stop: %v, want %d remaining", d, want)
		}
	}
	c.Close()
	if code := s.Stop(t); code != 0 {
		t.Fatalf("SIGTERM: exit %d; stderr:\n%s", code, s.Log())
	}

	// sh sets the limit, then becomes rlserver; its stderr is a pipe, which
	// the limit does not cover, so the error can still be read.
	noRoom := []string{"sh", "-c", `ulimit -f 0 && exec "$@"`, "sh"}
	refused, exited := rlproc.Spawn(t, rlproc.Config{Dir: dir, Wrap: noRoom, Args: baseArgs})
	if !exited {
		t.Fatalf("rlserver started with no room to write; stderr:\n%s", refused.Log())
	}
	if code := refused.ExitCode(); code == 0 {
		t.Errorf("exit code 0 after refusing to start")
	}
	if !regexp.MustCompile(`/wal/.*file too large`).MatchString(refused.Log()) {
		t.Errorf("the error does not name the file it could not write:\n%s", refused.Log())
	}

	s = launch(t, dir, baseArgs...)
	c = s.Client(t, 2)
	do(t, c, "DEBUG", "CLOCK", "SET", "1700000040000")
	if d := decide(t, c, "RL.SLIDING full:a 5 600000"); !d.Allowed || d.Remaining != 1 {
		t.Fatalf("after the refused start: %v, want the fourth of five", d)
	}
}
