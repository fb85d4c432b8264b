package cluster

import "github.com/rlserver/rlserver/engine"

// decisionSlots bounds the engine ops DecisionCounts tells apart. The
// decision ops are numbered far below it; an op at or above it (none today)
// is counted in slot 0 rather than dropped, so the sums stay the engine's.
const decisionSlots = 64

// DecisionCounts are the decisions a shard's replica has applied, by the
// engine op that asked for them (engine.OpSliding, engine.OpThrottle, ...)
// and by outcome. They count exactly what the engine counts in its
// Stats.Allowed and Stats.Denied, which INFO reports: summed over the ops
// they are those two figures, so metrics broken down by command agree with
// INFO's totals. Like the engine's, they start again from zero when the
// replica's state is replaced by a snapshot (at start, or when a lagging
// follower is sent one).
type DecisionCounts struct {
	Allowed [decisionSlots]int64
	Denied  [decisionSlots]int64
}

// Ops calls fn for every op with a decision counted, in op order.
func (d *DecisionCounts) Ops(fn func(op engine.Op, allowed, denied int64)) {
	for i := range d.Allowed {
		if d.Allowed[i] != 0 || d.Denied[i] != 0 {
			fn(engine.Op(i), d.Allowed[i], d.Denied[i])
		}
	}
}

// Total is the sum over the ops: the engine's Allowed and Denied.
func (d *DecisionCounts) Total() (allowed, denied int64) {
	for i := range d.Allowed {
		allowed += d.Allowed[i]
		denied += d.Denied[i]
	}
	return allowed, denied
}

// count adds the decisions among results, the answers to cmds just
// applied. It mirrors what the engine counts: every decision and
// CL.THROTTLE reply, RL.ALL's limits one by one but not its overall
// answer, and nothing for a command that failed. It runs on the shard's
// applying goroutine once per batch; it costs a comparison or two per
// command and touches no shared cache line.
func (d *DecisionCounts) count(cmds []engine.Command, results []engine.Result) {
	n := min(len(cmds), len(results))
	for i := 0; i < n; i++ {
		r := &results[i]
		switch r.Type {
		case engine.ResDecision:
			if cmds[i].Op != engine.OpAll {
				d.add(cmds[i].Op, r.Decision.Allowed)
			}
		case engine.ResThrottle:
			d.add(cmds[i].Op, !r.Throttle.Limited)
		case engine.ResError:
			if cmds[i].Op == engine.OpAll {
				// A refused group decided none of its limits, and their
				// results were not written: skip them.
				i += r.Members
			}
		}
	}
}

func (d *DecisionCounts) add(op engine.Op, allowed bool) {
	slot := int(op)
	if slot >= decisionSlots {
		slot = 0
	}
	if allowed {
		d.Allowed[slot]++
	} else {
		d.Denied[slot]++
	}
}

// Decisions returns the decisions this node's replica of shard has applied
// (none when it holds no replica).
func (n *RaftShards) Decisions(shard int) DecisionCounts {
	if g := n.groups[shard].Load(); g != nil {
		return g.fsm.decisionCounts()
	}
	return DecisionCounts{}
}

// Decisions returns the decisions shard has applied, as of its latest
// batch.
func (m *MemoryShards) Decisions(shard int) DecisionCounts {
	s := m.shards[shard]
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.decisions
}

// decisionCounts returns the replica's decision counts.
func (f *shardFSM) decisionCounts() DecisionCounts {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.decisions
}
