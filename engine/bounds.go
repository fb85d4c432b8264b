package engine

// Bounds on every parameter the network controls. They keep all arithmetic
// exact (see wide.go) and every state small; commands rejects anything outside
// them before it reaches a shard.
const (
	// MaxCount bounds limits, capacities, bursts, refill amounts and costs.
	MaxCount = 1_000_000_000_000_000 // 10^15
	// MaxDuration bounds windows and periods, in milliseconds (about 31.7
	// years), and the time a bucket takes to drain from full to empty.
	MaxDuration = 1_000_000_000_000 // 10^12 ms
	// MaxLogLimit bounds the limit of a sliding log, whose memory grows with
	// it: each admitted millisecond costs one 16-byte entry, so a key holds at
	// most MaxLogLimit entries (160 KB).
	MaxLogLimit = 10_000
)
