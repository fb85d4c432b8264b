package cluster

import (
	"slices"
	"testing"
)

// fakeProcs stands for GOMAXPROCS: the settings an encoderProcs made, and
// whether it gave them back.
type fakeProcs struct {
	procs    int
	set      []int
	gaveBack []int
}

func newFakeEncoders(procs int) (*encoderProcs, *fakeProcs) {
	f := &fakeProcs{procs: procs}
	e := &encoderProcs{
		setProcs: func(n int) int {
			before := f.procs
			if n > 0 {
				f.procs = n
				f.set = append(f.set, n)
			}
			return before
		},
		giveBack: func(base int) { f.procs = base; f.gaveBack = append(f.gaveBack, base) },
	}
	return e, f
}

// An encoder has a processor more while it runs, two at once two more (at
// most twice the base), and the last to end gives them back.
func TestEncodersHaveAProcessorOfTheirOwn(t *testing.T) {
	for _, base := range []int{1, 2, 4} {
		e, f := newFakeEncoders(base)
		var during []int
		e.run(DefaultSnapshotNice, func() {
			during = append(during, f.procs)
			e.run(DefaultSnapshotNice, func() {
				during = append(during, f.procs)
				e.run(DefaultSnapshotNice, func() { during = append(during, f.procs) })
			})
			during = append(during, f.procs)
		})
		want := []int{base + 1, base + min(2, base), base + min(3, base), base + 1}
		if !slices.Equal(during, want) {
			t.Errorf("base %d: GOMAXPROCS %v as encoders started and ended, want %v", base, during, want)
		}
		if !slices.Equal(f.gaveBack, []int{base}) || f.procs != base {
			t.Errorf("base %d: gave back %v, GOMAXPROCS %d after: want it given back once, to %d", base, f.gaveBack, f.procs, base)
		}
	}
}

// With nice 0 the encoding runs as it is, on the caller's goroutine, with
// no processor more.
func TestEncoderWithoutPriorityRunsInPlace(t *testing.T) {
	e, f := newFakeEncoders(2)
	ran := false
	e.run(0, func() { ran = true })
	if !ran || len(f.set) != 0 || len(f.gaveBack) != 0 {
		t.Errorf("at nice 0: ran %v, GOMAXPROCS set to %v, given back %v: want it run with no change", ran, f.set, f.gaveBack)
	}
}
