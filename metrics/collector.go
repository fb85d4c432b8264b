package metrics

import (
	"runtime"
	"strconv"
	"strings"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
)

// collector reads the sources when Prometheus scrapes: the same counters
// INFO reports, so the two agree, and nothing recorded on the hot path.
type collector struct {
	src      Sources
	notReady func() error // why /readyz says no, nil when it says yes

	buildInfo *prometheus.Desc
	ready     *prometheus.Desc

	decisions *prometheus.Desc
	keys      *prometheus.Desc
	dataset   *prometheus.Desc
	evicted   *prometheus.Desc
	oom       *prometheus.Desc
	shadow    *prometheus.Desc
	charged   *prometheus.Desc
	maxMemory *prometheus.Desc
	topKeys   *prometheus.Desc

	shareKeys, shareHolders, shareCommitted *prometheus.Desc
	shareGrants, shareReturned, shareLapsed *prometheus.Desc

	resPending, reserved, resMade, resSettled, resExpired *prometheus.Desc

	clients   *prometheus.Desc
	onLoops   *prometheus.Desc
	maxClient *prometheus.Desc
	received  *prometheus.Desc
	rejected  *prometheus.Desc
	commands  *prometheus.Desc

	raftState       *prometheus.Desc
	raftLeaderKnown *prometheus.Desc
	raftTerm        *prometheus.Desc
	raftCommit      *prometheus.Desc
	raftApplied     *prometheus.Desc
	raftLogBytes    *prometheus.Desc
	raftSnapBytes   *prometheus.Desc
	raftContact     *prometheus.Desc

	rebalanceState   *prometheus.Desc
	rebalanceSteps   *prometheus.Desc
	rebalancePlanned *prometheus.Desc

	fitness fitnessDescs
}

// raftStates are the values of rlserver_raft_state's state label, as
// hashicorp/raft names them.
var raftStates = []string{"Leader", "Follower", "Candidate", "Shutdown"}

