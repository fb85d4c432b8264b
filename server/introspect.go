package server

import (
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/commands"
	"github.com/rlserver/rlserver/engine"
	"github.com/rlserver/rlserver/internal/resp"
)

// time is TIME: the clock decisions use, as [seconds, microseconds].
func (c *conn) time(out []byte) []byte {
	us := c.srv.cfg.Clock.NowMicro()
	out = resp.AppendArray(out, 2)
	out = resp.AppendBulkInt(out, us/1_000_000)
	return resp.AppendBulkInt(out, us%1_000_000)
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
		t.ShareKeys += st.ShareKeys
		t.ShareHolders += st.ShareHolders
		t.ShareCommitted += st.ShareCommitted
		t.ShareGrants += st.ShareGrants
		t.ShareReturned += st.ShareReturned
		t.ShareLapsed += st.ShareLapsed
		t.Captures += st.Captures
		t.CaptureCopies += st.CaptureCopies
		t.ReservationsPending += st.ReservationsPending
		t.Reserved += st.Reserved
		t.ReservationsMade += st.ReservationsMade
		t.ReservationsSettled += st.ReservationsSettled
		t.ReservationsExpired += st.ReservationsExpired
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
