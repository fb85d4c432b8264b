package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/cluster/placement"
	"github.com/rlserver/rlserver/persistence"
)

// rlserver recover --data-dir DIR (--shard N | --catalogue) [--voters IDS]
// [--dry-run] is the break-glass step for a group that lost the majority of
// its replicas for good: run on a stopped surviving node, it rewrites the
// group's Raft configuration to the surviving voters (placement.RecoverGroup).
// With --dry-run and no group it surveys every group the node holds
// (survey.go). docs/cluster.md has the runbook around it.

// recoverSettings are rlserver recover's flags.
type recoverSettings struct {
	dataDir   string
	shard     int
	catalogue bool
	voters    string
	dryRun    bool
}

// runRecover is `rlserver recover`; it returns the exit status.
func runRecover(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("rlserver recover", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s recoverSettings
	dataDir, _ := lookupEnv(envName("data-dir"))
	fs.StringVar(&s.dataDir, "data-dir", dataDir, "the stopped node's data directory (also RLSERVER_DATA_DIR)")
	s.shard = -1
	fs.Func("shard", "the shard to recover, from 0 to the shard count less one", func(v string) error {
		n, err := strconv.Atoi(v)
		if err != nil || n < 0 {
			return errors.New("a shard is a number from 0")
		}
		s.shard = n
		return nil
	})
	fs.BoolVar(&s.catalogue, "catalogue", false, "recover the catalogue group (the cluster's membership and placement) instead of a shard")
	fs.StringVar(&s.voters, "voters", "", "the surviving voters, by node id, comma-separated (default: this node alone); run the same recovery on each of them")
	fs.BoolVar(&s.dryRun, "dry-run", false, "print the group's configuration and what would be written; write nothing (without a group: every group, and which lost its majority)")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: rlserver recover --data-dir DIR (--shard N | --catalogue) [--voters ID,ID] [--dry-run]")
		fmt.Fprintln(stderr, "       rlserver recover --data-dir DIR --dry-run [--voters ID,ID]   (every group: which lost its majority)")
		fmt.Fprintln(stderr, "Run on a stopped node only, when a group has lost the majority of its replicas for good (docs/cluster.md).")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	switch {
	case fs.NArg() > 0:
		fmt.Fprintf(stderr, "rlserver recover: unexpected argument %q\n", fs.Arg(0))
		return 2
	case s.dataDir == "":
		fmt.Fprintln(stderr, "rlserver recover: --data-dir DIR is required: the stopped node's data directory")
		return 2
	case s.catalogue && s.shard >= 0, !s.catalogue && s.shard < 0 && !s.dryRun:
		fmt.Fprintln(stderr, "rlserver recover: give one group: --shard N or --catalogue (--dry-run alone surveys every group)")
		return 2
	}
	var voters []string
	if s.voters != "" {
		voters = strings.Split(s.voters, ",")
	}
	id, err := recoverIdentity(s.dataDir)
	if err != nil {
		fmt.Fprintln(stderr, "rlserver recover:", err)
		return 1
	}
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	cfg := cluster.DefaultRaftConfig(cluster.Member{ID: id.NodeID}, 1)
	cfg.Layout, cfg.Shards, cfg.Log, cfg.Scripts = persistence.Layout{Dir: s.dataDir}, id.Shards, log, newScripts(log)
	if !s.catalogue && s.shard < 0 {
		return surveyGroups(stdout, stderr, cfg, voters)
	}
	group := cluster.GroupName{Shard: s.shard, Catalogue: s.catalogue}
	rec, err := placement.RecoverGroup(cfg, group, voters, s.dryRun)
	if err != nil {
		fmt.Fprintln(stderr, "rlserver recover:", offlineError(err))
		return 1
	}
	describeRecovery(stdout, rec, id.NodeID, s.dataDir, s.dryRun)
	return 0
}

// offlineError says what to do about a data directory a running node holds.
func offlineError(err error) error {
	if errors.Is(err, persistence.ErrInUse) {
		return fmt.Errorf("%w: stop the node first (recover runs offline)", err)
	}
	return err
}

// recoverIdentity reads the identity of an existing data directory.
func recoverIdentity(dir string) (persistence.Identity, error) {
	if _, err := os.Stat(dir); err != nil {
		return persistence.Identity{}, fmt.Errorf("--data-dir: %w", err)
	}
	id, ok, err := persistence.ReadIdentity(dir)
	switch {
	case err != nil:
		return id, err
	case !ok:
		return id, fmt.Errorf("--data-dir %s holds no rlserver data directory (no rlserver.json)", dir)
	}
	return id, nil
}

// describeRecovery prints what recover found, and what it wrote or would
// write, and what may have been lost.
func describeRecovery(w io.Writer, rec cluster.Recovery, node, dir string, dryRun bool) {
	b := rec.Before
	fmt.Fprintf(w, "%s on node %s (%s)\n", b.Group, node, dir)
	describeGroup(w, b)
	switch {
	case !rec.Needed:
		fmt.Fprintf(w, "nothing to do: the configuration is already voters %s\n", servers(rec.After, true))
		return
	case dryRun:
		fmt.Fprintf(w, "would write: voters %s (dry run: nothing written)\n", servers(rec.After, true))
		return
	}
	var lost []string
	for _, s := range b.Servers {
		if !slices.ContainsFunc(rec.After, func(a cluster.RaftServer) bool { return a.ID == s.ID }) {
			lost = append(lost, s.ID)
		}
	}
	fmt.Fprintf(w, "recovered: the configuration is now voters %s\n", servers(rec.After, true))
	fmt.Fprintf(w, "  kept: every entry this replica held, up to index %d (term %d), in its state (written as its snapshot),\n", b.LastIndex, b.LastTerm)
	fmt.Fprintln(w, "  those not yet committed when the others were lost included")
	fmt.Fprintf(w, "  possibly lost: entries only %s held, after index %d; they cannot be known from here\n", strings.Join(lost, ", "), b.LastIndex)
	if b.Group.Catalogue {
		fmt.Fprintln(w, "next: recover every shard that lost its majority too, start the node, then CLUSTER FORGET each lost node FORCE, join new nodes and CLUSTER REBALANCE")
	} else {
		fmt.Fprintln(w, "next: recover the other shards that lost their majority (and --catalogue if it did), start the node, then CLUSTER FORGET each lost node FORCE, join new nodes and CLUSTER REBALANCE")
	}
}

// describeGroup prints a group's configuration and last entry.
func describeGroup(w io.Writer, st cluster.GroupState) {
	fmt.Fprintf(w, "  configuration: voters %s; non-voters %s\n", servers(st.Servers, true), servers(st.Servers, false))
	fmt.Fprintf(w, "  last entry on this replica: index %d, term %d\n", st.LastIndex, st.LastTerm)
}

// servers lists the voters (or non-voters) of a configuration as id@address.
func servers(all []cluster.RaftServer, voters bool) string {
	var out []string
	for _, s := range all {
		if s.Voter == voters {
			out = append(out, s.ID+"@"+s.Address)
		}
	}
	if len(out) == 0 {
		return "none"
	}
	return strings.Join(out, ", ")
}
