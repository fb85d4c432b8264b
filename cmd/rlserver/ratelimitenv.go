package main

import (
	"errors"
	"path"
	"sort"
	"strconv"
	"strings"
)

// envoyproxy/ratelimit's environment, so that a deployment made for it
// (Envoy Gateway's, which sets CONFIG_TYPE=GRPC_XDS_SOTW and the rest)
// runs rlserver with the image replaced and nothing else changed. Its
// variables are read only when CONFIG_TYPE is set, the mark of such a
// deployment: names as plain as PORT or LOG_LEVEL mean other things
// elsewhere. Each sets one of rlserver's flags, below the command line and
// the RLSERVER_ variables and above the config file; envoyproxy/ratelimit's
// defaults stand in for the variables not set where rlserver's would
// differ (its gRPC port 8081 on 0.0.0.0, its HTTP port 8080). Variables
// rlserver has no use for are named in the start's log. docs/envoy.md
// lists them all, with what each does here.

// ratelimitSetting is a flag's value read from envoyproxy/ratelimit's
// variables.
type ratelimitSetting struct {
	flag, value string
	source      string // the variable, or variables, it came from
}

// ratelimitVar maps one of envoyproxy/ratelimit's variables to a flag.
type ratelimitVar struct {
	name, flag string
	def        string                       // envoyproxy/ratelimit's default, applied when unset; "" for none
	conv       func(string) (string, error) // nil: the value as it is
	mode       string                       // "": any CONFIG_TYPE; else that one only
	when       string                       // a boolean variable that must be true for this one to count
}

// The config types envoyproxy/ratelimit has.
const (
	configFile = "FILE"
	configXDS  = "GRPC_XDS_SOTW"
)

// ratelimitVars are the variables that set a flag.
var ratelimitVars = []ratelimitVar{
	{name: "GRPC_HOST", flag: "bind", def: "0.0.0.0"},
	{name: "GRPC_PORT", flag: "grpc-port", def: "8081"},
	{name: "PORT", flag: "metrics-port", def: "8080"},
	{name: "LOG_LEVEL", flag: "log-level", conv: ratelimitLogLevel},
	{name: "LOG_FORMAT", flag: "log-format", conv: func(v string) (string, error) {
		if strings.EqualFold(v, "json") {
			return "json", nil
		}
		return "text", nil
	}},
	{name: "LIMIT_RESPONSE_HEADERS_ENABLED", flag: "rls-response-headers", conv: ratelimitBool},
	{name: "GRPC_SERVER_USE_TLS", flag: "grpc-tls", conv: ratelimitBool},
	{name: "GRPC_SERVER_TLS_CERT", flag: "tls-cert-file", when: "GRPC_SERVER_USE_TLS"},
	{name: "GRPC_SERVER_TLS_KEY", flag: "tls-key-file", when: "GRPC_SERVER_USE_TLS"},
	{name: "GRPC_CLIENT_TLS_CACERT", flag: "tls-ca-cert-file", when: "GRPC_SERVER_USE_TLS"},
	{name: "CONFIG_GRPC_XDS_SERVER_URL", flag: "rls-xds-server", def: "localhost:18000", mode: configXDS},
	{name: "CONFIG_GRPC_XDS_NODE_ID", flag: "rls-xds-node-id", mode: configXDS},
	{name: "CONFIG_GRPC_XDS_NODE_METADATA", flag: "rls-xds-node-metadata", mode: configXDS},
	{name: "CONFIG_GRPC_XDS_CLIENT_ADDITIONAL_HEADERS", flag: "rls-xds-headers", mode: configXDS},
	{name: "CONFIG_GRPC_XDS_SERVER_CONNECT_RETRY_INTERVAL", flag: "rls-xds-retry-interval", mode: configXDS},
	{name: "XDS_CLIENT_BACKOFF_MAX_INTERVAL", flag: "rls-xds-retry-max", mode: configXDS},
	{name: "XDS_CLIENT_MAX_MSG_SIZE_IN_BYTES", flag: "rls-xds-max-msg-size", mode: configXDS},
	{name: "CONFIG_GRPC_XDS_SERVER_USE_TLS", flag: "rls-xds-tls", conv: ratelimitBool, mode: configXDS},
	{name: "CONFIG_GRPC_XDS_CLIENT_TLS_CERT", flag: "rls-xds-tls-cert-file", mode: configXDS, when: "CONFIG_GRPC_XDS_SERVER_USE_TLS"},
	{name: "CONFIG_GRPC_XDS_CLIENT_TLS_KEY", flag: "rls-xds-tls-key-file", mode: configXDS, when: "CONFIG_GRPC_XDS_SERVER_USE_TLS"},
	{name: "CONFIG_GRPC_XDS_SERVER_TLS_CACERT", flag: "rls-xds-tls-ca-cert-file", mode: configXDS, when: "CONFIG_GRPC_XDS_SERVER_USE_TLS"},
	{name: "CONFIG_GRPC_XDS_SERVER_TLS_SAN", flag: "rls-xds-tls-server-name", mode: configXDS, when: "CONFIG_GRPC_XDS_SERVER_USE_TLS"},
}

