// Package status serves rlserver's status page: "/" on the metrics port, a
// small page with no external assets, and "/status.json", what it shows.
// The page shows the nodes and whether they answer, each shard's replicas
// and leader, the decisions allowed and denied per second over the last
// minutes, memory against --maxmemory, and the heaviest keys of the last
// minute (RL.TOP).
//
// The figures are read when the page asks, from what INFO and the metrics
// read, but for two things kept by a goroutine of the page's own, once a
// second: the history of the decision counters (the chart), and the answers
// of the other nodes to a status call over the bus (whether they are up).
// The package declares the small interfaces it reads; cmd/rlserver wires it.
package status
