package engine

import "github.com/rlserver/rlserver/internal/resp"

// Shard is the state of one shard: its keyspace and its clock. A Shard is not
// safe for concurrent use; it belongs to one goroutine (the shard's runner or
// its Raft FSM), which is what makes every command on it atomic.
type Shard struct {
	keys      keyspace
	now       int64 // the latest time applied; decisions never go back in time
	stat      Stats // the counters kept as they happen (see Stats)
	decisions [opCount]DecisionCount
	top       *topKeys           // the heaviest keys of the last minute (topkeys.go); nil until a decision
	policies  map[string]*policy // RL.POLICY's named limits
	res       reservedCharges    // RL.RESERVE's (reservations.go)
	scripts   scriptCache        // the scripts EVALSHA finds
	runner    ScriptRunner       // runs scripts; nil: refused

	memLimit    int64 // bytes the keys may be charged, 0: no limit (see memory.go)
	memPolicy   MemoryPolicy
	evictCursor int // next record an eviction examines

	// The verdicts of the decision being applied, and of an RL.ALL's
	// limits: scratch, kept here because the algorithms are reached through
	// an interface, which a verdict on the stack would escape through to
	// the heap, once per decision.
	verdict  verdict
	verdicts [MaxAllLimits]verdict
	// parts and pairs are scratch for unpacking a script's strings and
	// HSET's pairs; a script's commands may use pairs while it runs.
	parts, pairs [][]byte
	call         ScriptCall   // the script running
	scriptReply  []resp.Value // scratch for a script's reply, copied into its Result
	// Scratch for filling a share key's budget (Shard.grant).
	shareWants, shareTargets, shareExtra []int64
	shareKeys                            []uint64
	// The batch being applied's time in microseconds, and the scripts it
	// has run: each script's TIME (scriptMicros). Not state: a function
	// of the batch alone.
	batchMicros  int64
	batchScripts int64
}

// Stats are a shard's counters, for INFO and metrics.
type Stats struct {
	Keys int // keys held, including expired ones not yet reclaimed
	// Persistent counts the keys that never expire: strings without one.
	Persistent int
	Bytes      int64 // estimated memory held by keys and their state
	// Allowed and Denied are the decisions granted and refused: the sums
	// of Decisions.
	Allowed, Denied int64
	// Decisions are the decisions by the op that asked for them:
	// Decisions[OpSliding] are RL.SLIDING's. RL.ALL's limits count under
	// their own ops and RL.CHECK's under OpCheck; CL.THROTTLE counts
	// allowed what it did not limit.
	Decisions [opCount]DecisionCount
	// ShadowDenied counts the checks of shadow policies that were allowed
	// only because the policy is in shadow mode.
	ShadowDenied int64
	Policies     int   // policies defined
	Now          int64 // the shard's clock: the latest time applied
	// Evicted counts keys evicted to make room; RejectedOOM, commands
	// refused with -OOM.
	Evicted, RejectedOOM int64
	// Charged is the memory the limit counts; MemoryLimit is the limit (0:
	// none) and MemoryPolicy what happens at it.
	Charged, MemoryLimit int64
	MemoryPolicy         MemoryPolicy
	// Scripts are the scripts cached, ScriptBytes what they are charged;
	// ScriptRuns counts the scripts run and ScriptErrors those that ended
	// in an error.
	Scripts                  int
	ScriptBytes              int64
	ScriptRuns, ScriptErrors int64
	// ShareKeys are the RL.SHARE keys held, ShareHolders their holders
	// with a grant in force, and ShareCommitted the sum of those
	// holders' committed rates (each in units per its key's window).
	ShareKeys, ShareHolders int64
	ShareCommitted          int64
	// ShareGrants counts RL.SHARE's grants (of any rate, 0 included);
	// ShareReturned, the committed units freed before they expired
	// (RL.UNSHARE, ACK); ShareLapsed, the holders dropped because every
	// grant of theirs expired.
	ShareGrants, ShareReturned, ShareLapsed int64
	// Captures are the captures in progress (capture.go); CaptureCopies
	// counts the chunks of records copied for them (ChunkBytes each) and
	// what their records hold outside.
	Captures      int
	CaptureCopies int64
	// ReservationsPending are RL.RESERVE's reservations neither settled
	// nor expired, and Reserved the units their estimates hold.
	ReservationsPending, Reserved int64
	// ReservationsMade counts the reservations made; ReservationsSettled,
	// those settled by RL.SETTLE; ReservationsExpired, those settled at
	// their estimate when their TTL ended.
	ReservationsMade, ReservationsSettled, ReservationsExpired int64
}

