package main

import (
	"crypto/tls"
	"crypto/x509"
	"flag"
	"fmt"
	"net"
	"os"
	"strings"
	"time"

	"github.com/rlserver/rlserver/rls"
)

// The rate limit service's limits over xDS (--rls-xds-server), from a
// control plane such as Envoy Gateway's, instead of --rls-config's files:
// the settings envoyproxy/ratelimit takes for its CONFIG_TYPE=GRPC_XDS_SOTW
// (ratelimitenv.go reads its variables into these flags).

// xdsSettings are the flags of the xDS subscription.
type xdsSettings struct {
	server        string // --rls-xds-server: host:port, "" for off
	nodeID        string
	nodeMetadata  string // key=value,...
	headers       string // key:value,...
	useTLS        yesNo
	certFile      string
	keyFile       string
	caFile        string
	serverName    string
	retry         time.Duration
	retryMax      time.Duration
	maxMsgSize    int
	loadedOptions *rls.XDSOptions // what validate makes of the flags (Log is set at start)
}

// addFlags defines the xDS subscription's flags on fs.
func (s *xdsSettings) addFlags(fs *flag.FlagSet) {
	fs.StringVar(&s.server, "rls-xds-server", "", "take the rate limit service's limits from this xDS control plane, host:port (Envoy Gateway's: envoy-gateway:18001), instead of --rls-config: RateLimitConfig resources over ADS, state of the world (see docs/envoy.md)")
	fs.StringVar(&s.nodeID, "rls-xds-node-id", "default", "the node id the xDS requests name; the control plane keys its config by it (Envoy Gateway: envoy-ratelimit)")
	fs.StringVar(&s.nodeMetadata, "rls-xds-node-metadata", "", "the node's metadata in the xDS requests: key=value,key=value")
	fs.StringVar(&s.headers, "rls-xds-headers", "", "gRPC metadata sent to the xDS control plane: key:value,key:value")
	fs.Var(&s.useTLS, "rls-xds-tls", "yes: speak TLS to the xDS control plane, checking its certificate against --rls-xds-tls-ca-cert-file: yes or no (default no)")
	fs.StringVar(&s.certFile, "rls-xds-tls-cert-file", "", "with --rls-xds-tls: the client certificate (PEM) shown to the xDS control plane")
	fs.StringVar(&s.keyFile, "rls-xds-tls-key-file", "", "the private key of --rls-xds-tls-cert-file (PEM)")
	fs.StringVar(&s.caFile, "rls-xds-tls-ca-cert-file", "", "with --rls-xds-tls: CA certificates (PEM) the xDS control plane's certificate must chain to, besides the system's")
	fs.StringVar(&s.serverName, "rls-xds-tls-server-name", "", "with --rls-xds-tls: the name the xDS control plane's certificate must have (default: the host of --rls-xds-server)")
	fs.DurationVar(&s.retry, "rls-xds-retry-interval", rls.DefaultXDSRetryInterval, "the first wait before the xDS stream is opened again after it failed (doubling up to --rls-xds-retry-max while the control plane stays away), and before a refused config sent again is refused again")
	fs.DurationVar(&s.retryMax, "rls-xds-retry-max", rls.DefaultXDSMaxRetryInterval, "the longest wait between attempts to reach the xDS control plane")
	fs.IntVar(&s.maxMsgSize, "rls-xds-max-msg-size", 0, "the largest xDS response taken, in bytes (0: gRPC's 4 MiB)")
}

