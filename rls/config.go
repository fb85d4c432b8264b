package rls

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"

	pb "github.com/envoyproxy/go-control-plane/envoy/service/ratelimit/v3"

	"github.com/rlserver/rlserver/engine"
)

// Config is a loaded set of rate limit files (Load) or of RateLimitConfig
// resources received over xDS (LoadXDS): every domain, its descriptor tree
// and its rules. It is never changed once loaded; a reload builds a new
// one. The zero Config defines no domain: every request is for an unknown
// one.
type Config struct {
	domains map[string]*node
	quotas  map[string][]*quotaRule // each domain's quota section (quota.go)
	files   []string                // the files read, in order
	rules   int                     // rate_limit entries
}

// Domains is how many domains the config defines.
func (c *Config) Domains() int { return len(c.domains) }

// Rules is how many rate_limit entries the config holds.
func (c *Config) Rules() int { return c.rules }

// Files are the files the config was read from (none for one received
// over xDS).
func (c *Config) Files() []string { return c.files }

// algorithm is how a rule counts: envoyproxy/ratelimit's fixed window by
// default, or one of the engine's other limiters.
type algorithm uint8

// The algorithms a rule may name.
const (
	algoFixed    algorithm = iota // RL.FIXED: windows aligned to the epoch (envoyproxy/ratelimit's)
	algoSliding                   // RL.SLIDING: the sliding-window counter
	algoToken                     // RL.TOKEN: a token bucket of requests_per_unit, refilled over the unit
	algoGCRA                      // RL.GCRA: the same budget, as GCRA
	algoCalendar                  // RL.QUOTA: calendar days, weeks, months, years (UTC)
)

// algorithmNames are the algorithms as the YAML names them.
var algorithmNames = []string{algoFixed: "fixed", algoSliding: "sliding", algoToken: "token", algoGCRA: "gcra", algoCalendar: "calendar"}

// algorithmOps are the engine decisions the algorithms are: their rows say
// the rest (see ruleCommand).
var algorithmOps = [...]engine.Op{algoFixed: engine.OpFixed, algoSliding: engine.OpSliding,
	algoToken: engine.OpToken, algoGCRA: engine.OpGCRA, algoCalendar: engine.OpQuota}

// String is the algorithm's name in the YAML.
func (a algorithm) String() string { return algorithmNames[a] }

// countsPeriods reports whether the algorithm counts in calendar periods,
// as its op's row says (a parameter is one): its unit is the period.
func (a algorithm) countsPeriods() bool {
	for _, p := range algorithmOps[a].Spec().Params {
		if p.Role == engine.RolePeriod {
			return true
		}
	}
	return false
}

// countsRefusals reports whether the algorithm counts a refused hit unless
// told not to (count_refused: false), as its op's row says: the window
// counters do, as envoyproxy/ratelimit's INCRBY does. A bucket counts one
// only when told to, as a FORCE charge, which takes it into debt.
func (a algorithm) countsRefusals() bool {
	return algorithmOps[a].Spec().Flags&engine.FlagCountRefused != 0
}

// rule is one rate_limit of a config: what a matching descriptor is
// limited to, and how.
type rule struct {
	Domain string
	// StatsKey is envoyproxy/ratelimit's name for the rule: the path of
	// descriptor keys (key or key_value) below the domain, joined by dots,
	// such as "database.users" or "remote_address".
	StatsKey string
	Where    string // file:line of its rate_limit

	Name            string
	RequestsPerUnit uint32
	Unit            pb.RateLimitResponse_RateLimit_Unit
	Multiplier      int64 // unit_multiplier: the window is Multiplier units
	Unlimited       bool
	Replaces        []string
	ShadowMode      bool
	DetailedMetric  bool
	Algorithm       algorithm
	CountRefused    bool // a refused hit is counted: by default for the window algorithms, as FORCE for a bucket

	stats *counters                       // the rule's counters under StatsKey
	limit *pb.RateLimitResponse_RateLimit // current_limit, shared by every status (only read)
}

// finish makes what the rule's statuses share, once its fields are set.
func (r *rule) finish() *rule {
	r.limit = &pb.RateLimitResponse_RateLimit{Name: r.Name, RequestsPerUnit: r.RequestsPerUnit, Unit: r.Unit}
	return r
}

// Window is the rule's period in milliseconds: Multiplier units.
func (r *rule) Window() int64 { return unitMillis[r.Unit] * r.Multiplier }