func newCollector(src Sources, notReady func() error) *collector {
	shard := []string{"shard"}
	d := prometheus.NewDesc
	return &collector{
		src:       src,
		notReady:  notReady,
		buildInfo: d("rlserver_build_info", "Always 1; the labels say which rlserver and Go built this process.", []string{"version", "goversion"}, nil),
		ready:     d("rlserver_ready", "1 when /readyz answers 200: every shard's state is loaded and its leader known.", nil, nil),

		decisions: d("rlserver_decisions_total",
			"Decisions applied by this node's replica of a shard, by command and outcome (allowed or denied); "+
				"summed, INFO's rl_decisions_allowed and rl_decisions_denied. Every replica of a shard applies "+
				"the same decisions: across nodes, take the max per shard, not the sum.",
			[]string{"shard", "command", "outcome"}, nil),
		keys:    d("rlserver_keys", "Keys a shard's replica holds, expired ones not yet reclaimed included (INFO rl_keys, summed).", shard, nil),
		dataset: d("rlserver_dataset_bytes", "Estimated memory a shard's keys and their state hold (INFO used_memory_dataset, summed).", shard, nil),
		evicted: d("rlserver_evicted_keys_total", "Keys a shard evicted at --maxmemory under volatile-ttl (INFO evicted_keys, summed).", shard, nil),
		oom: d("rlserver_rejected_oom_total",
			"Commands a shard refused with -OOM at --maxmemory because they would have created a key (INFO rl_rejected_oom, summed).", shard, nil),
		shadow: d("rlserver_shadow_denied_total", "Checks of shadow policies that were allowed but would have been denied (INFO rl_shadow_denied, summed).", shard, nil),
		charged: d("rlserver_memory_charged_bytes",
			"Memory a shard's keys are charged against --maxmemory, the same on every replica (INFO rl_memory_charged, summed).", shard, nil),
		maxMemory: d("rlserver_maxmemory_bytes", "--maxmemory in bytes, over all shards; 0 for no limit (INFO maxmemory).", nil, nil),
		topKeys: d("rlserver_top_key_decisions",
			"Decisions on the heaviest keys of the last minute, by outcome: the 10 heaviest of each, over every shard, "+
				"from the shards' heavy-hitter sketches (RL.TOP); approximate, never under the true count.",
			[]string{"key", "outcome"}, nil),

		shareKeys:    d("rlserver_share_keys", "Budget-lease keys (RL.SHARE) a shard's replica holds (INFO rl_share_keys, summed).", shard, nil),
		shareHolders: d("rlserver_share_holders", "Holders of a shard's budget-lease keys with a grant in force (INFO rl_share_holders, summed).", shard, nil),
		shareCommitted: d("rlserver_share_committed_units",
			"Units per window the holders of a shard's budget-lease keys may spend now, each key's in its own window (INFO rl_share_committed, summed).", shard, nil),
		shareGrants: d("rlserver_share_grants_total", "RL.SHARE requests a shard's replica granted, a rate of 0 included (INFO rl_share_grants, summed).", shard, nil),
		shareReturned: d("rlserver_share_returned_units_total",
			"Committed units freed before they expired, by RL.UNSHARE and ACK (INFO rl_share_returned, summed).", shard, nil),
		shareLapsed: d("rlserver_share_lapsed_total",
			"Holders dropped because every grant of theirs expired, never returned (INFO rl_share_lapsed, summed).", shard, nil),
		resPending: d("rlserver_reservations_pending", "RL.RESERVE reservations a shard's replica holds, neither settled nor expired (INFO rl_reservations_pending, summed).", shard, nil),
		reserved:   d("rlserver_reserved_units", "The units the pending reservations' estimates hold (INFO rl_reserved, summed).", shard, nil),
		resMade:    d("rlserver_reservations_made_total", "Reservations RL.RESERVE made (INFO rl_reservations_made, summed).", shard, nil),
		resSettled: d("rlserver_reservations_settled_total", "Reservations RL.SETTLE settled (INFO rl_reservations_settled, summed).", shard, nil),
		resExpired: d("rlserver_reservations_expired_total",
			"Reservations settled at their estimate because their TTL ended first (INFO rl_reservations_expired, summed).", shard, nil),

		clients:   d("rlserver_connected_clients", "Client connections open now (INFO connected_clients).", nil, nil),
		onLoops:   d("rlserver_event_loop_clients", "Of the client connections, those an event loop serves (--event-loops; INFO event_loop_clients).", nil, nil),
		maxClient: d("rlserver_maxclients", "The bound on client connections, --maxclients (INFO maxclients).", nil, nil),
		received:  d("rlserver_connections_received_total", "Client connections accepted (INFO total_connections_received).", nil, nil),
		rejected:  d("rlserver_connections_rejected_total", "Client connections refused at --maxclients (INFO rejected_connections).", nil, nil),
		commands:  d("rlserver_commands_processed_total", "Commands answered, every kind (INFO total_commands_processed).", nil, nil),

		raftState:       d("rlserver_raft_state", "1 for the Raft state this node's replica of a shard is in (INFO raft's state), 0 for the others.", []string{"shard", "state"}, nil),
		raftLeaderKnown: d("rlserver_raft_leader_known", "1 when this node's replica of a shard knows its leader, 0 during an election.", shard, nil),
		raftTerm:        d("rlserver_raft_term", "The Raft term of this node's replica of a shard.", shard, nil),
		raftCommit:      d("rlserver_raft_commit_index", "The last log index this node's replica of a shard knows committed.", shard, nil),
		raftApplied:     d("rlserver_raft_applied_index", "The last log index this node's replica of a shard has applied.", shard, nil),
		raftLogBytes: d("rlserver_raft_log_bytes_since_snapshot", "Bytes of entries this node's replica of a shard has applied since its last snapshot was taken: "+
			"the next is taken once they reach --raft-snapshot-log-percentage of the last snapshot's size.", shard, nil),
		raftSnapBytes: d("rlserver_raft_snapshot_bytes", "The size of the last snapshot this node's replica of a shard wrote or restored (0: none yet).", shard, nil),
		raftContact: d("rlserver_raft_last_contact_seconds",
			"Since this node's replica of a shard last heard from its leader; 0 on the leader, absent before the first contact.", shard, nil),

		rebalanceState: d("rlserver_rebalance_state",
			"1 for the state the cluster's rebalance is in (CLUSTER REBALANCE STATUS: none, running, waiting for nodes that do not answer, done), 0 for the others.", []string{"state"}, nil),
		rebalanceSteps: d("rlserver_rebalance_steps", "The steps the current or last rebalance started (CLUSTER REBALANCE STATUS's steps).", nil, nil),
		rebalancePlanned: d("rlserver_rebalance_planned_steps",
			"The steps CLUSTER REBALANCE DRYRUN plans now: above 0 with no rebalance running, the cluster is unbalanced.", nil, nil),

		fitness: newFitnessDescs(),
	}
}

// Describe implements prometheus.Collector.
func (c *collector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{
		c.buildInfo, c.ready, c.decisions, c.keys, c.dataset, c.evicted, c.oom, c.shadow, c.charged, c.maxMemory, c.topKeys, c.clients, c.onLoops, c.maxClient, c.received, c.rejected, c.commands,
		c.shareKeys, c.shareHolders, c.shareCommitted, c.shareGrants, c.shareReturned, c.shareLapsed,
		c.resPending, c.reserved, c.resMade, c.resSettled, c.resExpired,
		c.raftState, c.raftLeaderKnown, c.raftTerm, c.raftCommit, c.raftApplied, c.raftLogBytes, c.raftSnapBytes, c.raftContact,
		c.rebalanceState, c.rebalanceSteps, c.rebalancePlanned,
	} {
		ch <- d
	}
	for _, d := range c.fitness.all() {
		ch <- d
	}
}