// DecisionCount is how many decisions allowed and denied.
type DecisionCount struct{ Allowed, Denied int64 }

// sweepPerCommand is how many slots the expiry sweep examines per command
// applied, so reclaiming keeps pace with the traffic that creates keys.
const sweepPerCommand = 2

// prefetchBatch is the fewest commands whose keys Apply reads ahead
// together (keyspace.prefetch): with a handful, the misses do not overlap
// enough to pay for hashing each key twice.
const prefetchBatch = 8

// prefetchWindow is how many commands' keys are read ahead at once. A
// Raft entry's batch of hundreds read ahead whole loses its first records
// (and their pages' TLB entries, at a million keys) before it applies them;
// read ahead in windows, a large batch over a large keyspace is applied
// faster, a small one no slower; windows of 32 did best of 16, 32 and 64
// (BenchmarkSlidingBatch: see
// docs/performance.md#ninth-round-a-raft-entrys-keys-read-ahead-in-windows-2026-12-05).
const prefetchWindow = 32

// NewShard returns an empty shard.
func NewShard() *Shard {
	return &Shard{keys: newKeyspace(), policies: make(map[string]*policy), scripts: newScriptCache(), res: newReservedCharges()}
}

// Stats returns the shard's counters.
func (s *Shard) Stats() Stats {
	st := s.stat
	st.Decisions = s.decisions
	for _, d := range s.decisions {
		st.Allowed += d.Allowed
		st.Denied += d.Denied
	}
	st.Keys = s.keys.len()
	st.Persistent = s.keys.persistent
	st.Bytes = s.keys.bytes()
	st.Now = s.now
	st.Policies = len(s.policies)
	st.Charged, st.MemoryLimit, st.MemoryPolicy = s.charged(), s.memLimit, s.memPolicy
	st.Scripts, st.ScriptBytes = len(s.scripts.byName), s.scripts.bytes
	st.ShareKeys = int64(s.keys.nShares)
	for _, set := range s.keys.shareSets() {
		n, c := liveShares(set.holders, s.now)
		st.ShareHolders, st.ShareCommitted = st.ShareHolders+n, satAdd(st.ShareCommitted, c)
	}
	sc := s.keys.shareStat
	st.ShareGrants, st.ShareReturned, st.ShareLapsed = sc.grants, sc.returned, sc.lapsed
	st.Captures, st.CaptureCopies = len(s.keys.records.cow.live), s.keys.records.cow.copies
	for _, r := range s.res.byID {
		if r.pending(s.now) {
			st.ReservationsPending, st.Reserved = st.ReservationsPending+1, satAdd(st.Reserved, r.estimate)
		}
	}
	st.ReservationsMade, st.ReservationsSettled, st.ReservationsExpired = s.res.made, s.res.settled, s.res.expired
	return st
}

// Apply executes cmds in order at time now (Unix ms) and writes one result
// per command into out, which must be at least as long. The time never
// moves backwards: a now earlier than one already applied is raised to it
// (only OpSetClock lowers it). Apply is deterministic: the same commands
// at the same times leave the same state and give the same results.
func (s *Shard) Apply(now int64, cmds []Command, out []Result) { s.ApplyMicros(now*1000, cmds, out) }

// ApplyMicros is Apply at a time in Unix microseconds: the commands are
// applied at its millisecond, and the scripts among them see the
// microseconds in TIME, the k-th script of the batch k-1 of them later
// (within the millisecond), so that successive scripts see time move as
// they do in Redis.
func (s *Shard) ApplyMicros(us int64, cmds []Command, out []Result) {
	now := floorDiv(us, 1000)
	if now < s.now {
		now, us = s.now, s.now*1000
	}
	s.now = now
	s.batchMicros, s.batchScripts = us, 0
	s.applyCommands(now, cmds, out, true)
	s.keys.reclaim(now, sweepPerCommand*len(cmds))
	s.res.process(now)
}