// validate checks the xDS settings, given that sources holds the flags set,
// and loads the TLS files they name.
func (s *xdsSettings) validate(sources map[string]string) error {
	if s.server == "" {
		for _, name := range []string{"rls-xds-node-id", "rls-xds-node-metadata", "rls-xds-headers", "rls-xds-tls",
			"rls-xds-tls-cert-file", "rls-xds-tls-key-file", "rls-xds-tls-ca-cert-file", "rls-xds-tls-server-name",
			"rls-xds-retry-interval", "rls-xds-retry-max", "rls-xds-max-msg-size"} {
			if _, set := sources[name]; set {
				return invalid(name, "--%s needs --rls-xds-server", name)
			}
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(s.server); err != nil {
		return invalid("rls-xds-server", "--rls-xds-server %q: must be host:port", s.server)
	}
	opts := &rls.XDSOptions{Server: s.server, NodeID: s.nodeID, RetryInterval: s.retry, MaxRetryInterval: s.retryMax, MaxRecvMsgSize: s.maxMsgSize}
	var err error
	switch {
	case s.retry < time.Millisecond || s.retry > time.Hour:
		return invalid("rls-xds-retry-interval", "--rls-xds-retry-interval %v: must be from 1ms to 1h", s.retry)
	case s.retryMax < s.retry || s.retryMax > time.Hour:
		return invalid("rls-xds-retry-max", "--rls-xds-retry-max %v: must be from --rls-xds-retry-interval (%v) to 1h", s.retryMax, s.retry)
	case s.maxMsgSize < 0:
		return invalid("rls-xds-max-msg-size", "--rls-xds-max-msg-size %d: must be 0 or more", s.maxMsgSize)
	case s.nodeID == "":
		return invalid("rls-xds-node-id", "--rls-xds-node-id: must not be empty")
	}
	if opts.NodeMetadata, err = pairs(s.nodeMetadata, "="); err != nil {
		return invalid("rls-xds-node-metadata", "--rls-xds-node-metadata %q: %v", s.nodeMetadata, err)
	}
	if opts.Headers, err = pairs(s.headers, ":"); err != nil {
		return invalid("rls-xds-headers", "--rls-xds-headers %q: %v", s.headers, err)
	}
	if opts.TLS, err = s.loadTLS(sources); err != nil {
		return err
	}
	s.loadedOptions = opts
	return nil
}

// loadTLS is the TLS of --rls-xds-tls and its files, nil without it.
func (s *xdsSettings) loadTLS(sources map[string]string) (*tls.Config, error) {
	if !s.useTLS {
		for _, name := range []string{"rls-xds-tls-cert-file", "rls-xds-tls-key-file", "rls-xds-tls-ca-cert-file", "rls-xds-tls-server-name"} {
			if _, set := sources[name]; set {
				return nil, invalid(name, "--%s needs --rls-xds-tls yes", name)
			}
		}
		return nil, nil
	}
	if (s.certFile == "") != (s.keyFile == "") {
		return nil, invalid("rls-xds-tls-cert-file", "--rls-xds-tls-cert-file and --rls-xds-tls-key-file go together")
	}
	cfg := &tls.Config{ServerName: s.serverName, MinVersion: tls.VersionTLS12}
	if s.certFile != "" {
		cert, err := tls.LoadX509KeyPair(s.certFile, s.keyFile)
		if err != nil {
			return nil, &settingError{name: "rls-xds-tls-cert-file", msg: fmt.Sprintf("--rls-xds-tls-cert-file, --rls-xds-tls-key-file: %v", err), err: err}
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	if s.caFile != "" {
		pem, err := os.ReadFile(s.caFile)
		if err != nil {
			return nil, &settingError{name: "rls-xds-tls-ca-cert-file", msg: fmt.Sprintf("--rls-xds-tls-ca-cert-file: %v", err), err: err}
		}
		// The system's roots too, as envoyproxy/ratelimit takes them (an
		// image without them, as rlserver's, has the file's alone).
		if cfg.RootCAs, _ = x509.SystemCertPool(); cfg.RootCAs == nil {
			cfg.RootCAs = x509.NewCertPool()
		}
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, invalid("rls-xds-tls-ca-cert-file", "--rls-xds-tls-ca-cert-file %s: no PEM certificate in it", s.caFile)
		}
	}
	return cfg, nil
}

// pairs parses "k<sep>v,k<sep>v" into a map; "" is none.
func pairs(s, sep string) (map[string]string, error) {
	out := map[string]string{}
	if strings.TrimSpace(s) == "" {
		return out, nil
	}
	for item := range strings.SplitSeq(s, ",") {
		k, v, ok := strings.Cut(item, sep)
		if k = strings.TrimSpace(k); !ok || k == "" {
			return nil, fmt.Errorf("%q is not key%svalue", item, sep)
		}
		out[k] = strings.TrimSpace(v)
	}
	return out, nil
}
