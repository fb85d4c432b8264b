package cluster

import (
	"slices"
	"testing"
)

// A group keeps its majority when more than half of its voters survive;
// non-voters count for nothing, and a recovery may take any member.
func TestGroupStateSurvivors(t *testing.T) {
	three := GroupState{Servers: []RaftServer{{ID: "n1", Voter: true}, {ID: "n2", Voter: true}, {ID: "n3", Voter: true}, {ID: "n4"}}}
	four := GroupState{Servers: []RaftServer{{ID: "n1", Voter: true}, {ID: "n2", Voter: true}, {ID: "n3", Voter: true}, {ID: "n4", Voter: true}}}
	for _, c := range []struct {
		name      string
		st        GroupState
		survivors []string
		alive     int
		voters    int
		majority  bool
		members   []string
	}{
		{"one of three", three, []string{"n1"}, 1, 3, false, []string{"n1"}},
		{"two of three", three, []string{"n2", "n1"}, 2, 3, true, []string{"n2", "n1"}},
		{"a non-voter is no voter", three, []string{"n1", "n4"}, 1, 3, false, []string{"n1", "n4"}},
		{"a stranger is nobody", three, []string{"n1", "n9"}, 1, 3, false, []string{"n1"}},
		{"two of four", four, []string{"n1", "n2"}, 2, 4, false, []string{"n1", "n2"}},
		{"three of four", four, []string{"n1", "n2", "n3"}, 3, 4, true, []string{"n1", "n2", "n3"}},
		{"no configuration", GroupState{}, []string{"n1"}, 0, 0, false, nil},
	} {
		t.Run(c.name, func(t *testing.T) {
			alive, voters, majority := c.st.Survivors(c.survivors)
			if alive != c.alive || voters != c.voters || majority != c.majority {
				t.Errorf("Survivors(%v) = %d of %d, majority %v; want %d of %d, %v", c.survivors, alive, voters, majority, c.alive, c.voters, c.majority)
			}
			if got := c.st.Members(c.survivors); !slices.Equal(got, c.members) {
				t.Errorf("Members(%v) = %v, want %v", c.survivors, got, c.members)
			}
		})
	}
}
