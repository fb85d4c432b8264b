package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// infoSections are INFO's sections in Redis's order; "default" and "all"
// name them all.
var infoSections = []string{"server", "clients", "memory", "persistence", "stats", "replication", "cpu", "ratelimit", "policies", "topkeys", "scripting", "raft", "cluster", "keyspace"}

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
		if !all && !want[section] {
			continue
		}
		if b.Len() > 0 {
			b.WriteString("\r\n")
		}
		fmt.Fprintf(&b, "# %s\r\n", strings.ToUpper(section[:1])+section[1:])
		c.srv.writeInfo(&b, section, &totals)
	}
	return resp.AppendBulkString(out, b.String())
}

// writeInfo writes one INFO section's "name:value" lines; t is the shards'
// counters added up.
func (s *Server) writeInfo(b *strings.Builder, section string, t *engine.Stats) {
	line := func(name string, v any) { fmt.Fprintf(b, "%s:%v\r\n", name, v) }
	switch section {
	case "server":
		uptime := time.Since(s.started)
		line("redis_version", RedisVersion)
		line("rlserver_version", s.cfg.Version)
		line("redis_mode", s.mode())
		line("os", runtime.GOOS+" "+runtime.GOARCH)
		line("arch_bits", strconv.IntSize)
		line("go_version", runtime.Version())
		line("process_id", os.Getpid())
		line("run_id", s.runID)
		line("tcp_port", s.port())
		line("server_time_usec", s.cfg.Clock.Now()*1000)
		line("uptime_in_seconds", int64(uptime.Seconds()))
		line("uptime_in_days", int64(uptime.Hours()/24))
		line("executable", executable())
		line("config_file", s.cfg.ConfigFile)
	case "clients":
		line("connected_clients", s.clientCount())
		line("maxclients", s.cfg.MaxClients)
		line("blocked_clients", 0)
		line("tracking_clients", s.trackingTable.clients.Load())
		line("event_loops", s.cfg.EventLoops)
		line("event_loop_clients", s.loops.clients())
	case "memory":
		m := readMemoryFigures()
		line("used_memory", m.heapInUse)
		line("used_memory_human", humanBytes(m.heapInUse))
		line("used_memory_rss", m.rss)
		line("used_memory_rss_human", humanBytes(m.rss))
		line("used_memory_dataset", t.Bytes)
		line("used_memory_dataset_human", humanBytes(uint64(t.Bytes)))
		line("mem_fragmentation_ratio", fmt.Sprintf("%.2f", float64(m.rss)/float64(max(m.heapInUse, 1))))
		line("rl_heap_live", m.heapLive)
		line("rl_heap_goal", m.heapGoal)
		line("rl_heap_free", m.heapFree)
		line("rl_heap_released", m.released)
		line("rl_gc_percent", m.gcPercent)
		line("rl_gc_cycles", m.gcCycles)
		limit := s.memoryLimit()
		line("maxmemory", limit.Bytes)
		line("maxmemory_human", humanBytes(uint64(limit.Bytes)))
		line("maxmemory_policy", engine.MemoryPolicyNames[limit.Policy])
		line("rl_memory_charged", t.Charged)
		line("mem_allocator", "go")
	case "persistence":
		line("loading", 0)
		line("async_loading", 0)
		line("rdb_changes_since_last_save", 0)
		line("rdb_bgsave_in_progress", 0)
		line("aof_enabled", 0)
		if s.cfg.Raft != nil {
			line("rl_durability", "raft")
			line("rl_data_dir", s.cfg.DataDir)
		} else {
			line("rl_durability", "none (--in-memory)")
		}
	case "scripting":
		// The scripts the shard holding the most holds (SCRIPT LOAD puts a
		// script in every shard), their bytes over every shard, and the
		// scripts this node's replicas ran.
		line("number_of_cached_scripts", t.Scripts)
		line("used_memory_scripts_eval", t.ScriptBytes)
		line("used_memory_scripts_eval_human", humanBytes(uint64(t.ScriptBytes)))
		line("rl_scripts_run", t.ScriptRuns)
		line("rl_script_errors", t.ScriptErrors)
		line("rl_script_runtime", engine.ScriptRuntime)
	case "stats":
		line("total_connections_received", s.stats.connections.Load())
		line("total_commands_processed", s.stats.commands.Load())
		line("rejected_connections", s.stats.rejected.Load())
		line("expired_keys", 0)
		line("evicted_keys", t.Evicted)
		line("rl_rejected_oom", t.RejectedOOM)
		keys, items := s.trackingTable.stats()
		line("tracking_total_keys", keys)
		line("tracking_total_items", items)
		line("tracking_total_prefixes", 0)
	case "replication":
		// Every node answers every command (leading, or forwarding to the
		// leader), so to a client each is a master; the raft section says
		// which shards it leads.
		line("role", "master")
		line("connected_slaves", 0)
	case "raft":
		s.writeRaftInfo(line)
	case "cpu":
		user, sys := cpuTimes()
		line("used_cpu_sys", fmt.Sprintf("%.6f", sys))
		line("used_cpu_user", fmt.Sprintf("%.6f", user))
	case "ratelimit":
		line("rl_shards", s.shards.Shards())
		line("rl_decisions_allowed", t.Allowed)
		line("rl_decisions_denied", t.Denied)
		line("rl_shadow_denied", t.ShadowDenied)
		line("rl_policies", t.Policies)
		line("rl_keys", t.Keys)
		line("rl_clock_ms", s.cfg.Clock.Now())
	case "topkeys":
		s.writeTopKeys(line)
	case "policies":
		s.writePolicyInfo(b)
	case "cluster":
		if s.cfg.Cluster != nil {
			line("cluster_enabled", 1)
		} else {
			line("cluster_enabled", 0)
		}
	case "keyspace":
		if t.Keys > 0 {
			fmt.Fprintf(b, "db0:keys=%d,expires=%d,avg_ttl=0\r\n", t.Keys, t.Keys-t.Persistent)
		}
	}
}

