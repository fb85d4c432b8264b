package main

import (
	"crypto/tls"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/testcert"
)

// envoyGatewayEnv is the environment Envoy Gateway gives the ratelimit
// Deployment it creates (internal/infrastructure/kubernetes/ratelimit/
// resource.go), with the certificates of its envoy-rate-limit Secret at
// dir instead of /certs, and a Redis backend, a Prometheus endpoint and
// tracing on.
func envoyGatewayEnv(t *testing.T, dir string) map[string]string {
	ca := testcert.NewCA(t, "envoy-gateway")
	caFile := ca.Write(t, dir, "ca.crt")
	cert, key := ca.Issue(t, "envoy-ratelimit", "envoy-ratelimit").Write(t, dir, "tls")
	return map[string]string{
		"RUNTIME_ROOT": "/data", "RUNTIME_SUBDIRECTORY": "ratelimit", "RUNTIME_IGNOREDOTFILES": "true",
		"RUNTIME_WATCH_ROOT": "false", "LOG_LEVEL": "info", "USE_STATSD": "false",
		"CONFIG_TYPE": "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_URL": "envoy-gateway:18001",
		"CONFIG_GRPC_XDS_NODE_ID": "envoy-ratelimit",
		"GRPC_SERVER_USE_TLS":     "true", "GRPC_SERVER_TLS_CERT": cert, "GRPC_SERVER_TLS_KEY": key, "GRPC_SERVER_TLS_CA_CERT": caFile,
		"CONFIG_GRPC_XDS_SERVER_USE_TLS": "true", "CONFIG_GRPC_XDS_CLIENT_TLS_CERT": cert, "CONFIG_GRPC_XDS_CLIENT_TLS_KEY": key,
		"CONFIG_GRPC_XDS_SERVER_TLS_CACERT": caFile, "FORCE_START_WITHOUT_INITIAL_CONFIG": "true",
		"REDIS_SOCKET_TYPE": "tcp", "REDIS_URL": "redis.redis-system.svc.cluster.local:6379",
		"USE_PROMETHEUS": "true", "PROMETHEUS_ADDR": ":19001", "PROMETHEUS_MAPPER_YAML": "/etc/statsd-exporter/conf.yaml",
		"TRACING_ENABLED": "true", "OTEL_EXPORTER_OTLP_ENDPOINT": "http://otel:4318",
		"RLSERVER_IN_MEMORY": "yes",
	}
}

// Envoy Gateway's environment as it is starts rlserver as it starts
// envoyproxy/ratelimit: the rate limit service on 0.0.0.0:8081 with TLS
// (no client certificates: envoyproxy/ratelimit reads no CA from
// GRPC_SERVER_TLS_CA_CERT), the config from envoy-gateway:18001 as node
// envoy-ratelimit over mutual TLS, the health check on 8080; the variables
// that set nothing are named.
func TestEnvoyGatewayEnvironment(t *testing.T) {
	vars := envoyGatewayEnv(t, t.TempDir())
	o, err := parseFlags(nil, io.Discard, env(vars))
	if err != nil {
		t.Fatal(err)
	}
	x := o.rls.xds.loadedOptions
	switch {
	case o.bind != "0.0.0.0" || o.rls.grpcPort != 8081 || o.metricsPort != 8080 || o.logLevel != "info":
		t.Fatalf("bind %q, grpc port %d, metrics port %d, log level %q", o.bind, o.rls.grpcPort, o.metricsPort, o.logLevel)
	case o.access.clientTLS == nil || o.access.clientTLS.ClientAuth != tls.NoClientCert:
		t.Fatalf("the gRPC port's TLS: %+v", o.access.clientTLS)
	case x == nil || x.Server != "envoy-gateway:18001" || x.NodeID != "envoy-ratelimit" || x.RetryInterval != 3*time.Second:
		t.Fatalf("xDS options %+v", x)
	case x.TLS == nil || len(x.TLS.Certificates) != 1 || x.TLS.RootCAs == nil:
		t.Fatalf("xDS TLS %+v", x.TLS)
	case o.rls.loaded == nil || o.rls.loaded.Domains() != 0:
		t.Fatal("no empty config to start with")
	}
	want := []string{"FORCE_START_WITHOUT_INITIAL_CONFIG", "GRPC_SERVER_TLS_CA_CERT", "OTEL_EXPORTER_OTLP_ENDPOINT",
		"PROMETHEUS_ADDR", "PROMETHEUS_MAPPER_YAML", "REDIS_SOCKET_TYPE", "REDIS_URL", "RUNTIME_IGNOREDOTFILES", "RUNTIME_ROOT",
		"RUNTIME_SUBDIRECTORY", "RUNTIME_WATCH_ROOT", "TRACING_ENABLED", "USE_PROMETHEUS", "USE_STATSD"}
	if !reflect.DeepEqual(o.ratelimitIgnored, want) {
		t.Fatalf("ignored %v\nwant    %v", o.ratelimitIgnored, want)
	}
}

