package sfv

import "testing"

func TestString(t *testing.T) {
	for in, want := range map[string]string{
		"per_ip": `"per_ip"`, `a"b\c`: `"a\"b\\c"`, "é\n": `"???"`, "": `""`,
	} {
		if got := String(in); got != want {
			t.Errorf("String(%q) = %s, want %s", in, got, want)
		}
	}
	for ms, want := range map[int64]int64{0: 0, 1: 1, 1000: 1, 1001: 2, -5: 0} {
		if got := Seconds(ms); got != want {
			t.Errorf("Seconds(%d) = %d, want %d", ms, got, want)
		}
	}
}