// time is TIME: the clock decisions use, as [seconds, microseconds].
func (c *conn) time(out []byte) []byte {
	ms := c.srv.cfg.Clock.Now()
	out = resp.AppendArray(out, 2)
	out = resp.AppendBulkInt(out, ms/1000)
	return resp.AppendBulkInt(out, ms%1000*1000)
}

// configParams are the parameters CONFIG GET knows, with their values.
func (s *Server) configParams() [][2]string {
	l, memory := s.cfg.Limits, s.memoryLimit()
	yesNo := map[bool]string{true: "yes", false: "no"}
	return [][2]string{
		{"aclfile", s.cfg.Users.File()},
		{"appendonly", "no"},
		{"cluster-enabled", yesNo[s.cfg.Cluster != nil]},
		{"databases", "1"},
		{"maxclients", strconv.Itoa(s.cfg.MaxClients)},
		{"maxmemory", strconv.FormatInt(memory.Bytes, 10)},
		{"maxmemory-policy", engine.MemoryPolicyNames[memory.Policy]},
		{"port", s.port()},
		{"protected-mode", yesNo[s.cfg.ProtectedMode]},
		{"proto-max-bulk-len", strconv.FormatInt(l.MaxBulkLen, 10)},
		{"save", ""},
		{"timeout", strconv.FormatInt(int64(s.cfg.IdleTimeout/time.Second), 10)},
		{"tls-port", s.tlsPort()},
	}
}

// configGet is CONFIG GET pattern...: the parameters that match.
func (c *conn) configGet(_ *commands.Spec, args [][]byte, out []byte) []byte {
	var pairs [][2]string
	for _, p := range c.srv.configParams() {
		for _, pattern := range args[2:] {
			if commands.Match(pattern, []byte(p[0]), true) {
				pairs = append(pairs, p)
				break
			}
		}
	}
	out = resp.AppendMap(out, len(pairs), c.resp3.Load())
	for _, p := range pairs {
		out = resp.AppendBulkString(out, p[0])
		out = resp.AppendBulkString(out, p[1])
	}
	return out
}

