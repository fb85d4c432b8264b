package main

import (
	"errors"
	"testing"

	"github.com/rlserver/rlserver/persistence"
)

// A data directory created with other settings is reported with the flag
// that differs, as operators have always read it.
func TestIdentityMismatchNamesTheFlag(t *testing.T) {
	cases := []struct {
		err  *persistence.IdentityError
		want string
	}{
		{&persistence.IdentityError{Dir: "d", Field: persistence.FieldNodeID, Have: "n1", Want: "n2"},
			`data directory was created with other settings: d belongs to node "n1", not --node-id "n2"`},
		{&persistence.IdentityError{Dir: "d", Field: persistence.FieldShards, Have: 4, Want: 8},
			"data directory was created with other settings: d holds 4 shards, not --shards 8 (the shard count cannot change)"},
		{&persistence.IdentityError{Dir: "d", Field: persistence.FieldMembers, Have: []string{"n1"}, Want: []string{"n1@h:1", "n2@h:2"}},
			"data directory was created with other settings: d belongs to a cluster of [n1], not [n1@h:1 n2@h:2] (the membership cannot change: use the original --cluster, or a new data directory)"},
		// No flag sets the format.
		{&persistence.IdentityError{Dir: "d/rlserver.json", Field: persistence.FieldFormat, Have: 2, Want: 1},
			"data directory was created with other settings: d/rlserver.json has format 2, this rlserver reads format 1"},
	}
	for _, c := range cases {
		err := identityInFlags(c.err)
		if err.Error() != c.want {
			t.Errorf("%s: %q\nwant %q", c.err.Field, err, c.want)
		}
		if !errors.Is(err, persistence.ErrIdentityMismatch) {
			t.Errorf("%s: %v does not wrap ErrIdentityMismatch", c.err.Field, err)
		}
	}
}
