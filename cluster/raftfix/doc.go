// Package raftfix starts hashicorp/raft groups with every correction
// rlserver makes to hashicorp/raft's behaviour, behind one constructor,
// New, so that no group runs without one. Each correction states in its
// file the behaviour it corrects, where it was met, and the rule it
// restores, and has a canary test that builds the behaviour with
// hashicorp/raft alone and fails on the day hashicorp/raft no longer shows
// it: the correction may then go.
//
//   - verifiedcommit.go: a follower takes as committed only what an append
//     verified (the Raft paper's rule), and heartbeats reach Raft on its
//     main goroutine, never the transport's fast path.
//   - heldconfig.go: a configuration entry that takes a server's vote
//     reaches that server only once committed.
//   - acknowledged.go: what each server acknowledged, so that a leader
//     changes the voters only once every voter it keeps holds the
//     configuration it changes (Raft.VotersHold).
//   - committedconfig.go: which configuration is committed, and at which
//     index (Raft.Configuration), which hashicorp/raft does not say.
//   - configchange.go: a promotion that stalls until another entry is
//     appended is nudged along (Raft.AwaitConfigChange).
//   - transport.go: replication without the pipeline, whose sender can wait
//     for good.
//   - staleconn.go: a pooled connection the peer closed while it sat idle
//     is replaced before a request is written into it.
//   - abstain.go: a voter that must not lead (Config.MayLead: its clock is
//     off, its log cannot be written) stays out of elections and refuses
//     to take a leadership over.
//   - truncatedtail.go: a follower whose store failed after truncating its
//     log can still catch up once the store works again.
//   - raft.go: a damaged log is an error with its cause, not a panic
//     (New, ReadConfiguration; readLast for the last entry, in New only),
//     and closing a group waits for hashicorp/raft's goroutines for a
//     bounded time (Raft.Close).
//
// Each correction's comment names its upstream issue (or says none was
// found, and which rule or code path it restores) and its canary. The
// canaries, and only they, are named TestCanary...: go test -run Canary
// ./cluster/raftfix/ runs them (about ten seconds), and a canary that fails
// names the correction that may then go.
//
// hashicorp/raft is pinned in go.mod (v1.7.3): a new version is taken
// once the canaries have been read against it.
package raftfix