// configSet is CONFIG SET parameter value, for maxmemory and
// maxmemory-policy: everything else is set at start-up.
func (c *conn) configSet(_ *commands.Spec, args [][]byte, out []byte) []byte {
	if len(args) != 4 {
		return appendError(out, errors.New("ERR CONFIG SET takes one parameter and its value in rlserver"))
	}
	switch param := strings.ToLower(string(args[2])); param {
	case "maxmemory", "maxmemory-policy":
		if err := c.setMemoryLimit(param, string(args[3])); err != nil {
			return appendError(out, err)
		}
		return resp.AppendOK(out)
	}
	return appendError(out, fmt.Errorf("ERR Unsupported CONFIG parameter: %s (rlserver is configured at start-up, except maxmemory and maxmemory-policy)", args[2]))
}

// configResetStat is CONFIG RESETSTAT: the counters INFO's stats report
// start again from zero.
func (c *conn) configResetStat(_ *commands.Spec, _ [][]byte, out []byte) []byte {
	c.srv.stats.commands.Store(0)
	c.srv.stats.connections.Store(0)
	c.srv.stats.rejected.Store(0)
	return resp.AppendOK(out)
}

// mode is "cluster" for a cluster node, "standalone" otherwise.
func (s *Server) mode() string {
	if s.cfg.Cluster != nil {
		return "cluster"
	}
	return "standalone"
}

// writeRaftInfo writes one line per shard replica: its Raft state, term,
// commit and applied index, last contact with its leader, and the leader.
func (s *Server) writeRaftInfo(line func(string, any)) {
	if s.cfg.Raft == nil {
		line("raft_enabled", 0)
		return
	}
	line("raft_enabled", 1)
	leading := 0
	states := s.cfg.Raft.RaftStates()
	for _, st := range states {
		if st.State == "Leader" {
			leading++
		}
	}
	line("raft_shards_held", len(states))
	line("raft_shards_leading", leading)
	if s.cfg.Cluster != nil {
		registered := 0
		if s.cfg.Raft.Registered() {
			registered = 1
		}
		line("raft_registered", registered)
	}
	for _, st := range states {
		leader := st.Leader
		if leader == "" {
			leader = "-"
		}
		line(fmt.Sprintf("shard_%d", st.Shard), fmt.Sprintf("state=%s,term=%d,commit_index=%d,applied_index=%d,last_contact=%s,leader=%s",
			strings.ToLower(st.State), st.Term, st.CommitIndex, st.AppliedIndex, st.LastContact, leader))
	}
}

// port is the TCP port the server answers plain connections on, "0" for
// none (Redis's port 0 beside a tls-port).
func (s *Server) port() string {
	if addr, ok := s.listenerAddr(false).(*net.TCPAddr); ok {
		return strconv.Itoa(addr.Port)
	}
	return "0"
}

// tlsPort is the TCP port the server answers TLS connections on, "0" for
// none.
func (s *Server) tlsPort() string {
	if addr, ok := s.listenerAddr(true).(*net.TCPAddr); ok {
		return strconv.Itoa(addr.Port)
	}
	return "0"
}

// total adds up the shards' counters, but for Policies, which every shard
// holds alike: the most any shard reports, since those this node holds no
// replica of report zero.
func (s *Server) total() engine.Stats {
	var t engine.Stats
	for i := range s.shards.Shards() {
		st := s.shards.Stats(i)
		t.Keys += st.Keys
		t.Persistent += st.Persistent
		t.Bytes += st.Bytes
		t.Allowed += st.Allowed
		t.Denied += st.Denied
		t.ShadowDenied += st.ShadowDenied
		t.Evicted += st.Evicted
		t.RejectedOOM += st.RejectedOOM
		t.Charged += st.Charged
		t.Policies = max(t.Policies, st.Policies)
		t.Scripts = max(t.Scripts, st.Scripts)
		t.ScriptBytes += st.ScriptBytes
		t.ScriptRuns += st.ScriptRuns
		t.ScriptErrors += st.ScriptErrors
	}
	return t
}

func humanBytes(n uint64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2fG", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.2fM", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.2fK", float64(n)/(1<<10))
	}
	return fmt.Sprintf("%dB", n)
}

func executable() string {
	p, err := os.Executable()
	if err != nil {
		return ""
	}
	return p
}
