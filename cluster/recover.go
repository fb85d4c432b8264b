package cluster

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/hashicorp/raft"

	"github.com/rlserver/rlserver/cluster/raftfix"
	"github.com/rlserver/rlserver/persistence"
)

// Break-glass recovery (rlserver recover). A group that has lost the
// majority of its voters for good (two of three replicas' machines and
// disks) can never elect a leader again: Raft needs a majority of the
// configuration it has, and the lost voters are still in it. Recovery
// rewrites the configuration, offline, on a surviving replica's stores with
// hashicorp/raft's RecoverCluster: the group's own log, stable and snapshot
// stores, and its own state machine, which replays every entry the replica
// holds (committed or not: an entry this replica held may have been
// answered) and is written out as a snapshot carrying the new
// configuration. Entries only the lost replicas held cannot be known.
//
// A recovered shard's directory is marked (persistence.MarkRecovered):
// RecoverCluster records the new configuration at index 1, and the
// catalogue, which takes a shard leader's report of its configuration only
// when it is newer than the one it recorded, would otherwise refuse it for
// good; the mark makes the leader report it as a recovery
// (reportConfig), and goes once the catalogue has it (settleRecovered).

// GroupName names one Raft group of a node's data directory: a shard's, or
// the catalogue's.
type GroupName struct {
	Shard     int  // when not Catalogue
	Catalogue bool // the catalogue group (the cluster's membership and placement)
}

// String is the group as an operator reads it: "shard 3", "the catalogue".
func (g GroupName) String() string {
	if g.Catalogue {
		return "the catalogue"
	}
	return fmt.Sprintf("shard %d", g.Shard)
}

// StateMachine makes a group's state machine, which reports on halt an
// entry only a newer rlserver can apply.
type StateMachine func(halt chan<- error) raft.FSM

// RaftServer is one member of a group's Raft configuration.
type RaftServer struct {
	ID, Address string
	Voter       bool // false: a non-voter (a replica catching up)
}

// GroupState is a group's Raft state as a replica's stores hold it.
type GroupState struct {
	Group GroupName
	// Servers is the latest configuration the replica holds, committed or
	// not.
	Servers []RaftServer
	// LastIndex and LastTerm are the replica's last entry (in its log, or
	// its latest snapshot when the log holds nothing after it).
	LastIndex, LastTerm uint64
}

// Recovery is what RecoverGroup found and wrote.
type Recovery struct {
	Before GroupState
	// After is the configuration recovery writes: the surviving voters.
	After []RaftServer
	// Needed is false when the group's configuration is After already;
	// Written is true when it was written (not a dry run, and needed).
	Needed, Written bool
}

// ErrNoGroup reports a group the data directory holds no replica of.
var ErrNoGroup = errors.New("no such group")

// ErrNotInGroup reports a voter given for a recovery that is not a member
// of the group's configuration.
var ErrNotInGroup = errors.New("not a member of the group's configuration")

// RecoverGroup rewrites group g's Raft configuration, in the data directory
// cfg.Layout of the stopped node cfg.Self.ID, to voters (this node alone
// when empty), which must be members of the configuration the replica holds
// and include this node. With dryRun it only reads. It refuses a directory
// another process holds (persistence.ErrInUse). cfg needs Self.ID, Layout,
// Shards, Log and Scripts (a shard's entries are replayed); nothing
// listens. catalogue makes the catalogue group's state machine, which the
// control plane owns, for g's entries to be replayed into when g is the
// catalogue's; it reports on halt an entry it cannot apply.
func RecoverGroup(cfg RaftConfig, g GroupName, catalogue StateMachine, voters []string, dryRun bool) (Recovery, error) {
	og, err := openOffline(&cfg, g, catalogue)
	if err != nil {
		return Recovery{}, err
	}
	defer og.close()
	rec := Recovery{}
	if rec.Before, err = og.state(); err != nil {
		return rec, err
	}
	if rec.After, err = recoveredServers(rec.Before, cfg.Self.ID, voters); err != nil {
		return rec, err
	}
	rec.Needed = !slices.Equal(rec.Before.Servers, rec.After)
	if dryRun || !rec.Needed {
		return rec, nil
	}
	if err := og.recover(rec.After); err != nil {
		return rec, err
	}
	rec.Written = true
	return rec, nil
}

