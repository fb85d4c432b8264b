package main

import (
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/cluster/placement"
	"github.com/rlserver/rlserver/persistence"
)

// surveyGroups is `rlserver recover --dry-run` without a group: the first
// step of the runbook (docs/cluster.md). For every group the stopped node's
// data directory holds, it prints the configuration and last entry, and
// whether the survivors (voters, and this node) hold a majority
// of its voters: a group that keeps its majority elects a leader once they
// run and must not be recovered, and for one that lost it, the command
// that recovers it. It writes nothing, and returns the exit status: 1 when
// a group could not be read.
func surveyGroups(stdout, stderr io.Writer, cfg cluster.RaftConfig, survivors []string) int {
	self, dir := cfg.Self.ID, cfg.Layout.Dir
	if !slices.Contains(survivors, self) { // it survives: it is being surveyed
		survivors = append(slices.Clone(survivors), self)
	}
	var groups []cluster.GroupName
	if cfg.Layout.HasCatalogueDir() {
		groups = append(groups, cluster.GroupName{Catalogue: true})
	}
	for shard := range cfg.Shards {
		if cfg.Layout.HasShardDir(shard) {
			groups = append(groups, cluster.GroupName{Shard: shard})
		}
	}
	fmt.Fprintf(stdout, "node %s (%s): %d groups; survivors %s (--voters, and this node)\n",
		self, dir, len(groups), strings.Join(survivors, ", "))
	code := 0
	for _, g := range groups {
		st, err := placement.ReadGroup(cfg, g)
		if err != nil {
			fmt.Fprintln(stderr, "rlserver recover:", offlineError(err))
			if errors.Is(err, persistence.ErrInUse) {
				return 1 // the node runs: so is every group
			}
			code = 1
			continue
		}
		fmt.Fprintln(stdout, g)
		describeGroup(stdout, st)
		alive, voters, majority := st.Survivors(survivors)
		members := st.Members(survivors)
		switch {
		case majority:
			fmt.Fprintf(stdout, "  keeps its majority (%d of %d voters survive): leave it; it elects a leader once they run\n", alive, voters)
		case !slices.Contains(members, self):
			fmt.Fprintf(stdout, "  lost its majority (%d of %d voters survive), and this node is not a member of its configuration: recover it on a survivor that is\n", alive, voters)
		default:
			fmt.Fprintf(stdout, "  lost its majority (%d of %d voters survive): rlserver recover --data-dir %s %s --voters %s\n",
				alive, voters, dir, groupFlag(g), strings.Join(members, ","))
		}
	}
	return code
}

// groupFlag is the flag that names g to rlserver recover.
func groupFlag(g cluster.GroupName) string {
	if g.Catalogue {
		return "--catalogue"
	}
	return "--shard " + strconv.Itoa(g.Shard)
}
