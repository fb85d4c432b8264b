package placement

import (
	"encoding/json"
	"errors"
	"fmt"
	"slices"

	"github.com/rlserver/rlserver/cluster"
)

// A catalogue entry is one change, as JSON after a version byte: changes are
// rare and small, and JSON keeps them readable in a log dump. nextCatalogue
// makes the next catalogue from the current one and a change,
// deterministically:
// no clock, no randomness, no map order, so every node reaches the same
// catalogue. A change that is not valid against the catalogue as it stands
// when it commits (a node that left meanwhile, a move overtaken by another)
// changes nothing and answers its error, alike on every node.

// catalogueEntryVersion is the version byte of catalogue entries.
// Version 2 is a version 1 entry with a field that version 1 would ignore
// and so apply otherwise (a recovered shard's configuration): only those
// entries carry it, so that a node of a release before it stops and asks
// to be upgraded (ErrNewerEntry) rather than disagree with the others.
const (
	catalogueEntryVersion   = 1
	catalogueEntryRecovered = 2
)

// The kinds of change.
const (
	opInit      = "init"      // the first catalogue, from the initial members
	opRegister  = "register"  // an initial member records its incarnation
	opJoin      = "join"      // a node joins
	opForget    = "forget"    // CLUSTER FORGET [FORCE]
	opDrop      = "drop"      // a leaving node that holds nothing is forgotten
	opConfig    = "config"    // a shard leader reports its group's configuration
	opTarget    = "target"    // a shard's target replicas change
	opMoveShard = "moveshard" // CLUSTER MOVESHARD queues a move
	opRebalance = "rebalance" // CLUSTER REBALANCE starts, or is over
)

// catalogueOp is one change; which fields count depends on Op.
type catalogueOp struct {
	Op        string             `json:"op"`
	Catalogue *cluster.Catalogue `json:"catalogue,omitempty"` // init
	Node      *cluster.NodeInfo  `json:"node,omitempty"`      // register, join
	ID        string             `json:"id,omitempty"`        // forget, drop
	Force     bool               `json:"force,omitempty"`     // forget
	Shard     int                `json:"shard,omitempty"`     // config, target
	Voters    []string           `json:"voters,omitempty"`    // config
	Learners  []string           `json:"learners,omitempty"`  // config
	Index     uint64             `json:"index,omitempty"`     // config: the shard log's index
	Recovered bool               `json:"recovered,omitempty"` // config: rewritten by rlserver recover (version 2)
	Target    []string           `json:"target,omitempty"`    // target
	Expect    []string           `json:"expect,omitempty"`    // target: the target it replaces
	PopMove   bool               `json:"pop_move,omitempty"`  // target: starts the first queued move
	Step      bool               `json:"step,omitempty"`      // target: a step of the plan (counted in the rebalance's steps)
	Move      *cluster.Move      `json:"move,omitempty"`      // moveshard
	On        bool               `json:"on,omitempty"`        // rebalance
	At        int64              `json:"at,omitempty"`        // rebalance: the proposer's clock, Unix ms
	By        string             `json:"by,omitempty"`        // rebalance on: who began it
	Why       string             `json:"why,omitempty"`       // rebalance off: why it ended
}

// encode is the op as a catalogue entry.
func (op catalogueOp) encode() []byte {
	b, err := json.Marshal(op)
	if err != nil {
		panic(err) // every field marshals
	}
	version := byte(catalogueEntryVersion)
	if op.Recovered {
		version = catalogueEntryRecovered
	}
	return append([]byte{version}, b...)
}

// decodeCatalogueOp reads a catalogue entry.
func decodeCatalogueOp(data []byte) (catalogueOp, error) {
	var op catalogueOp
	switch {
	case len(data) == 0:
		return op, fmt.Errorf("%w: empty catalogue entry", errBadEntry)
	case data[0] > catalogueEntryRecovered:
		return op, fmt.Errorf("%w (catalogue entry version %d)", cluster.ErrNewerEntry, data[0])
	case data[0] != catalogueEntryVersion && data[0] != catalogueEntryRecovered:
		return op, fmt.Errorf("%w: catalogue entry version %d", errBadEntry, data[0])
	}
	if err := json.Unmarshal(data[1:], &op); err != nil {
		return op, fmt.Errorf("%w: %v", errBadEntry, err)
	}
	return op, nil
}

