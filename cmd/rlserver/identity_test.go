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
			"data directory was created with other settings: d belongs to a cluster of [n1], not [n1@h:1 n2@h:2] (a single node cannot become a cluster's member, nor a member a single node; " +
				"a directory made before the catalogue is upgraded with the --cluster it was created with; add nodes to a cluster with --join)"},
		// No flag sets the format.
		{&persistence.IdentityError{Dir: "d/rlserver.json", Field: persistence.FieldFormat, Have: 3, Want: 2},
			"data directory was created with other settings: d/rlserver.json has format 3, this rlserver reads formats 1 to 2"},
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
