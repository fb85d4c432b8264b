package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/cluster"
)

// A fleet of nodes that a scheduler runs (a Kubernetes StatefulSet, say)
// gives every node the same flags and starts and stops nodes by itself: a
// node added must place itself, a node removed must leave, and a node
// started again on a volume the cluster has forgotten must join again.
// These settings let rlserver do each without an operator
// (docs/kubernetes.md).

// fleet is how a node takes part in a fleet.
type fleet struct {
	// autoRebalance has the placement driver rebalance by itself.
	autoRebalance bool
	// rejoinIfForgotten wipes a data directory the cluster has forgotten
	// and joins again through --join, as a new node.
	rejoinIfForgotten bool
	// desiredNodesFile holds the number of nodes the fleet should have: at
	// SIGTERM, a node whose ordinal is not below it leaves the cluster.
	desiredNodesFile string
	// desiredNodesStatefulSet names the StatefulSet whose .spec.replicas
	// is that number, read from the Kubernetes API (statefulset.go).
	desiredNodesStatefulSet string
	// leaveTimeout bounds how long leaving may take.
	leaveTimeout time.Duration
}

// addFlags declares the fleet's settings on fs.
func (f *fleet) addFlags(fs *flag.FlagSet) {
	fs.BoolVar(&f.autoRebalance, "auto-rebalance", false, "in a cluster, rebalance by itself whenever every node answers and CLUSTER REBALANCE DRYRUN would move something (a node that joins is given replicas without an operator)")
	fs.BoolVar(&f.rejoinIfForgotten, "rejoin-if-forgotten", false, "with --join: a node whose data directory the cluster has forgotten (CLUSTER FORGET, or leaving) wipes it and joins again as a new node, instead of refusing to start")
	fs.StringVar(&f.desiredNodesFile, "desired-nodes-file", "", "a file that holds the number of nodes the cluster should have: at SIGTERM, a node whose ordinal (the number its --node-id ends with) is not below it leaves the cluster before it exits")
	fs.StringVar(&f.desiredNodesStatefulSet, "desired-nodes-statefulset", "", "in Kubernetes: the StatefulSet whose .spec.replicas is the number of nodes the cluster should have, read as --desired-nodes-file's at SIGTERM through the API server with the pod's service account (which may get that StatefulSet)")
	fs.DurationVar(&f.leaveTimeout, "leave-timeout", 5*time.Minute, "with --desired-nodes-file: how long a node that leaves may wait for its replicas to move before it exits anyway (it is then forgotten once they have)")
}

// validateFleet checks the fleet's settings.
func (o options) validateFleet() error {
	f := o.fleet
	clustered := o.cluster != "" || o.join != ""
	switch {
	case f.autoRebalance && !clustered:
		return invalid("auto-rebalance", "--auto-rebalance needs --cluster or --join: a single node has nothing to rebalance")
	case f.rejoinIfForgotten && o.join == "":
		return invalid("rejoin-if-forgotten", "--rejoin-if-forgotten needs --join: the member to join again through")
	case f.desiredNodesFile != "" && f.desiredNodesStatefulSet != "":
		return invalid("desired-nodes-statefulset", "--desired-nodes-statefulset and --desired-nodes-file exclude each other: the number comes from one place")
	case f.desires() && !clustered:
		return invalid(f.desiresFlag(), "--%s needs --cluster or --join: a single node has no cluster to leave", f.desiresFlag())
	case f.desires() && ordinalErr(o.nodeID) != nil:
		return invalid(f.desiresFlag(), "--%s: %v", f.desiresFlag(), ordinalErr(o.nodeID))
	case f.leaveTimeout < time.Second || f.leaveTimeout > time.Hour:
		return invalid("leave-timeout", "--leave-timeout %v: must be from 1s to 1h", f.leaveTimeout)
	}
	return nil
}

// desires reports whether the node is told how many nodes to keep.
func (f fleet) desires() bool { return f.desiredNodesFile != "" || f.desiredNodesStatefulSet != "" }

// desiresFlag names the flag that tells it.
func (f fleet) desiresFlag() string {
	if f.desiredNodesStatefulSet != "" {
		return "desired-nodes-statefulset"
	}
	return "desired-nodes-file"
}

// desiredNodes reads how many nodes the cluster should have, from the file
// or the StatefulSet.
func (f fleet) desiredNodes(ctx context.Context) (int, error) {
	if f.desiredNodesStatefulSet != "" {
		return statefulSetReplicas(ctx, f.desiredNodesStatefulSet, "", os.LookupEnv)
	}
	b, err := os.ReadFile(f.desiredNodesFile)
	if err != nil {
		return 0, err
	}
	n, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err == nil && n < 0 {
		err = fmt.Errorf("%s holds %d: a number of nodes cannot be negative", f.desiredNodesFile, n)
	}
	return n, err
}

// ordinal is the number a node id ends with, as a StatefulSet names its
// pods (rl-3: 3).
func ordinal(id string) (int, error) {
	digits := id[len(strings.TrimRight(id, "0123456789")):]
	if digits == "" {
		return 0, fmt.Errorf("--node-id %q does not end with a number (a StatefulSet's pod ordinal)", id)
	}
	return strconv.Atoi(digits)
}

// ordinalErr is ordinal's error.
func ordinalErr(id string) error {
	_, err := ordinal(id)
	return err
}

// leaveIfBeyond has node leave its cluster when the desired number of
// nodes (--desired-nodes-file or --desired-nodes-statefulset) says this
// node is beyond it: a fleet scaled down. Any other stop (a rolling
// restart, a node drained) only hands the node's leaderships over, as
// Close does. A number that cannot be read leaves the node in the cluster,
// and says why. So does 0: a StatefulSet scaled to zero stops every pod,
// and the cluster is to come back as it was, not to have been dismantled
// one node at a time until its last one refused to leave.
func leaveIfBeyond(f fleet, nodeID string, node leaver, log *slog.Logger) {
	if !f.desires() {
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), f.leaveTimeout)
	defer cancel()
	want, err := f.desiredNodes(ctx)
	if err != nil {
		log.Error("the desired number of nodes could not be read: staying in the cluster", "from", "--"+f.desiresFlag(), "err", err)
		return
	}
	me, _ := ordinal(nodeID) // validated
	if want == 0 {
		log.Info("the desired number of nodes is 0: stopping without leaving the cluster, which keeps every node's data", "ordinal", me)
		return
	}
	if me < want {
		return
	}
	log.Info("leaving the cluster: this node is beyond the desired number of nodes", "ordinal", me, "desired", want)
	if err := node.Leave(ctx); err != nil {
		log.Error("leaving the cluster failed; stopping all the same", "err", err)
	}
}

// leaver is the node as leaveIfBeyond needs it (*placement.Node).
type leaver interface {
	Leave(ctx context.Context) error
}

// forgottenDataDir reports whether err says the cluster has forgotten this
// node's data directory, which can then never serve again.
func forgottenDataDir(err error) bool { return errors.Is(err, cluster.ErrRemoved) }

// wipeDataDir empties the data directory dir of a node the cluster has
// forgotten, so that it starts as a new node.
func wipeDataDir(dir string) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if err := os.RemoveAll(filepath.Join(dir, e.Name())); err != nil {
			return fmt.Errorf("wiping the forgotten data directory: %w", err)
		}
	}
	return nil
}
