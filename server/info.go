package server

import (
	"fmt"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// infoSection is one of INFO's sections: its name, and what writes its
// lines; t is the shards' counters added up.
type infoSection struct {
	name  string
	write func(s *Server, b *strings.Builder, t *engine.Stats)
}

// infoSections are INFO's sections in Redis's order; "default" and "all"
// name them all.
var infoSections = []infoSection{
	{"server", (*Server).writeServerInfo},
	{"clients", (*Server).writeClientsInfo},
	{"memory", (*Server).writeMemoryInfo},
	{"persistence", (*Server).writePersistenceInfo},
	{"stats", (*Server).writeStatsInfo},
	{"replication", (*Server).writeReplicationInfo},
	{"cpu", (*Server).writeCPUInfo},
	{"ratelimit", (*Server).writeRateLimitInfo},
	{"policies", (*Server).writePolicyInfo},
	{"shares", (*Server).writeSharesInfo},
	{"federation", (*Server).writeFederationInfo},
	{"reservations", (*Server).writeReservationsInfo},
	{"topkeys", (*Server).writeTopKeys},
	{"scripting", (*Server).writeScriptingInfo},
	{"raft", (*Server).writeRaftInfo},
	{"cluster", (*Server).writeClusterInfo},
	{"keyspace", (*Server).writeKeyspaceInfo},
}

// info is INFO [section ...].
func (c *conn) info(args [][]byte, out []byte) []byte {
	want := map[string]bool{}
	for _, a := range args[1:] {
		want[strings.ToLower(string(a))] = true
	}
	all := len(want) == 0 || want["all"] || want["default"] || want["everything"]
	totals := c.srv.total()
	var b strings.Builder
	for _, section := range infoSections {
		if !all && !want[section.name] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		fmt.Fprintf(&b, "# %s\r\n", strings.ToUpper(section.name[:1])+section.name[1:])
		section.write(c.srv, &b, &totals)
	}
	return resp.AppendBulkString(out, b.String())
}

// infoLine writes one of INFO's "name:value" lines.
func infoLine(b *strings.Builder, name string, v any) { fmt.Fprintf(b, "%s:%v\r\n", name, v) }

// boolInt is 1 for true, 0 for false, as INFO writes flags.
func boolInt(ok bool) int {
	if ok {
		return 1
	}
	return 0
}

func (s *Server) writeServerInfo(b *strings.Builder, _ *engine.Stats) {
	uptime := time.Since(s.started)
	infoLine(b, "redis_version", RedisVersion)
	infoLine(b, "rlserver_version", s.cfg.Version)
	infoLine(b, "redis_mode", s.mode())
	infoLine(b, "os", runtime.GOOS+" "+runtime.GOARCH)
	infoLine(b, "arch_bits", strconv.IntSize)
	infoLine(b, "go_version", runtime.Version())
	infoLine(b, "process_id", os.Getpid())
	infoLine(b, "run_id", s.runID)
	infoLine(b, "tcp_port", s.port())
	infoLine(b, "server_time_usec", s.cfg.Clock.NowMicro())
	infoLine(b, "uptime_in_seconds", int64(uptime.Seconds()))
	infoLine(b, "uptime_in_days", int64(uptime.Hours()/24))
	infoLine(b, "executable", executable())
	infoLine(b, "config_file", s.cfg.ConfigFile)
}

func (s *Server) writeClientsInfo(b *strings.Builder, _ *engine.Stats) {
	infoLine(b, "connected_clients", s.clientCount())
	infoLine(b, "maxclients", s.cfg.MaxClients)
	infoLine(b, "blocked_clients", 0)
	infoLine(b, "tracking_clients", s.trackingTable.clients.Load())
	infoLine(b, "event_loops", s.cfg.EventLoops)
	infoLine(b, "event_loop_clients", s.loops.clients())
}

func (s *Server) writeMemoryInfo(b *strings.Builder, t *engine.Stats) {
	m := readMemoryFigures()
	infoLine(b, "used_memory", m.heapInUse)
	infoLine(b, "used_memory_human", humanBytes(m.heapInUse))
	infoLine(b, "used_memory_rss", m.rss)
	infoLine(b, "used_memory_rss_human", humanBytes(m.rss))
	infoLine(b, "used_memory_dataset", t.Bytes)
	infoLine(b, "used_memory_dataset_human", humanBytes(uint64(t.Bytes)))
	infoLine(b, "mem_fragmentation_ratio", fmt.Sprintf("%.2f", float64(m.rss)/float64(max(m.heapInUse, 1))))
	infoLine(b, "rl_heap_live", m.heapLive)
	infoLine(b, "rl_heap_goal", m.heapGoal)
	infoLine(b, "rl_heap_free", m.heapFree)
	infoLine(b, "rl_heap_released", m.released)
	infoLine(b, "rl_gc_percent", m.gcPercent)
	infoLine(b, "rl_gc_cycles", m.gcCycles)
	// Redis 7 has its scripts' figures here as well as under scripting,
	// and tools read them here. rlserver has no functions: used_memory_scripts
	// (EVAL's and functions') is EVAL's.
	infoLine(b, "used_memory_scripts_eval", t.ScriptBytes)
	infoLine(b, "number_of_cached_scripts", t.Scripts)
	infoLine(b, "number_of_functions", 0)
	infoLine(b, "number_of_libraries", 0)
	infoLine(b, "used_memory_scripts", t.ScriptBytes)
	infoLine(b, "used_memory_scripts_human", humanBytes(uint64(t.ScriptBytes)))
	limit := s.memoryLimit()
	infoLine(b, "maxmemory", limit.Bytes)
	infoLine(b, "maxmemory_human", humanBytes(uint64(limit.Bytes)))
	infoLine(b, "maxmemory_policy", engine.MemoryPolicyNames[limit.Policy])
	infoLine(b, "rl_memory_charged", t.Charged)
	infoLine(b, "mem_allocator", "go")
}

func (s *Server) writePersistenceInfo(b *strings.Builder, t *engine.Stats) {
	infoLine(b, "loading", 0)
	infoLine(b, "async_loading", 0)
	infoLine(b, "rdb_changes_since_last_save", 0)
	// A snapshot (Raft's, a backup's) being written from a capture, as a
	// fork being saved is Redis's.
	infoLine(b, "rdb_bgsave_in_progress", min(t.Captures, 1))
	infoLine(b, "rl_snapshots_in_progress", t.Captures)
	infoLine(b, "rl_snapshot_chunk_copies", t.CaptureCopies)
	infoLine(b, "aof_enabled", 0)
	if s.cfg.Raft != nil {
		infoLine(b, "rl_durability", "raft")
		infoLine(b, "rl_data_dir", s.cfg.DataDir)
	} else {
		infoLine(b, "rl_durability", "none (--in-memory)")
	}
}

// writeScriptingInfo writes the scripts the shard holding the most holds
// (SCRIPT LOAD puts a script in every shard), their bytes over every
// shard, and the scripts this node's replicas ran.
func (s *Server) writeScriptingInfo(b *strings.Builder, t *engine.Stats) {
	infoLine(b, "number_of_cached_scripts", t.Scripts)
	infoLine(b, "used_memory_scripts_eval", t.ScriptBytes)
	infoLine(b, "used_memory_scripts_eval_human", humanBytes(uint64(t.ScriptBytes)))
	infoLine(b, "rl_scripts_run", t.ScriptRuns)
	infoLine(b, "rl_script_errors", t.ScriptErrors)
	infoLine(b, "rl_script_runtime", engine.ScriptRuntime)
}

func (s *Server) writeStatsInfo(b *strings.Builder, t *engine.Stats) {
	infoLine(b, "total_connections_received", s.stats.connections.Load())
	infoLine(b, "total_commands_processed", s.stats.commands.Load())
	infoLine(b, "rejected_connections", s.stats.rejected.Load())
	infoLine(b, "expired_keys", 0)
	infoLine(b, "evicted_keys", t.Evicted)
	infoLine(b, "rl_rejected_oom", t.RejectedOOM)
	keys, items := s.trackingTable.stats()
	infoLine(b, "tracking_total_keys", keys)
	infoLine(b, "tracking_total_items", items)
	infoLine(b, "tracking_total_prefixes", 0)
}

// writeReplicationInfo says master: every node answers every command
// (leading, or forwarding to the leader), so to a client each is a
// master; the raft section says which shards it leads.
func (s *Server) writeReplicationInfo(b *strings.Builder, _ *engine.Stats) {
	infoLine(b, "role", "master")
	infoLine(b, "connected_slaves", 0)
}

func (s *Server) writeCPUInfo(b *strings.Builder, _ *engine.Stats) {
	user, sys := cpuTimes()
	infoLine(b, "used_cpu_sys", fmt.Sprintf("%.6f", sys))
	infoLine(b, "used_cpu_user", fmt.Sprintf("%.6f", user))
}

func (s *Server) writeRateLimitInfo(b *strings.Builder, t *engine.Stats) {
	infoLine(b, "rl_shards", s.shards.Shards())
	infoLine(b, "rl_decisions_allowed", t.Allowed)
	infoLine(b, "rl_decisions_denied", t.Denied)
	infoLine(b, "rl_shadow_denied", t.ShadowDenied)
	infoLine(b, "rl_policies", t.Policies)
	infoLine(b, "rl_keys", t.Keys)
	infoLine(b, "rl_clock_ms", s.cfg.Clock.Now())
}

// writeSharesInfo writes the budget leases' figures (RL.SHARE): keys,
// holders with a grant in force and their committed units, now; grants,
// units returned early and holders lapsed, since the start.
func (s *Server) writeSharesInfo(b *strings.Builder, t *engine.Stats) {
	infoLine(b, "rl_share_keys", t.ShareKeys)
	infoLine(b, "rl_share_holders", t.ShareHolders)
	infoLine(b, "rl_share_committed", t.ShareCommitted)
	infoLine(b, "rl_share_grants", t.ShareGrants)
	infoLine(b, "rl_share_returned", t.ShareReturned)
	infoLine(b, "rl_share_lapsed", t.ShareLapsed)
}

// writeFederationInfo is the region's federation: what
// rlserver_federation_* export, by the same names less the prefix.
func (s *Server) writeFederationInfo(b *strings.Builder, _ *engine.Stats) {
	if s.cfg.Federation == nil {
		infoLine(b, "federation_enabled", 0)
		return
	}
	st := s.cfg.Federation.Stats()
	infoLine(b, "federation_enabled", 1)
	infoLine(b, "federation_region", st.Region)
	infoLine(b, "federation_rounds", st.Ticks)
	infoLine(b, "federation_keys", st.Keys)
	infoLine(b, "federation_lease_requests_sent", st.LeasesSent)
	infoLine(b, "federation_lease_requests_served", st.LeasesServed)
	infoLine(b, "federation_lease_errors", st.LeaseErrors)
	infoLine(b, "federation_grants_recorded", st.Installs)
	infoLine(b, "federation_units_granted", st.UnitsGranted)
	infoLine(b, "federation_floor_blocks", st.FloorBlocks)
	infoLine(b, "federation_seals", st.Seals)
	infoLine(b, "federation_counts_sent", st.CountsSent)
	infoLine(b, "federation_counts_received", st.CountsReceived)
	infoLine(b, "federation_auth_failures", st.AuthFailures)
	infoLine(b, "federation_relaxed_overshoot_bound", st.OvershootBound)
	infoLine(b, "federation_relaxed_overshoot_bound_ratio", strconv.FormatFloat(st.OvershootBoundRatio, 'f', 4, 64))
	for _, l := range st.Links {
		up := 0
		if l.Up {
			up = 1
		}
		infoLine(b, "federation_link_"+l.Region, fmt.Sprintf("up=%d,rtt_ms=%d,calls=%d,failures=%d", up, l.RTTMillis, l.Calls, l.Fail))
	}
}

// writeReservationsInfo writes the reservations' figures (RL.RESERVE):
// those pending and the units they hold, now; those made, settled and
// expired (settled at their estimate), since the start.
func (s *Server) writeReservationsInfo(b *strings.Builder, t *engine.Stats) {
	infoLine(b, "rl_reservations_pending", t.ReservationsPending)
	infoLine(b, "rl_reserved", t.Reserved)
	infoLine(b, "rl_reservations_made", t.ReservationsMade)
	infoLine(b, "rl_reservations_settled", t.ReservationsSettled)
	infoLine(b, "rl_reservations_expired", t.ReservationsExpired)
}

func (s *Server) writeClusterInfo(b *strings.Builder, _ *engine.Stats) {
	if s.cfg.Cluster == nil {
		infoLine(b, "cluster_enabled", 0)
		return
	}
	infoLine(b, "cluster_enabled", 1)
	if s.cfg.Raft != nil {
		writeFitnessInfo(b, s.cfg.Raft.Fitness())
	}
	if s.cfg.ClusterChanges == nil {
		return
	}
	// The rebalance, as CLUSTER REBALANCE STATUS shows it, less its words.
	st := s.cfg.ClusterChanges.RebalanceStatus()
	infoLine(b, "rebalance_state", st.State)
	infoLine(b, "rebalance_waiting_for", strings.Join(st.WaitingFor, ","))
	infoLine(b, "rebalance_began_ms", st.Run.Began)
	infoLine(b, "rebalance_steps", st.Run.Steps)
	infoLine(b, "rebalance_ended_ms", st.Run.Ended)
	infoLine(b, "rebalance_outcome", st.Run.Outcome)
	infoLine(b, "rebalance_planned_steps", len(st.Plan))
}

// writeFitnessInfo writes what the node's checks found: its clock against
// the other nodes' (the median of their offsets, how many were compared
// and how many are further than the bound), and whether it may lead, and
// why not.
func writeFitnessInfo(b *strings.Builder, f cluster.Fitness) {
	c := f.Clock
	infoLine(b, "clock_max_offset_ms", c.MaxOffset.Milliseconds())
	infoLine(b, "clock_offset_ms", c.Offset.Milliseconds())
	infoLine(b, "clock_peers", c.Peers)
	infoLine(b, "clock_peers_far", c.Far)
	infoLine(b, "clock_ok", boolInt(c.Off == nil))
	infoLine(b, "may_lead", boolInt(f.MustNotLead == nil))
	why := ""
	if f.MustNotLead != nil {
		why = f.MustNotLead.Error()
	}
	infoLine(b, "may_lead_reason", why)
}

func (s *Server) writeKeyspaceInfo(b *strings.Builder, t *engine.Stats) {
	if t.Keys > 0 {
		fmt.Fprintf(b, "db0:keys=%d,expires=%d,avg_ttl=0\r\n", t.Keys, t.Keys-t.Persistent)
	}
}

// writeRaftInfo writes one line per shard replica: its Raft state, term,
// commit and applied index, last contact with its leader, the leader, and
// what its log has gained since its last snapshot against that snapshot's
// size, which pace the next.
func (s *Server) writeRaftInfo(b *strings.Builder, _ *engine.Stats) {
	if s.cfg.Raft == nil {
		infoLine(b, "raft_enabled", 0)
		return
	}
	infoLine(b, "raft_enabled", 1)
	leading := 0
	states := s.cfg.Raft.RaftStates()
	for _, st := range states {
		if st.State == "Leader" {
			leading++
		}
	}
	infoLine(b, "raft_shards_held", len(states))
	infoLine(b, "raft_shards_leading", leading)
	f := s.cfg.Raft.Fitness()
	infoLine(b, "raft_log_slow_write_ms", f.SlowLogWrite.Milliseconds())
	infoLine(b, "raft_log_last_write_ms", f.LastLogWrite.Milliseconds())
	infoLine(b, "raft_logs_failing", len(f.LogFailing))
	infoLine(b, "raft_logs_slow", len(f.LogSlow))
	if s.cfg.Cluster != nil {
		registered := 0
		if s.cfg.Raft.Registered() {
			registered = 1
		}
		infoLine(b, "raft_registered", registered)
	}
	for _, st := range states {
		leader := st.Leader
		if leader == "" {
			leader = "-"
		}
		infoLine(b, fmt.Sprintf("shard_%d", st.Shard), fmt.Sprintf("state=%s,term=%d,commit_index=%d,applied_index=%d,last_contact=%s,leader=%s,log_bytes=%d,snapshot_bytes=%d",
			strings.ToLower(st.State), st.Term, st.CommitIndex, st.AppliedIndex, st.LastContact, leader, st.LogBytes, st.SnapshotBytes))
	}
}