// ReadGroup reads group g's state in the data directory cfg.Layout of the
// stopped node cfg.Self.ID, as RecoverGroup's dry run does, and writes
// nothing. cfg and catalogue are as RecoverGroup's.
func ReadGroup(cfg RaftConfig, g GroupName, catalogue StateMachine) (GroupState, error) {
	og, err := openOffline(&cfg, g, catalogue)
	if err != nil {
		return GroupState{}, err
	}
	defer og.close()
	return og.state()
}

// Survivors judges st's configuration against the nodes that survive: how
// many of its voters are among them, of how many voters, and whether they
// are a majority, with which the group elects a leader once they run, and
// needs no recovery.
func (st GroupState) Survivors(survivors []string) (alive, voters int, majority bool) {
	for _, s := range st.Servers {
		if s.Voter {
			voters++
			if slices.Contains(survivors, s.ID) {
				alive++
			}
		}
	}
	return alive, voters, voters > 0 && alive > voters/2
}

// Members is those of ids that are members of st's configuration (voters
// or non-voters), in the order given: the voters a recovery of st may take.
func (st GroupState) Members(ids []string) []string {
	var out []string
	for _, id := range ids {
		if slices.ContainsFunc(st.Servers, func(s RaftServer) bool { return s.ID == id }) {
			out = append(out, id)
		}
	}
	return out
}

// recoveredServers is the configuration a recovery of st writes: voters
// (self alone when none), with the addresses st gives them.
func recoveredServers(st GroupState, self string, voters []string) ([]RaftServer, error) {
	if len(voters) == 0 {
		voters = []string{self}
	}
	if !slices.Contains(voters, self) {
		return nil, fmt.Errorf("this node, %s, must be one of the voters %s: recover %s on each surviving node, with the same voters",
			self, strings.Join(voters, ","), st.Group)
	}
	var out []RaftServer
	for i, id := range voters {
		if slices.Contains(voters[:i], id) {
			return nil, fmt.Errorf("voter %s is named twice", id)
		}
		at := slices.IndexFunc(st.Servers, func(s RaftServer) bool { return s.ID == id })
		if at < 0 {
			return nil, fmt.Errorf("%s: voter %s: %w (its members: %s)", st.Group, id, ErrNotInGroup, serverList(st.Servers))
		}
		out = append(out, RaftServer{ID: id, Address: st.Servers[at].Address, Voter: true})
	}
	return out, nil
}

// serverList is servers as "n1, n2, n3 (non-voter)".
func serverList(servers []RaftServer) string {
	if len(servers) == 0 {
		return "none"
	}
	names := make([]string, len(servers))
	for i, s := range servers {
		names[i] = s.ID
		if !s.Voter {
			names[i] += " (non-voter)"
		}
	}
	return strings.Join(names, ", ")
}

// offlineGroup is a group's stores and state machine, opened without a
// running Raft instance.
type offlineGroup struct {
	cfg   *RaftConfig
	group GroupName
	dir   string
	st    stores
	fsm   raft.FSM
	halt  chan error
}

// openOffline opens g's stores in cfg's data directory, as a start opens
// them (openStores), with the state machine the group runs (catalogue, for
// the catalogue's). A group whose files are missing is refused before
// anything is opened, so nothing is created.
func openOffline(cfg *RaftConfig, g GroupName, catalogue StateMachine) (*offlineGroup, error) {
	og := &offlineGroup{cfg: cfg, group: g, halt: make(chan error, 1)}
	// A journal the node left (it ran with one and did not stop cleanly)
	// holds appends its shards' logs may lack: replayed first, as the
	// node's next start would.
	if err := persistence.ReplayJournal(cfg.Layout.Dir, newRaftLogger(cfg.Log, "journal")); err != nil {
		return nil, fmt.Errorf("the Raft logs' journal: %w", err)
	}
	var err error
	switch {
	case g.Catalogue && !cfg.Layout.HasCatalogueDir():
		return nil, fmt.Errorf("%s: %w: %s holds no catalogue (a single node has none)", g, ErrNoGroup, cfg.Layout.Dir)
	case g.Catalogue:
		og.dir, err = cfg.Layout.CatalogueDir()
		og.fsm = catalogue(og.halt)
	case g.Shard < 0 || g.Shard >= cfg.Shards:
		return nil, fmt.Errorf("%s: %w: the cluster's shards are 0 to %d", g, ErrNoGroup, cfg.Shards-1)
	case !cfg.Layout.HasShardDir(g.Shard):
		return nil, fmt.Errorf("%s: %w: node %s holds no replica of it in %s", g, ErrNoGroup, cfg.Self.ID, cfg.Layout.Dir)
	default:
		og.dir, err = cfg.Layout.ShardDir(g.Shard)
		fsm := newShardFSM(g.Shard, new(observerSlot), og.halt, cfg.Scripts)
		fsm.snapshotNice = cfg.SnapshotNice
		og.fsm = fsm
	}
	if err != nil {
		return nil, err
	}
	switch format, err := persistence.StoredLogFormat(og.dir); {
	case err != nil:
		return nil, fmt.Errorf("%s: %w", g, err)
	case format == persistence.LogNone:
		return nil, fmt.Errorf("%s: %w: %s holds no Raft log", g, ErrNoGroup, og.dir)
	}
	if og.st, err = openStores(og.dir, cfg, false, false); err != nil {
		return nil, fmt.Errorf("%s: %w", g, err)
	}
	if !og.st.existing {
		og.close()
		return nil, fmt.Errorf("%s: %w: %s holds no Raft state", g, ErrNoGroup, og.dir)
	}
	return og, nil
}

