package metrics

import "github.com/prometheus/client_golang/prometheus"

// fitnessDescs are the series of what this node's checks found of its
// clock and of its Raft logs' disk (Sources.Fitness), each the number INFO
// cluster or INFO raft shows, so that an alert can say which field to read.
type fitnessDescs struct {
	clockOffset, clockMax, clockOK, mayLead *prometheus.Desc
	logsFailing, logsSlow, logLastWrite     *prometheus.Desc
}

func newFitnessDescs() fitnessDescs {
	d := prometheus.NewDesc
	return fitnessDescs{
		clockOffset: d("rlserver_clock_offset_seconds",
			"This node's clock minus the median of the other nodes' clocks, as the latest health polls measured it (INFO clock_offset_ms).", nil, nil),
		clockMax: d("rlserver_clock_max_offset_seconds",
			"--max-clock-offset: how far this node's clock may be from the others' before it does not lead (INFO clock_max_offset_ms).", nil, nil),
		clockOK: d("rlserver_clock_ok",
			"1 when this node trusts its clock: within --max-clock-offset of a majority of the nodes (INFO clock_ok); 0 when it does not, and leads nothing.", nil, nil),
		mayLead: d("rlserver_may_lead",
			"1 when this node may lead shards (INFO may_lead); 0 when its clock is off or a log cannot be written, INFO may_lead_reason says which.", nil, nil),
		logsFailing: d("rlserver_raft_logs_failing",
			"This node's Raft logs (the shards' and the catalogue's) whose latest write failed (INFO raft_logs_failing); above 0, the node leads nothing.", nil, nil),
		logsSlow: d("rlserver_raft_logs_slow",
			"This node's Raft logs whose latest append took longer than --slow-log-write (INFO raft_logs_slow); their shards' leadership is handed away.", nil, nil),
		logLastWrite: d("rlserver_raft_log_last_write_seconds",
			"The slowest latest append, fsync included, among this node's Raft logs (INFO raft_log_last_write_ms).", nil, nil),
	}
}

// all lists the descriptors, for Describe.
func (f fitnessDescs) all() []*prometheus.Desc {
	return []*prometheus.Desc{f.clockOffset, f.clockMax, f.clockOK, f.mayLead, f.logsFailing, f.logsSlow, f.logLastWrite}
}

// collectFitness exports what this node's checks found of its clock and its
// logs' disk, when the sources give it (a node with Raft).
func (c *collector) collectFitness(gauge func(d *prometheus.Desc, v float64, labels ...string)) {
	if c.src.Fitness == nil {
		return
	}
	f := c.src.Fitness.Fitness()
	gauge(c.fitness.clockOffset, f.Clock.Offset.Seconds())
	gauge(c.fitness.clockMax, f.Clock.MaxOffset.Seconds())
	gauge(c.fitness.clockOK, boolGauge(f.Clock.Off == nil))
	gauge(c.fitness.mayLead, boolGauge(f.MustNotLead == nil))
	gauge(c.fitness.logsFailing, float64(len(f.LogFailing)))
	gauge(c.fitness.logsSlow, float64(len(f.LogSlow)))
	gauge(c.fitness.logLastWrite, f.LastLogWrite.Seconds())
}

// boolGauge is a yes or no as a gauge's 1 or 0.
func boolGauge(yes bool) float64 {
	if yes {
		return 1
	}
	return 0
}