// errNoChange is what nextCatalogue returns for a valid change that changes
// nothing (a repeated join, an old report): it answers as a success.
var errNoChange = errors.New("no change")

// errBadEntry reports bytes that do not decode to a catalogue change.
var errBadEntry = errors.New("malformed catalogue entry")

// errUnknownOp reports a change only a newer rlserver knows.
var errUnknownOp = fmt.Errorf("%w (an unknown catalogue change)", cluster.ErrNewerEntry)

// nextCatalogue returns the catalogue c becomes with op, committed at
// index, or errNoChange, or the error that refuses op. c is nil before the
// init.
func nextCatalogue(c *cluster.Catalogue, op catalogueOp, index uint64) (*cluster.Catalogue, error) {
	if op.Op == opInit {
		if c != nil || op.Catalogue == nil {
			return nil, errNoChange // another node's init won
		}
		next := op.Catalogue.Clone()
		next.Index = index
		return next, nil
	}
	if c == nil {
		// Not a refusal: the initial members commit the init within moments
		// of forming the cluster, and a node that joins (or an operator's
		// change) sent meanwhile must be tried again, not turned away.
		return nil, errCatalogueUnavailable{"is not initialised yet"}
	}
	var next *cluster.Catalogue
	var err error
	switch op.Op {
	case opRegister:
		next, err = catalogue{c}.register(op.Node)
	case opJoin:
		next, err = catalogue{c}.join(op.Node)
	case opForget:
		next, err = catalogue{c}.forget(op.ID, op.Force)
	case opDrop:
		next, err = catalogue{c}.drop(op.ID)
	case opConfig:
		next, err = catalogue{c}.config(op.Shard, op.Voters, op.Learners, op.Index, op.Recovered)
	case opTarget:
		next, err = catalogue{c}.target(op.Shard, op.Target, op.Expect, op.PopMove)
		if err == nil && op.Step && next.Rebalance && next.LastRebalance != nil {
			next.LastRebalance.Steps++
		}
	case opMoveShard:
		next, err = catalogue{c}.moveShard(op.Move)
	case opRebalance:
		next, err = catalogue{c}.rebalance(op)
	default:
		return nil, errUnknownOp
	}
	if err != nil {
		return nil, err
	}
	next.Index = index
	return next, nil
}

// register records the incarnation of an initial member, started for the
// first time under a release with a catalogue.
func (c catalogue) register(n *cluster.NodeInfo) (*cluster.Catalogue, error) {
	if n == nil || n.Incarnation == "" {
		return nil, refused(cluster.MemberConflict, "a registration without an incarnation")
	}
	if err := c.admits(n.ID, n.Incarnation); err != nil {
		return nil, err
	}
	have := c.Node(n.ID)
	if have == nil {
		return nil, refused(cluster.MemberUnknown, "node %s is not a member of this cluster: add it with --join", n.ID)
	}
	if have.Incarnation == n.Incarnation {
		return nil, errNoChange
	}
	next := c.Clone()
	next.Node(n.ID).Incarnation = n.Incarnation
	return next, nil
}

// admits checks a node that presents itself with id and incarnation: it
// must not have been forgotten, and a member with its id must have its
// incarnation (or none yet).
func (c catalogue) admits(id, incarnation string) error {
	if c.forgotten(id, incarnation) {
		return refused(cluster.MemberRemoved, "node %s was removed from the cluster (CLUSTER FORGET): its data directory cannot serve again; "+
			"start a new node with an empty data directory and --join", id)
	}
	if have := c.Node(id); have != nil && have.Incarnation != "" && have.Incarnation != incarnation {
		return refused(cluster.MemberIncarnation, "node %s is a member of the cluster with another data directory (incarnation %.8s, not %.8s): "+
			"a node whose data directory was lost has forgotten the Raft votes it cast and must never rejoin under its old id; "+
			"run CLUSTER FORGET %s FORCE on a live node, then start this one as a new node with --join",
			id, have.Incarnation, incarnation, id)
	}
	return nil
}