// close closes the stores.
func (og *offlineGroup) close() { og.st.store.Close() }

// raftConfig is the group's Raft configuration, as a start makes it.
func (og *offlineGroup) raftConfig() *raft.Config {
	name := "raft.catalogue"
	if !og.group.Catalogue {
		name = fmt.Sprintf("raft.shard%d", og.group.Shard)
	}
	return raftConfig(og.cfg, name)
}

// state reads the group's latest configuration and last entry, without
// restoring the state machine.
func (og *offlineGroup) state() (GroupState, error) {
	st := GroupState{Group: og.group}
	c := og.raftConfig()
	c.NoSnapshotRestoreOnStart = true
	_, trans := raft.NewInmemTransport("")
	defer trans.Close()
	conf, err := raftfix.ReadConfiguration(c, og.fsm, og.st.logs, og.st.store, og.st.snaps, trans)
	if err != nil {
		return st, fmt.Errorf("%s: reading its configuration: %w", og.group, err)
	}
	for _, s := range conf.Servers {
		st.Servers = append(st.Servers, RaftServer{ID: string(s.ID), Address: string(s.Address), Voter: s.Suffrage == raft.Voter})
	}
	if st.LastIndex, err = og.st.logs.LastIndex(); err != nil {
		return st, fmt.Errorf("%s: %w", og.group, err)
	}
	if st.LastIndex > 0 {
		var last raft.Log
		if err := og.st.logs.GetLog(st.LastIndex, &last); err != nil {
			return st, fmt.Errorf("%s: entry %d: %w", og.group, st.LastIndex, err)
		}
		st.LastTerm = last.Term
	}
	snaps, err := og.st.snaps.List()
	if err != nil {
		return st, fmt.Errorf("%s: %w", og.group, err)
	}
	if len(snaps) > 0 && snaps[0].Index > st.LastIndex {
		st.LastIndex, st.LastTerm = snaps[0].Index, snaps[0].Term
	}
	return st, nil
}

// recover rewrites the group's configuration to servers with
// RecoverCluster, which replays the replica's snapshot and log into the
// state machine and writes the result as a snapshot with the new
// configuration. A shard's directory is marked first, so that a recovery
// cut short is still reported as one when it is run again and completes.
func (og *offlineGroup) recover(servers []RaftServer) error {
	conf := raft.Configuration{}
	for _, s := range servers {
		conf.Servers = append(conf.Servers, raft.Server{Suffrage: raft.Voter, ID: raft.ServerID(s.ID), Address: raft.ServerAddress(s.Address)})
	}
	if !og.group.Catalogue {
		if err := persistence.MarkRecovered(og.dir, "rlserver recover rewrote this shard's Raft configuration to "+serverList(servers)); err != nil {
			return err
		}
	}
	_, trans := raft.NewInmemTransport(raft.ServerAddress(servers[0].Address))
	defer trans.Close()
	if err := raft.RecoverCluster(og.raftConfig(), og.fsm, og.st.logs, og.st.store, og.st.snaps, trans, conf); err != nil {
		select {
		case herr := <-og.halt:
			return fmt.Errorf("%s: %w", og.group, herr)
		default:
		}
		return fmt.Errorf("%s: recovery: %w", og.group, err)
	}
	return nil
}