// topKeysMetric is how many keys of each outcome rlserver_top_key_decisions
// exports: a bound on the series a scrape adds, whatever the key count.
const topKeysMetric = 10

// collectTopKeys exports the heaviest keys, when the sources give them.
func (c *collector) collectTopKeys(gauge func(d *prometheus.Desc, v float64, labels ...string)) {
	if c.src.Top == nil {
		return
	}
	for _, outcome := range []string{"denied", "allowed"} {
		keys, err := c.src.Top.TopKeys(outcome == "denied", topKeysMetric)
		if err != nil {
			continue // a shard without a leader: the others' series go on
		}
		for _, k := range keys {
			gauge(c.topKeys, float64(k.Count), k.Key, outcome)
		}
	}
}

// collectRebalance exports the cluster's rebalance, when the sources give
// it (a cluster's node).
func (c *collector) collectRebalance(gauge func(d *prometheus.Desc, v float64, labels ...string)) {
	if c.src.Rebalance == nil {
		return
	}
	st := c.src.Rebalance.RebalanceStatus()
	for _, state := range cluster.RebalanceStates {
		v := 0.0
		if state == st.State {
			v = 1
		}
		gauge(c.rebalanceState, v, state)
	}
	gauge(c.rebalanceSteps, float64(st.Run.Steps))
	gauge(c.rebalancePlanned, float64(len(st.Plan)))
}

// Collect implements prometheus.Collector.
func (c *collector) Collect(ch chan<- prometheus.Metric) {
	gauge := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.GaugeValue, v, labels...)
	}
	counter := func(d *prometheus.Desc, v float64, labels ...string) {
		ch <- prometheus.MustNewConstMetric(d, prometheus.CounterValue, v, labels...)
	}
	gauge(c.buildInfo, 1, c.src.Version, runtime.Version())
	ready := 1.0
	if c.notReady() != nil {
		ready = 0
	}
	gauge(c.ready, ready)

	for shard := range c.src.Shards.Shards() {
		label := strconv.Itoa(shard)
		st := c.src.Shards.Stats(shard)
		gauge(c.keys, float64(st.Keys), label)
		gauge(c.dataset, float64(st.Bytes), label)
		counter(c.evicted, float64(st.Evicted), label)
		counter(c.oom, float64(st.RejectedOOM), label)
		counter(c.shadow, float64(st.ShadowDenied), label)
		gauge(c.charged, float64(st.Charged), label)
		gauge(c.shareKeys, float64(st.ShareKeys), label)
		gauge(c.shareHolders, float64(st.ShareHolders), label)
		gauge(c.shareCommitted, float64(st.ShareCommitted), label)
		counter(c.shareGrants, float64(st.ShareGrants), label)
		counter(c.shareReturned, float64(st.ShareReturned), label)
		counter(c.shareLapsed, float64(st.ShareLapsed), label)
		gauge(c.resPending, float64(st.ReservationsPending), label)
		gauge(c.reserved, float64(st.Reserved), label)
		counter(c.resMade, float64(st.ReservationsMade), label)
		counter(c.resSettled, float64(st.ReservationsSettled), label)
		counter(c.resExpired, float64(st.ReservationsExpired), label)
		for op, d := range st.Decisions {
			if d != (engine.DecisionCount{}) {
				name := engine.Op(op).Spec().Name
				counter(c.decisions, float64(d.Allowed), label, name, "allowed")
				counter(c.decisions, float64(d.Denied), label, name, "denied")
			}
		}
	}

	st := c.src.Server.Stats()
	gauge(c.clients, float64(st.ConnectedClients))
	gauge(c.onLoops, float64(st.EventLoopClients))
	gauge(c.maxClient, float64(st.MaxClients))
	counter(c.received, float64(st.ConnectionsReceived))
	counter(c.rejected, float64(st.RejectedConnections))
	counter(c.commands, float64(st.CommandsProcessed))
	gauge(c.maxMemory, float64(st.MaxMemory))
	c.collectTopKeys(gauge)
	c.collectRebalance(gauge)
	c.collectFitness(gauge)

	if c.src.Raft == nil {
		return
	}
	for _, rs := range c.src.Raft.RaftStates() {
		label := strconv.Itoa(rs.Shard)
		for _, state := range raftStates {
			v := 0.0
			if state == rs.State {
				v = 1
			}
			gauge(c.raftState, v, label, strings.ToLower(state))
		}
		known := 0.0
		if rs.Leader != "" {
			known = 1
		}
		gauge(c.raftLeaderKnown, known, label)
		gauge(c.raftTerm, float64(rs.Term), label)
		gauge(c.raftCommit, float64(rs.CommitIndex), label)
		gauge(c.raftApplied, float64(rs.AppliedIndex), label)
		gauge(c.raftLogBytes, float64(rs.LogBytes), label)
		gauge(c.raftSnapBytes, float64(rs.SnapshotBytes), label)
		if rs.SinceContact >= 0 {
			gauge(c.raftContact, rs.SinceContact.Seconds(), label)
		}
	}
}
