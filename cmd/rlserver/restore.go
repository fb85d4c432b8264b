package main

import (
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/backup"
	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/persistence"
)

// rlserver restore --in FILE [the node's settings] makes a new data
// directory that starts from a backup: the node's settings are read as the
// server reads them (flags, RLSERVER_*, --config), the data directory is
// created as the node's first start creates it, and each shard this node
// replicates is given the backup's state as its latest snapshot. Run it for
// every node of a new cluster, with each node's own settings; then start
// the nodes as usual.

// runRestore is `rlserver restore`; it returns the exit status.
func runRestore(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	in, rest, err := takeInFlag(args)
	if err != nil || in == "" {
		if err == nil {
			err = errors.New("--in FILE is required")
		}
		fmt.Fprintln(stderr, "rlserver restore:", err)
		fmt.Fprintln(stderr, "Usage: rlserver restore --in FILE [--data-dir DIR --node-id ID --cluster ... and the node's other settings]")
		return 2
	}
	start := time.Now()
	// The whole file is checked before anything is written.
	h, sections, err := verifyFile(in)
	if err != nil {
		fmt.Fprintf(stderr, "rlserver restore: %s: %v\n", in, err)
		return 1
	}
	if !shardsGiven(rest, lookupEnv) {
		rest = append(rest, "--shards", strconv.Itoa(h.Shards))
	}
	o, err := parseFlags(rest, stderr, lookupEnv)
	if err != nil {
		fmt.Fprintln(stderr, "rlserver restore:", err)
		return 2
	}
	switch {
	case o.inMemory:
		fmt.Fprintln(stderr, "rlserver restore: --in-memory keeps nothing to restore into: give the node's --data-dir")
		return 2
	case o.shards != h.Shards:
		fmt.Fprintf(stderr, "rlserver restore: --shards %d: the backup holds %d shards; a node restored from it has as many\n", o.shards, h.Shards)
		return 2
	}
	if err := checkEmptyDir(o.dataDir); err != nil {
		fmt.Fprintln(stderr, "rlserver restore:", err)
		return 1
	}
	held, err := restoreInto(o, in)
	if err != nil {
		os.RemoveAll(o.dataDir) // it was new: leave nothing half-made behind
		fmt.Fprintln(stderr, "rlserver restore:", err)
		return 1
	}
	var index []string
	for _, s := range sections {
		if slices.Contains(held, s.Shard) {
			index = append(index, fmt.Sprintf("%d@%d", s.Shard, s.Index))
		}
	}
	fmt.Fprintf(stdout, "restored %d of %d shards (shard@index: %s) of the backup taken %s from %s into %s for node %s in %.1f s; start the node with the same settings\n",
		len(held), h.Shards, strings.Join(index, " "), time.UnixMilli(h.CreatedMs).UTC().Format(time.RFC3339), h.Source, o.dataDir, o.nodeID,
		time.Since(start).Seconds())
	return 0
}

// takeInFlag removes --in FILE (or --in=FILE, -in ...) from args.
func takeInFlag(args []string) (in string, rest []string, err error) {
	for i := 0; i < len(args); i++ {
		name, value, hasValue := strings.Cut(strings.TrimLeft(args[i], "-"), "=")
		if !strings.HasPrefix(args[i], "-") || name != "in" {
			rest = append(rest, args[i])
			continue
		}
		if !hasValue {
			if i+1 >= len(args) {
				return "", nil, errors.New("--in needs a file")
			}
			i++
			value = args[i]
		}
		in = value
	}
	return in, rest, nil
}

// shardsGiven reports whether the settings name a shard count (the command
// line or the environment); otherwise the backup's is used.
func shardsGiven(args []string, lookupEnv func(string) (string, bool)) bool {
	for _, a := range args {
		if name, _, _ := strings.Cut(strings.TrimLeft(a, "-"), "="); strings.HasPrefix(a, "-") && name == "shards" {
			return true
		}
	}
	v, ok := lookupEnv(envName("shards"))
	return ok && v != ""
}

func verifyFile(path string) (backup.Header, []backup.Shard, error) {
	f, err := os.Open(path)
	if err != nil {
		return backup.Header{}, nil, err
	}
	defer f.Close()
	return backup.Verify(f)
}

// checkEmptyDir refuses a data directory that holds anything: a restore
// never writes over a node's state.
func checkEmptyDir(dir string) error {
	entries, err := os.ReadDir(dir)
	switch {
	case errors.Is(err, os.ErrNotExist):
		return nil
	case err != nil:
		return err
	case len(entries) > 0:
		if _, ok, _ := persistence.ReadIdentity(dir); ok {
			return fmt.Errorf("--data-dir %s already holds a node's data: restore into a new, empty directory", dir)
		}
		return fmt.Errorf("--data-dir %s is not empty: restore into a new, empty directory", dir)
	}
	return nil
}

// restoreInto creates the node's data directory as its first start would,
// and installs the backup's state of every shard the node replicates. It
// returns those shards.
func restoreInto(o options, in string) ([]int, error) {
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	// A single node's client address is not part of its data directory.
	clientAddr := net.JoinHostPort(o.bind, strconv.Itoa(o.clientPort()))
	cfg, err := raftSettings(o, clientAddr, cluster.SystemClock{}, log)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(in)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	r, err := backup.NewReader(f)
	if err != nil {
		return nil, err
	}
	var held []int
	for {
		sec, frame, err := r.Next()
		if errors.Is(err, io.EOF) {
			return held, nil
		}
		if err != nil {
			return nil, err
		}
		replicas := cluster.Replicas(cfg.Members, sec.Shard)
		if !slices.ContainsFunc(replicas, func(m cluster.Member) bool { return m.ID == cfg.Self.ID }) {
			continue // another node's: Next skips its bytes, checking them
		}
		if err := cluster.InstallBackup(cfg.RaftConfig, sec.Shard, replicas, sec.Index, frame); err != nil {
			return nil, err
		}
		held = append(held, sec.Shard)
	}
}