// The command line and the RLSERVER_ variables win over envoyproxy/
// ratelimit's; without CONFIG_TYPE its variables are not read at all;
// GRPC_CLIENT_TLS_CACERT asks for client certificates; CONFIG_TYPE=FILE
// reads the files where envoyproxy/ratelimit would.
func TestRatelimitEnvPrecedence(t *testing.T) {
	dir := t.TempDir()
	vars := envoyGatewayEnv(t, dir)
	vars["RLSERVER_GRPC_PORT"], vars["GRPC_CLIENT_TLS_CACERT"] = "9091", vars["GRPC_SERVER_TLS_CA_CERT"]
	o, err := parseFlags([]string{"--rls-xds-node-id", "mine", "--bind", "127.0.0.1"}, io.Discard, env(vars))
	if err != nil {
		t.Fatal(err)
	}
	if x := o.rls.xds.loadedOptions; x.NodeID != "mine" || o.bind != "127.0.0.1" || o.rls.grpcPort != 9091 {
		t.Fatalf("node id %q, bind %q, grpc port %d", x.NodeID, o.bind, o.rls.grpcPort)
	}
	if o.access.clientTLS.ClientAuth != tls.RequireAndVerifyClientCert {
		t.Fatal("GRPC_CLIENT_TLS_CACERT did not ask for client certificates")
	}

	o, err = parseFlags(nil, io.Discard, env(map[string]string{"GRPC_PORT": "9000", "CONFIG_GRPC_XDS_SERVER_URL": "cp:1", "RLSERVER_IN_MEMORY": "yes"}))
	if err != nil || o.rls.grpcPort != 0 || o.rls.xds.server != "" || o.bind != "127.0.0.1" {
		t.Fatalf("without CONFIG_TYPE: %v, grpc port %d, xds %q", err, o.rls.grpcPort, o.rls.xds.server)
	}

	runtime := filepath.Join(dir, "runtime")
	if err := os.MkdirAll(filepath.Join(runtime, "current", "ratelimit", "config"), 0o755); err != nil {
		t.Fatal(err)
	}
	os.WriteFile(filepath.Join(runtime, "current", "ratelimit", "config", "edge.yaml"), []byte("domain: edge\n"), 0o644)
	o, err = parseFlags(nil, io.Discard, env(map[string]string{"CONFIG_TYPE": "FILE", "RUNTIME_ROOT": filepath.Join(runtime, "current"),
		"RUNTIME_SUBDIRECTORY": "ratelimit", "RLSERVER_IN_MEMORY": "yes"}))
	if err != nil || o.rls.config != filepath.Join(runtime, "current", "ratelimit", "config") || o.rls.loaded.Domains() != 1 {
		t.Fatalf("CONFIG_TYPE=FILE: %v, config %q", err, o.rls.config)
	}
}