// ratelimitIgnored are the variables of envoyproxy/ratelimit that set
// nothing here (docs/envoy.md says why for each), named in the log when
// set: every variable of its settings (src/settings/settings.go) is either
// read (ratelimitVars, CONFIG_TYPE, the RUNTIME_ path), refused
// (GRPC_CLIENT_TLS_SAN, GRPC_UDS) or listed here, so that none is dropped
// unseen.
var ratelimitIgnored = []string{
	// The counts' backends: the counts are rlserver's own.
	"BACKEND_TYPE", "LOCAL_CACHE_SIZE_IN_BYTES", "EXPIRATION_JITTER_MAX_SECONDS", "CACHE_KEY_PREFIX",
	"REDIS_SOCKET_TYPE", "REDIS_URL", "REDIS_TYPE", "REDIS_AUTH", "REDIS_POOL_SIZE", "REDIS_TLS",
	"REDIS_TLS_CLIENT_CERT", "REDIS_TLS_CLIENT_KEY", "REDIS_TLS_CACERT", "REDIS_TLS_SKIP_HOSTNAME_VERIFICATION",
	"REDIS_PIPELINE_WINDOW", "REDIS_PIPELINE_LIMIT", "REDIS_USE_EXPLICIT_PIPELINE", "REDIS_SENTINEL_AUTH",
	"REDIS_HEALTH_CHECK_ACTIVE_CONNECTION", "REDIS_TIMEOUT", "REDIS_POOL_ON_EMPTY_BEHAVIOR",
	"REDIS_PERSECOND", "REDIS_PERSECOND_SOCKET_TYPE", "REDIS_PERSECOND_TYPE", "REDIS_PERSECOND_URL",
	"REDIS_PERSECOND_POOL_SIZE", "REDIS_PERSECOND_AUTH", "REDIS_PERSECOND_TLS", "REDIS_PERSECOND_SENTINEL_AUTH",
	"REDIS_PERSECOND_PIPELINE_WINDOW", "REDIS_PERSECOND_PIPELINE_LIMIT", "REDIS_PERSECOND_USE_EXPLICIT_PIPELINE",
	"REDIS_PERSECOND_TIMEOUT", "REDIS_PERSECOND_POOL_ON_EMPTY_BEHAVIOR",
	"MEMCACHE_HOST_PORT", "MEMCACHE_MAX_IDLE_CONNS", "MEMCACHE_SRV", "MEMCACHE_SRV_REFRESH", "MEMCACHE_TLS",
	"MEMCACHE_TLS_CLIENT_CERT", "MEMCACHE_TLS_CLIENT_KEY", "MEMCACHE_TLS_CACERT", "MEMCACHE_TLS_SKIP_HOSTNAME_VERIFICATION",
	// Stats and traces: rlserver's metrics are its own Prometheus series.
	"USE_STATSD", "STATSD_HOST", "STATSD_PORT", "USE_DOG_STATSD", "USE_DOG_STATSD_MOGRIFIERS", "EXTRA_TAGS",
	"STATS_FLUSH_INTERVAL", "DISABLE_STATS", "USE_PROMETHEUS", "PROMETHEUS_ADDR", "PROMETHEUS_PATH", "PROMETHEUS_MAPPER_YAML",
	"TRACING_ENABLED", "TRACING_SERVICE_NAME", "TRACING_SERVICE_NAMESPACE", "TRACING_SERVICE_INSTANCE_ID",
	"TRACING_EXPORTER_PROTOCOL", "TRACING_SAMPLING_RATE", "OTEL_EXPORTER_OTLP_ENDPOINT",
	// The response's extras: rlserver's headers have the IETF draft's
	// names, and it sets no dynamic metadata.
	"LIMIT_LIMIT_HEADER", "LIMIT_REMAINING_HEADER", "LIMIT_RESET_HEADER", "RESPONSE_DYNAMIC_METADATA",
	// Behaviour rlserver has always, or never.
	"FORCE_START_WITHOUT_INITIAL_CONFIG", "HEALTHY_WITH_AT_LEAST_ONE_CONFIG_LOADED", "GRPC_SERVER_TLS_CA_CERT",
	"GRPC_MAX_CONNECTION_AGE", "GRPC_MAX_CONNECTION_AGE_GRACE", "XDS_CLIENT_BACKOFF_INITIAL_INTERVAL",
	"XDS_CLIENT_BACKOFF_RANDOM_FACTOR", "XDS_CLIENT_BACKOFF_JITTER", "HOST", "DEBUG_HOST", "DEBUG_PORT",
	"NEAR_LIMIT_RATIO", "SHADOW_MODE", "MERGE_DOMAIN_CONFIG", "STOP_CACHE_KEY_INCREMENT_WHEN_OVERLIMIT",
	"RUNTIME_IGNOREDOTFILES", "RUNTIME_WATCH_ROOT"}

