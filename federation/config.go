package federation

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/rlserver/rlserver/engine"
)

// Defaults and bounds of the settings.
const (
	// DefaultSync is how often the agent renews and reports.
	DefaultSync = 100 * time.Millisecond
	// DefaultLeaseTTL is the longest a block lasts.
	DefaultLeaseTTL = time.Second
	// MinSync and MaxSync bound the sync interval.
	MinSync, MaxSync = 10 * time.Millisecond, time.Minute
	// minSecret is the fewest bytes a secret may have.
	minSecret = 16
)

// Config is one region's settings.
type Config struct {
	// Region is this region's name; Peers, the other regions.
	Region string
	Peers  []Peer
	// Secret is shared by every node of every region: a link's two ends
	// prove they know it.
	Secret string
	// ServerTLS, when set, serves the federation port with TLS; ClientTLS
	// dials the other regions with it.
	ServerTLS, ClientTLS *tls.Config
	// Sync is how often the agent renews blocks and exchanges counts;
	// LeaseTTL, the longest a block lasts.
	Sync, LeaseTTL time.Duration
	// Floor is what a region cut off from a key's home admits once its
	// blocks are gone.
	Floor Floor
	// Leads reports whether this node leads a shard: the agent works only
	// those. Nil: every shard (a single node).
	Leads func(shard int) bool
	// Dial dials another region; nil: TCP.
	Dial func(ctx context.Context, addr string) (net.Conn, error)
	// Log hears of links going up and down; nil: nothing.
	Log *slog.Logger
}

// Peer is another region: its name and the addresses of its nodes'
// federation ports, tried in turn.
type Peer struct {
	Name  string
	Addrs []string
}

// Floor is what a region admits of a strict key once it is cut off from
// the key's home and its blocks are gone: nothing (the zero Floor), its
// last fair share (Share), or a share of the limit's rate (Percent).
// Units admitted under the floor are counted nowhere until the home hears
// of them: it is the one setting under which strict mode can go over the
// limit, by at most the floor's rate over the cut-off.
type Floor struct {
	Share   bool
	Percent int64
}

// ParseFloor reads --global-partition-floor: 0, share, or a percentage
// of the limit ("10%").
func ParseFloor(s string) (Floor, error) {
	switch {
	case s == "0" || s == "" || s == "0%":
		return Floor{}, nil
	case s == "share":
		return Floor{Share: true}, nil
	case strings.HasSuffix(s, "%"):
		if p, err := strconv.ParseInt(strings.TrimSuffix(s, "%"), 10, 64); err == nil && p > 0 && p <= 100 {
			return Floor{Percent: p}, nil
		}
	}
	return Floor{}, fmt.Errorf("%q: must be 0, share, or a percentage from 1%% to 100%%", s)
}

// String is the floor as ParseFloor reads it.
func (f Floor) String() string {
	switch {
	case f.Share:
		return "share"
	case f.Percent > 0:
		return strconv.FormatInt(f.Percent, 10) + "%"
	}
	return "0"
}

// ParsePeers reads --federation: name@host:port, comma-separated; a name
// given more than once lists several nodes of that region.
func ParsePeers(spec string) ([]Peer, error) {
	var peers []Peer
	for _, item := range strings.Split(spec, ",") {
		name, addr, ok := strings.Cut(strings.TrimSpace(item), "@")
		if !ok {
			return nil, fmt.Errorf("%q: want name@host:port", item)
		}
		if err := CheckRegion(name); err != nil {
			return nil, err
		}
		if _, port, err := net.SplitHostPort(addr); err != nil || port == "" {
			return nil, fmt.Errorf("%q: want name@host:port", item)
		}
		j := slices.IndexFunc(peers, func(p Peer) bool { return p.Name == name })
		if j < 0 {
			peers = append(peers, Peer{Name: name})
			j = len(peers) - 1
		}
		peers[j].Addrs = append(peers[j].Addrs, addr)
	}
	return peers, nil
}

// CheckRegion returns nil when name may name a region: 1 to 64 letters,
// digits and "-_.".
func CheckRegion(name string) error {
	if len(name) < 1 || len(name) > engine.MaxRegionLen {
		return fmt.Errorf("region %q: must be 1 to %d characters", name, engine.MaxRegionLen)
	}
	for _, c := range name {
		if !('a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '-' || c == '_' || c == '.') {
			return fmt.Errorf("region %q: letters, digits and -_. only", name)
		}
	}
	return nil
}

// validate checks cfg and fills its defaults.
func (cfg *Config) validate() error {
	if err := CheckRegion(cfg.Region); err != nil {
		return err
	}
	if len(cfg.Peers) == 0 || len(cfg.Peers)+1 > engine.MaxRegions {
		return fmt.Errorf("a federation has 2 to %d regions", engine.MaxRegions)
	}
	for _, p := range cfg.Peers {
		if p.Name == cfg.Region {
			return fmt.Errorf("region %q is this one: list the other regions", p.Name)
		}
	}
	if len(cfg.Secret) < minSecret {
		return errors.New("the federation's secret must be at least 16 bytes")
	}
	if cfg.Sync == 0 {
		cfg.Sync = DefaultSync
	}
	if cfg.LeaseTTL == 0 {
		cfg.LeaseTTL = DefaultLeaseTTL
	}
	switch {
	case cfg.Sync < MinSync || cfg.Sync > MaxSync:
		return fmt.Errorf("the sync interval must be from %v to %v", MinSync, MaxSync)
	case cfg.LeaseTTL < 2*cfg.Sync || cfg.LeaseTTL > time.Duration(engine.MaxShareTTL)*time.Millisecond:
		return errors.New("the lease TTL must be at least twice the sync interval, and at most a day")
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	return nil
}

// regions is every region's name, this one's included, sorted.
func (cfg *Config) regions() []string {
	names := []string{cfg.Region}
	for _, p := range cfg.Peers {
		names = append(names, p.Name)
	}
	slices.Sort(names)
	return names
}
