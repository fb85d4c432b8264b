package main

import (
	"slices"
	"testing"
)

// A failed start gives back what it took in the order it was taken (the
// listeners first), and a release replaced once it became someone else's
// is made as replaced.
func TestReleasesRunOldestFirstAsReplaced(t *testing.T) {
	var got []string
	var taken releases
	taken.add(func() { got = append(got, "listeners") })
	obs := taken.add(func() { got = append(got, "metrics") })
	shards := taken.add(func() { got = append(got, "shards") })
	*obs = func() {}
	*shards = func() { got = append(got, "front", "shards") }
	taken.release()
	if want := []string{"listeners", "front", "shards"}; !slices.Equal(got, want) {
		t.Fatalf("released %q, want %q", got, want)
	}
}
