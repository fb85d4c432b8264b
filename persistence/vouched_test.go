package persistence

import (
	"maps"
	"os"
	"path/filepath"
	"testing"
)

// The incarnations a node vouched for survive a restart, and a directory
// that never vouched reads as none; a damaged file is an error, not none
// (a voucher that took it for none could vouch for a lost node again).
func TestVouchedIncarnationsAreKept(t *testing.T) {
	l := Layout{Dir: t.TempDir()}
	if v, err := l.ReadVouched(); err != nil || len(v) != 0 {
		t.Fatalf("a new directory: %v, %v; want none", v, err)
	}
	want := map[string]string{"n2": "aaaa", "n3": "bbbb"}
	if err := l.WriteVouched(want); err != nil {
		t.Fatal(err)
	}
	if v, err := (Layout{Dir: l.Dir}).ReadVouched(); err != nil || !maps.Equal(v, want) {
		t.Fatalf("read back: %v, %v; want %v", v, err, want)
	}
	if err := os.WriteFile(filepath.Join(l.Dir, vouchedFile), []byte("{\"n2\":"), 0o640); err != nil {
		t.Fatal(err)
	}
	if v, err := l.ReadVouched(); err == nil {
		t.Fatalf("a damaged file: %v, no error", v)
	}
}
