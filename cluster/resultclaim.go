package cluster

import (
	"sync"

	"github.com/rlserver/rlserver/engine"
)

// resultClaims lets a leader's proposer say which entries it waits for, so
// that the state machine writes an entry's results into the proposer's own
// buffer and applies every other entry (a follower's, a sweep nobody
// registered, an entry replayed at start) into one scratch buffer that it
// reuses. Until it did, every replica allocated a fresh results slice for
// every entry, which only the leader ever read: garbage the collector had
// to scan, and a share of the CPU (docs/performance.md, "Tenth round").
//
// An entry is known by its data: hashicorp/raft hands the state machine the
// very Log its Apply was given (the future's) when the node that proposed
// the entry applies it with the future still waiting, and a copy read from
// the log store otherwise. So the first byte's address names the entry
// while its proposer holds the data; a claim withdrawn is never filled
// afterwards, even when the same Log is applied later (a leader that lost
// its leadership while the entry was in flight, and applies it as a
// follower).
type resultClaims struct {
	mu     sync.Mutex
	byData map[*byte]*resultClaim
}

// resultClaim is one entry's claim: the buffer its results go to.
type resultClaim struct {
	mu        sync.Mutex
	results   []engine.Result
	filled    bool // the state machine wrote the entry's results
	withdrawn bool // the proposer no longer waits: write nothing
}

// register claims the results of the entry whose data is data, to be
// written into results (one per command of the entry).
func (c *resultClaims) register(data []byte, results []engine.Result) *resultClaim {
	rc := &resultClaim{results: results}
	c.mu.Lock()
	if c.byData == nil {
		c.byData = make(map[*byte]*resultClaim)
	}
	c.byData[&data[0]] = rc
	c.mu.Unlock()
	return rc
}

// withdraw ends the claim on data's entry. It returns the claim's buffer,
// and whether the entry's results were written into it; from then on the
// state machine writes nothing there, and the claim holds the buffer no
// more (hashicorp/raft's log cache keeps each recent entry's response, the
// claim, for a while).
func (c *resultClaims) withdraw(data []byte, rc *resultClaim) (results []engine.Result, filled bool) {
	c.mu.Lock()
	delete(c.byData, &data[0])
	c.mu.Unlock()
	rc.mu.Lock()
	defer rc.mu.Unlock()
	rc.withdrawn = true
	results, rc.results = rc.results, nil
	return results, rc.filled
}

// fill applies an entry of n commands with apply, into the claim on data's
// buffer if the entry has one, and returns that claim (nil when it has none,
// and the results went to scratch, which fill grows as needed and leaves
// cleared). The claim's lock is held while apply runs, so that a proposer
// that withdraws meanwhile waits for the results rather than reusing the
// buffer under the writer.
func (c *resultClaims) fill(data []byte, n int, scratch *[]engine.Result, apply func([]engine.Result)) *resultClaim {
	var rc *resultClaim
	if len(data) > 0 {
		c.mu.Lock()
		rc = c.byData[&data[0]]
		c.mu.Unlock()
	}
	if rc != nil {
		rc.mu.Lock()
		defer rc.mu.Unlock()
		if !rc.withdrawn && len(rc.results) == n {
			apply(rc.results)
			rc.filled = true
			return rc
		}
	}
	if cap(*scratch) < n {
		*scratch = make([]engine.Result, n)
	}
	out := (*scratch)[:n]
	apply(out)
	clear(out) // keep no reply's memory alive until the next entry
	return nil
}
