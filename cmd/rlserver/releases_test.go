package main

import (
	"slices"
	"testing"
)

// A failed start gives back what it took in the order it was taken: the
// listeners first, so that nothing new arrives while the rest stops.
func TestReleasesRunOldestFirst(t *testing.T) {
	var got []string
	var taken releases
	taken.add(func() { got = append(got, "listeners") })
	taken.add(func() { got = append(got, "metrics") })
	taken.add(func() { got = append(got, "front", "shards") })
	taken.release()
	if want := []string{"listeners", "metrics", "front", "shards"}; !slices.Equal(got, want) {
		t.Fatalf("released %q, want %q", got, want)
	}
}