// join adds a node, or accepts it again when it is already a member with
// the same incarnation (a join is idempotent).
func (c catalogue) join(n *cluster.NodeInfo) (*cluster.Catalogue, error) {
	if n == nil || n.ID == "" || n.Incarnation == "" || n.Bus == "" || n.Client == "" {
		return nil, refused(cluster.MemberConflict, "a join must name the node's id, incarnation and addresses")
	}
	if err := c.admits(n.ID, n.Incarnation); err != nil {
		return nil, err
	}
	if have := c.Node(n.ID); have != nil {
		if have.Incarnation == "" {
			return nil, refused(cluster.MemberConflict, "node %s is one of the cluster's initial members: start it with the --cluster "+
				"it was created with, or join this node under another --node-id", n.ID)
		}
		return nil, errNoChange
	}
	for _, m := range c.Nodes {
		if m.Client == n.Client || m.Bus == n.Bus {
			return nil, refused(cluster.MemberConflict, "node %s already uses the address %s@%s", m.ID, m.Client, m.Bus)
		}
	}
	next := c.Clone()
	next.Nodes = append(next.Nodes, cluster.NodeInfo{Member: n.Member, Incarnation: n.Incarnation})
	return next, nil
}

// forget removes a node that holds no replica; with force, it marks it
// leaving: its replicas are re-created on the others (driver.go), and it
// is dropped once it holds none.
func (c catalogue) forget(id string, force bool) (*cluster.Catalogue, error) {
	n := c.Node(id)
	if n == nil {
		return nil, refused(cluster.MemberUnknown, "Unknown node %s", id)
	}
	if len(c.Nodes) == 1 {
		return nil, refused(cluster.MemberConflict, "node %s is the cluster's only node", id)
	}
	held := c.holdings(id)
	if len(held) == 0 {
		return c.dropNow(id), nil
	}
	if !force {
		return nil, refused(cluster.MemberHoldsReplicas, "node %s holds replicas of shards %s: move them first (%s), "+
			"or let CLUSTER FORGET %s FORCE move them and then forget it", id, shardList(held), drainAdvice(c.Catalogue, id), id)
	}
	for _, s := range held {
		if others := slices.DeleteFunc(slices.Clone(c.Placement[s].Voters), func(v string) bool { return v == id }); len(others) == 0 {
			return nil, refused(cluster.MemberHoldsReplicas, "shard %d's only replica is on node %s: forgetting it would lose the shard", s, id)
		}
	}
	if n.Leaving {
		return nil, errNoChange
	}
	next := c.Clone()
	next.Node(id).Leaving = true
	// Moves queued from or to it would fail: the leaving node's replicas
	// are re-created by the driver instead.
	next.Moves = slices.DeleteFunc(next.Moves, func(m cluster.Move) bool { return m.From == id || m.To == id })
	return next, nil
}

// drop forgets a leaving node once it holds no replica.
func (c catalogue) drop(id string) (*cluster.Catalogue, error) {
	n := c.Node(id)
	if n == nil || !n.Leaving || len(c.holdings(id)) > 0 {
		return nil, errNoChange
	}
	return c.dropNow(id), nil
}

// dropNow is c without node id, remembered as forgotten.
func (c catalogue) dropNow(id string) *cluster.Catalogue {
	next := c.Clone()
	next.Forgotten = append(next.Forgotten, cluster.ForgottenNode{ID: id, Incarnation: c.Node(id).Incarnation})
	next.Nodes = slices.DeleteFunc(next.Nodes, func(n cluster.NodeInfo) bool { return n.ID == id })
	next.Moves = slices.DeleteFunc(next.Moves, func(m cluster.Move) bool { return m.From == id || m.To == id })
	return next
}

// config records a shard's Raft configuration, as its leader reports it;
// a report older than the one recorded changes nothing, unless it is a
// recovered group's (rlserver recover): its configuration is recorded at
// the start of its log, before those of the replicas it lost, and is the
// shard's from then on.
func (c catalogue) config(shard int, voters, learners []string, index uint64, recovered bool) (*cluster.Catalogue, error) {
	if shard < 0 || shard >= c.Shards {
		return nil, refused(cluster.MemberBadMove, "no shard %d", shard)
	}
	p := c.Placement[shard]
	if index <= p.ConfigIndex && p.ConfigIndex != 0 && !recovered {
		return nil, errNoChange
	}
	if slices.Equal(p.Voters, voters) && slices.Equal(p.Learners, learners) && index == p.ConfigIndex {
		return nil, errNoChange
	}
	next := c.Clone()
	next.Placement[shard].Voters = slices.Clone(voters)
	next.Placement[shard].Learners = slices.Clone(learners)
	next.Placement[shard].ConfigIndex = index
	return next, nil
}