// A variable rlserver cannot honour stops the start, naming it.
func TestRatelimitEnvErrors(t *testing.T) {
	cases := []struct {
		name string
		env  map[string]string
		want string
	}{
		{"config type", map[string]string{"CONFIG_TYPE": "REDIS"},
			`CONFIG_TYPE: "REDIS" is not one of envoyproxy/ratelimit's config types, FILE and GRPC_XDS_SOTW`},
		{"client SAN", map[string]string{"CONFIG_TYPE": "GRPC_XDS_SOTW", "GRPC_CLIENT_TLS_SAN": "envoy"},
			"GRPC_CLIENT_TLS_SAN: rlserver cannot require a name in the clients' certificates; unset it (every certificate from GRPC_CLIENT_TLS_CACERT is then accepted)"},
		{"unix socket", map[string]string{"CONFIG_TYPE": "GRPC_XDS_SOTW", "GRPC_UDS": "/tmp/ratelimit.sock"},
			"GRPC_UDS: rlserver serves gRPC on a TCP port only, not on a unix socket; unset it, and point Envoy at GRPC_PORT (default 8081)"},
		{"log level", map[string]string{"CONFIG_TYPE": "GRPC_XDS_SOTW", "LOG_LEVEL": "loud"},
			`LOG_LEVEL: --log-level "loud": must be one of trace, debug, info, warn, error, fatal or panic`},
		{"boolean", map[string]string{"CONFIG_TYPE": "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_USE_TLS": "sure"},
			`CONFIG_GRPC_XDS_SERVER_USE_TLS: --rls-xds-tls "sure": must be true or false (or 1, 0, t, f)`},
		{"server url", map[string]string{"CONFIG_TYPE": "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_URL": "envoy-gateway"},
			`CONFIG_GRPC_XDS_SERVER_URL: --rls-xds-server "envoy-gateway": must be host:port`},
		{"retry interval", map[string]string{"CONFIG_TYPE": "GRPC_XDS_SOTW", "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL": "3"},
			`CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL: invalid value "3" for --rls-xds-retry-interval: parse error`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tc.env["RLSERVER_IN_MEMORY"] = "yes"
			_, err := parseFlags(nil, io.Discard, env(tc.env))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v\nwant       %s", err, tc.want)
			}
			if !errors.Is(err, ErrInvalidSetting) {
				t.Errorf("%v does not wrap ErrInvalidSetting", err)
			}
		})
	}
}