// unitMillis are the units' lengths, as envoyproxy/ratelimit counts them:
// a month is 30 days and a year 365, windows aligned to the Unix epoch.
var unitMillis = map[pb.RateLimitResponse_RateLimit_Unit]int64{
	pb.RateLimitResponse_RateLimit_SECOND: 1000,
	pb.RateLimitResponse_RateLimit_MINUTE: 60 * 1000,
	pb.RateLimitResponse_RateLimit_HOUR:   3600 * 1000,
	pb.RateLimitResponse_RateLimit_DAY:    24 * 3600 * 1000,
	pb.RateLimitResponse_RateLimit_WEEK:   7 * 24 * 3600 * 1000,
	pb.RateLimitResponse_RateLimit_MONTH:  30 * 24 * 3600 * 1000,
	pb.RateLimitResponse_RateLimit_YEAR:   365 * 24 * 3600 * 1000,
}

// node is one level of a domain's descriptor tree.
type node struct {
	children  map[entry]*node
	wildcards []wildcard // in file order: the first that matches wins
	rule      *rule      // nil when the level has no rate_limit
	// shareThreshold: the values its wildcard matches share one counter,
	// named by pattern ("files*") instead of the value.
	shareThreshold bool
	pattern        string
	valueToMetric  bool // the stats key names the request's value here
}

// entry is a descriptor entry as the tree is keyed: a value of "" is the
// key alone, which matches any value.
type entry struct{ key, value string }

// wildcard is a value ending in "*": any value with its prefix matches.
type wildcard struct {
	key, prefix string
	node        *node
}

// ErrConfig is what every error about a rate limit config wraps.
var ErrConfig = errors.New("invalid rate limit config")

// ConfigError is a fault in a config file, at Where (file:line).
type ConfigError struct {
	Where string
	Msg   string
}

func (e *ConfigError) Error() string { return e.Where + ": " + e.Msg }

// Unwrap returns ErrConfig.
func (e *ConfigError) Unwrap() error { return ErrConfig }

// maxFileBytes bounds one config file: a rate limit config is a few
// kilobytes, and a file of gigabytes named by mistake must not be read.
const maxFileBytes = 16 << 20

// Load reads the config at path: one YAML file, or every *.yaml and *.yml
// file of a directory (not of its subdirectories; hidden files, such as a
// Kubernetes ConfigMap's ..data, are skipped), each holding one domain.
// Every fault is an error naming the file and line (a *ConfigError).
func Load(path string) (*Config, error) {
	files, err := configFiles(path)
	if err != nil {
		return nil, err
	}
	c := &Config{domains: map[string]*node{}, quotas: map[string][]*quotaRule{}, files: files}
	seen := map[string]string{} // domain -> the file:line that defined it
	for _, f := range files {
		data, err := readFile(f)
		if err != nil {
			return nil, err
		}
		d, err := parseFile(f, data)
		if err != nil {
			return nil, err
		}
		if err := c.add(d, seen); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// add puts a checked domain into c, refusing one already defined; seen maps
// each domain to where it was defined.
func (c *Config) add(d *domainTree, seen map[string]string) error {
	if first, dup := seen[d.name]; dup {
		return &ConfigError{Where: d.where, Msg: fmt.Sprintf("duplicate domain %q: already defined at %s", d.name, first)}
	}
	seen[d.name] = d.where
	c.domains[d.name] = d.root
	c.rules += d.rules
	if len(d.quota) > 0 {
		if c.quotas == nil {
			c.quotas = map[string][]*quotaRule{}
		}
		c.quotas[d.name] = d.quota
	}
	return nil
}

// configFiles lists the files Load reads at path, sorted.
func configFiles(path string) ([]string, error) {
	info, err := os.Stat(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if !info.IsDir() {
		return []string{path}, nil
	}
	entries, err := os.ReadDir(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	var files []string
	for _, e := range entries {
		name := e.Name()
		if strings.HasPrefix(name, ".") || !(strings.HasSuffix(name, ".yaml") || strings.HasSuffix(name, ".yml")) {
			continue
		}
		full := filepath.Join(path, name)
		if st, err := os.Stat(full); err != nil || st.IsDir() { // follows symlinks, as ConfigMaps use
			continue
		}
		files = append(files, full)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("%w: %s: no *.yaml or *.yml file in the directory", ErrConfig, path)
	}
	slices.Sort(files)
	return files, nil
}

// readFile reads one config file, refusing one past maxFileBytes.
func readFile(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrConfig, err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFileBytes+1))
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %w", ErrConfig, path, err)
	}
	if len(data) > maxFileBytes {
		return nil, &ConfigError{Where: path, Msg: fmt.Sprintf("a config file may hold at most %d bytes", maxFileBytes)}
	}
	return data, nil
}