// target sets a shard's target replicas, replacing expect (a driver that
// decided on an older catalogue changes nothing). A real move (other
// replicas, not another order) waits until no other shard is moving.
func (c catalogue) target(shard int, target, expect []string, popMove bool) (*cluster.Catalogue, error) {
	if shard < 0 || shard >= c.Shards {
		return nil, refused(cluster.MemberBadMove, "no shard %d", shard)
	}
	p := c.Placement[shard]
	if !slices.Equal(p.Target, expect) {
		return nil, refused(cluster.MemberBadMove, "shard %d's target changed meanwhile", shard)
	}
	if len(target) == 0 || len(target) > cluster.MaxReplicas {
		return nil, refused(cluster.MemberBadMove, "shard %d: %d replicas, not 1 to %d", shard, len(target), cluster.MaxReplicas)
	}
	for i, id := range target {
		n := c.Node(id)
		if n == nil || (n.Leaving && !slices.Contains(p.Voters, id)) || slices.Contains(target[:i], id) {
			return nil, refused(cluster.MemberBadMove, "shard %d: %s cannot take a replica", shard, id)
		}
	}
	if moving := c.moving(); !sameSet(target, p.Target) && moving >= 0 && moving != shard {
		return nil, refused(cluster.MemberBadMove, "shard %d is moving: one shard moves at a time", moving)
	}
	next := c.Clone()
	next.Placement[shard].Target = slices.Clone(target)
	if popMove && len(next.Moves) > 0 {
		next.Moves = next.Moves[1:]
	}
	return next, nil
}

// rebalance begins a rebalance (op.On) or ends it, and records when, who
// began it and why it ended.
func (c catalogue) rebalance(op catalogueOp) (*cluster.Catalogue, error) {
	if c.Rebalance == op.On {
		return nil, errNoChange
	}
	next := c.Clone()
	next.Rebalance = op.On
	switch {
	case op.On:
		next.LastRebalance = &cluster.RebalanceRun{Began: op.At, By: op.By}
	case next.LastRebalance != nil:
		next.LastRebalance.Ended, next.LastRebalance.Outcome = op.At, op.Why
	default: // begun by a release that did not record it
		next.LastRebalance = &cluster.RebalanceRun{Ended: op.At, Outcome: op.Why}
	}
	return next, nil
}

// moveShard queues a move after checking it against the catalogue as it
// stands (the driver checks it again when it starts it).
func (c catalogue) moveShard(m *cluster.Move) (*cluster.Catalogue, error) {
	if m == nil {
		return nil, refused(cluster.MemberBadMove, "no move")
	}
	if err := c.checkMove(*m); err != nil {
		return nil, err
	}
	next := c.Clone()
	next.Moves = append(next.Moves, *m)
	return next, nil
}

// checkMove says why m cannot be made now, or nil.
func (c catalogue) checkMove(m cluster.Move) error {
	if m.Shard < 0 || m.Shard >= c.Shards {
		return refused(cluster.MemberBadMove, "no shard %d: the shards are 0 to %d", m.Shard, c.Shards-1)
	}
	p := c.Placement[m.Shard]
	from, to := c.Node(m.From), c.Node(m.To)
	switch {
	case from == nil:
		return refused(cluster.MemberUnknown, "Unknown node %s", m.From)
	case to == nil:
		return refused(cluster.MemberUnknown, "Unknown node %s", m.To)
	case m.From == m.To:
		return refused(cluster.MemberBadMove, "a move needs two different nodes")
	case !slices.Contains(p.Target, m.From):
		return refused(cluster.MemberBadMove, "node %s holds no replica of shard %d (its replicas: %s)", m.From, m.Shard, joinIDs(p.Target))
	case slices.Contains(p.Target, m.To):
		return refused(cluster.MemberBadMove, "node %s already holds a replica of shard %d", m.To, m.Shard)
	case to.Leaving:
		return refused(cluster.MemberBadMove, "node %s is being forgotten", m.To)
	}
	return nil
}