// scriptMicros is the time, in Unix microseconds, of the next script of
// the batch, applied at now (ms): the batch's microseconds (those of now,
// when OpSetClock moved the clock), one more for each script before it,
// never past now's last microsecond.
func (s *Shard) scriptMicros(now int64) int64 {
	base := s.batchMicros
	if floorDiv(base, 1000) != now {
		base = now * 1000
	}
	us := min(base+s.batchScripts, now*1000+999)
	s.batchScripts++
	return us
}

// floorDiv is a / b rounded down.
func floorDiv(a, b int64) int64 {
	q := a / b
	if a%b != 0 && (a < 0) != (b < 0) {
		q--
	}
	return q
}

// applyCommands is Apply without the clock's update and the expiry sweep:
// what a script's commands need too. With readAhead, the keys of each
// window of prefetchWindow commands are read ahead before it is applied
// (keyspace.prefetch), a last window shorter than prefetchBatch excepted.
func (s *Shard) applyCommands(now int64, cmds []Command, out []Result, readAhead bool) {
	ahead := 0 // the commands before it are in windows already read ahead
	for i := 0; i < len(cmds); i++ {
		if readAhead && i >= ahead {
			ahead = min(i+prefetchWindow, len(cmds))
			if ahead-i >= prefetchBatch {
				s.keys.prefetch(cmds[i:ahead])
			}
		}
		c, r := &cmds[i], &out[i]
		*r = Result{}
		if c.Op.decides() {
			s.decide(now, c, r)
			continue
		}
		switch c.Op {
		case OpAll:
			// The group is the head and the limits that follow it; a
			// truncated one (never built by commands) takes what is there.
			end := i + 1 + int(min(max(c.Args[0], 0), int64(len(cmds)-i-1)))
			s.all(now, cmds[i:end], out[i:end])
			i = end - 1
		case OpRelease:
			s.release(now, c, r)
		case OpShare:
			s.share(now, c, r)
		case OpUnshare:
			s.unshare(now, c, r)
		case OpGlobalScan:
			s.globalScan(now, c, r)
		case OpGlobalLease:
			s.globalLease(now, c, r)
		case OpGlobalInstall:
			s.globalInstall(now, c, r)
		case OpGlobalCounts:
			s.globalCounts(now, c, r)
		case OpReserve:
			s.reserve(now, c, r)
		case OpSettle:
			s.settle(now, c, r)
		case OpGet, OpSet, OpIncrBy, OpExpire:
			s.stringCommand(now, c, r)
		case OpHGet, OpHSet, OpHMGet, OpHIncrBy, OpHIncrByFloat, OpHDel, OpHExists, OpHGetAll, OpHLen:
			s.hashCommand(now, c, r)
		case OpPush, OpPop, OpLIndex, OpLRange, OpLTrim, OpLLen:
			s.listCommand(now, c, r)
		case OpRename:
			s.rename(now, c, r)
		case OpWatch:
			i += s.watch(now, cmds[i:], out[i:])
		case OpEval:
			s.eval(now, c, r)
		case OpScriptLoad, OpScriptExists, OpScriptFlush:
			s.scriptCommand(now, c, r)
		case OpTop:
			// Read through Inspect, or here through the log (another
			// node's replica).
			*r = s.topResult(c)
		case OpPolicySet, OpPolicyDel, OpPolicyList:
			// RL.POLICY reads go through Inspect; OpPolicyList is here
			// for a shard that is read through its log (another node's).
			s.policyCommand(c, r)
		case OpMemoryLimit:
			s.setMemoryLimit(c, r)
		case OpSetClock:
			now = c.Args[0]
			s.now = now
			r.Type = ResOK
		default:
			s.applyKeyspaceOp(now, c, r)
		}
	}
}

// lookup returns the record of key while it is live, or -1. An expired
// record found on the way is reclaimed.
func (s *Shard) lookup(key []byte, now int64) int32 {
	i := s.keys.find(key)
	if i >= 0 && s.keys.expiresAt(i) <= now {
		s.keys.expire(i)
		return -1
	}
	return i
}