// ratelimitSettings are the variables envoyproxy/ratelimit reads
// (src/settings/settings.go, every envconfig tag), copied here so that a
// variable rlserver neither reads, refuses nor names as ignored fails a
// test instead of being dropped unseen.
var ratelimitSettings = []string{
	"HOST", "PORT", "DEBUG_HOST", "DEBUG_PORT", "GRPC_UDS", "GRPC_HOST", "GRPC_PORT",
	"GRPC_MAX_CONNECTION_AGE", "GRPC_MAX_CONNECTION_AGE_GRACE", "GRPC_SERVER_USE_TLS", "GRPC_SERVER_TLS_CERT",
	"GRPC_SERVER_TLS_KEY", "GRPC_CLIENT_TLS_CACERT", "GRPC_CLIENT_TLS_SAN", "LOG_LEVEL", "LOG_FORMAT",
	"CONFIG_TYPE", "FORCE_START_WITHOUT_INITIAL_CONFIG", "CONFIG_GRPC_XDS_NODE_ID", "CONFIG_GRPC_XDS_NODE_METADATA",
	"CONFIG_GRPC_XDS_SERVER_URL", "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS",
	"CONFIG_GRPC_XDS_SERVER_USE_TLS", "CONFIG_GRPC_XDS_CLIENT_TLS_CERT", "CONFIG_GRPC_XDS_CLIENT_TLS_KEY",
	"CONFIG_GRPC_XDS_SERVER_TLS_CACERT", "CONFIG_GRPC_XDS_SERVER_TLS_SAN", "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL",
	"XDS_CLIENT_BACKOFF_MAX_INTERVAL", "XDS_CLIENT_BACKOFF_RANDOM_FACTOR", "XDS_CLIENT_BACKOFF_JITTER",
	"XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", "USE_DOG_STATSD", "USE_DOG_STATSD_MOGRIFIERS", "USE_STATSD", "STATSD_HOST",
	"STATSD_PORT", "EXTRA_TAGS", "STATS_FLUSH_INTERVAL", "DISABLE_STATS", "USE_PROMETHEUS", "PROMETHEUS_ADDR",
	"PROMETHEUS_PATH", "PROMETHEUS_MAPPER_YAML", "RUNTIME_ROOT", "RUNTIME_SUBDIRECTORY", "RUNTIME_APPDIRECTORY",
	"RUNTIME_IGNOREDOTFILES", "RUNTIME_WATCH_ROOT", "EXPIRATION_JITTER_MAX_SECONDS", "LOCAL_CACHE_SIZE_IN_BYTES",
	"NEAR_LIMIT_RATIO", "CACHE_KEY_PREFIX", "BACKEND_TYPE", "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT",
	"LIMIT_RESPONSE_HEADERS_ENABLED", "LIMIT_LIMIT_HEADER", "LIMIT_REMAINING_HEADER", "LIMIT_RESET_HEADER",
	"HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", "REDIS_SOCKET_TYPE", "REDIS_TYPE", "REDIS_URL", "REDIS_POOL_SIZE",
	"REDIS_AUTH", "REDIS_TLS", "REDIS_TLS_CLIENT_CERT", "REDIS_TLS_CLIENT_KEY", "REDIS_TLS_CACERT",
	"REDIS_TLS_SKIP_HOSTNAME_VERIFICATION", "REDIS_PIPELINE_WINDOW", "REDIS_PIPELINE_LIMIT",
	"REDIS_USE_EXPLICIT_PIPELINE", "REDIS_PERSECOND", "REDIS_PERSECOND_SOCKET_TYPE", "REDIS_PERSECOND_TYPE",
	"REDIS_PERSECOND_URL", "REDIS_PERSECOND_POOL_SIZE", "REDIS_PERSECOND_AUTH", "REDIS_PERSECOND_TLS",
	"REDIS_SENTINEL_AUTH", "REDIS_PERSECOND_SENTINEL_AUTH", "REDIS_PERSECOND_PIPELINE_WINDOW",
	"REDIS_PERSECOND_PIPELINE_LIMIT", "REDIS_PERSECOND_USE_EXPLICIT_PIPELINE", "REDIS_HEALTH_CHECK_ACTIVE_CONNECTION",
	"REDIS_TIMEOUT", "REDIS_PERSECOND_TIMEOUT", "REDIS_POOL_ON_EMPTY_BEHAVIOR", "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR",
	"MEMCACHE_HOST_PORT", "MEMCACHE_MAX_IDLE_CONNS", "MEMCACHE_SRV", "MEMCACHE_SRV_REFRESH", "MEMCACHE_TLS",
	"MEMCACHE_TLS_CLIENT_CERT", "MEMCACHE_TLS_CLIENT_KEY", "MEMCACHE_TLS_CACERT", "MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION",
	"SHADOW_MODE", "RESPONSE_DYNAMIC_METADATA", "MERGE_DOMAIN_CONFIG", "TRACING_ENABLED", "TRACING_SERVICE_NAME",
	"TRACING_SERVICE_NAMESPACE", "TRACING_SERVICE_INSTANCE_ID", "TRACING_EXPORTER_PROTOCOL", "TRACING_SAMPLING_RATE",
	// Not in settings.go, but set by Envoy Gateway: the OpenTelemetry
	// SDK's endpoint, and a CA no one reads (docs/envoy.md).
	"OTEL_EXPORTER_OTLP_ENDPOINT", "GRPC_SERVER_TLS_CA_CERT",
}

// Every variable of envoyproxy/ratelimit's is read, refused, or named in
// the log as ignored, in both config types; none is dropped unseen.
func TestEveryRatelimitVariableHasAFate(t *testing.T) {
	read := map[string]bool{"CONFIG_TYPE": true, "RUNTIME_ROOT": true, "RUNTIME_SUBDIRECTORY": true, "RUNTIME_APPDIRECTORY": true}
	for _, v := range ratelimitVars {
		read[v.name] = true
	}
	refused := map[string]bool{"GRPC_CLIENT_TLS_SAN": true, "GRPC_UDS": true}
	for _, mode := range []string{configXDS, configFile} {
		for _, name := range ratelimitSettings {
			if refused[name] {
				continue
			}
			vars := map[string]string{"CONFIG_TYPE": mode, name: "x"}
			_, ignored, _ := ratelimitEnv(func(k string) (string, bool) { v, ok := vars[k]; return v, ok })
			named := slices.Contains(ignored, name)
			if !read[name] && !named {
				t.Errorf("CONFIG_TYPE=%s: %s is neither read nor named as ignored", mode, name)
			}
			if read[name] && named && mode == configFile {
				t.Errorf("CONFIG_TYPE=%s: %s is read and named as ignored", mode, name)
			}
		}
	}
	known := map[string]bool{}
	for _, name := range ratelimitSettings {
		known[name] = true
	}
	for _, name := range ratelimitIgnored {
		if !known[name] {
			t.Errorf("%s is named as ignored but is not envoyproxy/ratelimit's", name)
		}
	}
}