// ratelimitEnv reads envoyproxy/ratelimit's variables, when CONFIG_TYPE is
// set, into settings, and names the ones set that rlserver ignores.
func ratelimitEnv(lookupEnv func(string) (string, bool)) (settings []ratelimitSetting, ignored []string, err error) {
	get := func(name string) (string, bool) {
		v, ok := lookupEnv(name)
		return v, ok && v != ""
	}
	configType, ok := get("CONFIG_TYPE")
	if !ok {
		return nil, nil, nil
	}
	mode := strings.ToUpper(configType)
	switch mode {
	case configXDS:
	case configFile:
		settings = append(settings, ratelimitConfigDir(get))
	default:
		return nil, nil, &settingError{name: "rls-config", source: "CONFIG_TYPE",
			msg: strconv.Quote(configType) + " is not one of envoyproxy/ratelimit's config types, FILE and GRPC_XDS_SOTW"}
	}
	if _, ok := get("GRPC_UDS"); ok {
		return nil, nil, &settingError{name: "grpc-port", source: "GRPC_UDS",
			msg: "rlserver serves gRPC on a TCP port only, not on a unix socket; unset it, and point Envoy at GRPC_PORT (default 8081)"}
	}
	if _, ok := get("GRPC_CLIENT_TLS_SAN"); ok {
		return nil, nil, &settingError{name: "tls-auth-clients", source: "GRPC_CLIENT_TLS_SAN",
			msg: "rlserver cannot require a name in the clients' certificates; unset it (every certificate from GRPC_CLIENT_TLS_CACERT is then accepted)"}
	}
	for _, v := range ratelimitVars {
		if v.mode != "" && v.mode != mode {
			continue
		}
		if v.when != "" {
			if on, _ := get(v.when); !isTrue(on) {
				continue // as envoyproxy/ratelimit, which reads the files only with TLS on
			}
		}
		value, ok := get(v.name)
		if !ok && v.def == "" {
			continue
		}
		if !ok {
			value = v.def
		}
		if v.conv != nil {
			converted, err := v.conv(value)
			if err != nil {
				return nil, nil, &settingError{name: v.flag, source: v.name, msg: "--" + v.flag + " " + strconv.Quote(value) + ": " + err.Error(), err: err}
			}
			value = converted
		}
		settings = append(settings, ratelimitSetting{flag: v.flag, value: value, source: v.name})
	}
	// Client certificates are asked for when a CA is given to check them,
	// as envoyproxy/ratelimit does.
	if on, _ := get("GRPC_SERVER_USE_TLS"); isTrue(on) {
		_, ca := get("GRPC_CLIENT_TLS_CACERT")
		settings = append(settings, ratelimitSetting{flag: "tls-auth-clients", value: map[bool]string{true: "yes", false: "no"}[ca],
			source: "GRPC_SERVER_USE_TLS, GRPC_CLIENT_TLS_CACERT"})
	}
	for _, name := range ratelimitIgnored {
		if _, ok := get(name); ok {
			ignored = append(ignored, name)
		}
	}
	if mode == configXDS { // as envoyproxy/ratelimit, which reads no files then
		for _, name := range []string{"RUNTIME_ROOT", "RUNTIME_SUBDIRECTORY", "RUNTIME_APPDIRECTORY"} {
			if _, ok := get(name); ok {
				ignored = append(ignored, name)
			}
		}
	}
	sort.Strings(ignored)
	return settings, ignored, nil
}

// ratelimitConfigDir is --rls-config where envoyproxy/ratelimit's FILE
// config reads its files: $RUNTIME_ROOT/$RUNTIME_SUBDIRECTORY/$RUNTIME_APPDIRECTORY.
func ratelimitConfigDir(get func(string) (string, bool)) ratelimitSetting {
	parts := []string{"/srv/runtime_data/current", "", "config"}
	for i, name := range []string{"RUNTIME_ROOT", "RUNTIME_SUBDIRECTORY", "RUNTIME_APPDIRECTORY"} {
		if v, ok := get(name); ok {
			parts[i] = v
		}
	}
	return ratelimitSetting{flag: "rls-config", value: path.Join(parts...), source: "RUNTIME_ROOT, RUNTIME_SUBDIRECTORY, RUNTIME_APPDIRECTORY"}
}

// ratelimitBool is a boolean as envoyproxy/ratelimit reads it (Go's
// strconv.ParseBool), as yes or no.
func ratelimitBool(v string) (string, error) {
	b, err := strconv.ParseBool(v)
	if err != nil {
		return "", errors.New("must be true or false (or 1, 0, t, f)")
	}
	return map[bool]string{true: "yes", false: "no"}[b], nil
}

// isTrue reports whether v is a true boolean to strconv.ParseBool.
func isTrue(v string) bool {
	b, err := strconv.ParseBool(v)
	return err == nil && b
}

// ratelimitLogLevel is a logrus level as rlserver's --log-level: trace is
// debug, and fatal and panic are error.
func ratelimitLogLevel(v string) (string, error) {
	switch l := strings.ToLower(v); l {
	case "trace", "debug":
		return "debug", nil
	case "info":
		return "info", nil
	case "warn", "warning":
		return "warn", nil
	case "error", "fatal", "panic":
		return "error", nil
	default:
		return "", errors.New("must be one of trace, debug, info, warn, error, fatal or panic")
	}
}
