package main

import (
	"bufio"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// Every setting is a flag, and can also come from the environment or from a
// config file. Precedence: the command line, then the environment, then the
// file, then the flag's default.
//
// The environment variable of --max-key-len is RLSERVER_MAX_KEY_LEN: the
// prefix, then the flag's name in upper case with underscores for dashes.
// An empty variable counts as unset, as most service managers intend.
//
// The config file (--config, or RLSERVER_CONFIG) has one setting a line, as
// redis.conf does: the flag's name without dashes, then its value.
//
//	# /etc/rlserver.conf
//	bind 10.0.0.1
//	data-dir /var/lib/rlserver
//	requirepass "correct horse battery staple"
//	in-memory            # a boolean alone means true; yes and no work too
//
// Blank lines and lines starting with # are ignored; a # after a value is a
// comment only after white space and outside quotes. A value in double
// quotes is unquoted as a Go string (for spaces or an empty value). An
// unknown name, or a name given twice, is an error.

// envPrefix starts every setting's environment variable.
const envPrefix = "RLSERVER_"

// notSettings are flags that are not settings: the environment and the file
// do not set them (RLSERVER_CONFIG names the file, though).
var notSettings = map[string]bool{"config": true, "version": true}

// envName is the environment variable of the flag name.
func envName(name string) string {
	return envPrefix + strings.ToUpper(strings.ReplaceAll(name, "-", "_"))
}

// ErrInvalidSetting is what every error about a setting's value wraps.
var ErrInvalidSetting = errors.New("invalid setting")

// settingError is a setting rlserver cannot accept. Its text names the
// setting as its flag, after where the value came from when that was not
// the command line: "RLSERVER_PORT: --port 70000: must be from 0 to 65535".
type settingError struct {
	name   string // the flag's name, without dashes
	source string // "" for the command line, else an environment variable or file:line
	msg    string // what is wrong, naming the flag
	err    error  // the parse error underneath, if any
}

func (e *settingError) Error() string {
	if e.source == "" {
		return e.msg
	}
	return e.source + ": " + e.msg
}

// Unwrap returns ErrInvalidSetting and the parse error, if any.
func (e *settingError) Unwrap() []error {
	if e.err == nil {
		return []error{ErrInvalidSetting}
	}
	return []error{ErrInvalidSetting, e.err}
}

// invalid is a settingError about the flag name, with msg formatted as
// fmt.Sprintf does; its source is filled in by parseFlags.
func invalid(name, format string, args ...any) *settingError {
	return &settingError{name: name, msg: fmt.Sprintf(format, args...)}
}

// layers applies the environment and the config file to fs, whose command
// line has been parsed, and returns where each setting came from: "" for
// the command line, else the variable or file:line. lookupEnv is
// os.LookupEnv outside tests; compat are the settings read from
// envoyproxy/ratelimit's variables (ratelimitenv.go), below the RLSERVER_
// ones; configPath is the file, "" for none.
func layers(fs *flag.FlagSet, lookupEnv func(string) (string, bool), compat []ratelimitSetting, configPath string) (map[string]string, error) {
	sources := map[string]string{}
	fs.Visit(func(f *flag.Flag) { sources[f.Name] = "" })
	var err error
	fs.VisitAll(func(f *flag.Flag) {
		if err != nil || notSettings[f.Name] {
			return
		}
		if _, onCommandLine := sources[f.Name]; onCommandLine {
			return
		}
		env := envName(f.Name)
		if v, ok := lookupEnv(env); ok && v != "" {
			if err = set(fs, f, v, env); err == nil {
				sources[f.Name] = env
			}
		}
	})
	for _, c := range compat {
		if _, done := sources[c.flag]; done || err != nil {
			continue
		}
		if err = set(fs, fs.Lookup(c.flag), c.value, c.source); err == nil {
			sources[c.flag] = c.source
		}
	}
	if err != nil || configPath == "" {
		return sources, err
	}
	settings, err := readConfigFile(configPath)
	if err != nil {
		return sources, err
	}
	for _, s := range settings {
		f := fs.Lookup(s.name)
		if f == nil || notSettings[s.name] {
			return sources, &settingError{name: s.name, source: s.where, msg: fmt.Sprintf("unknown setting %q", s.name)}
		}
		if _, done := sources[s.name]; done {
			continue // the command line or the environment said otherwise
		}
		if s.bare {
			if !isBool(f) {
				return sources, &settingError{name: s.name, source: s.where, msg: fmt.Sprintf("--%s needs a value", s.name)}
			}
			s.value = "true"
		}
		if err := set(fs, f, s.value, s.where); err != nil {
			return sources, err
		}
		sources[s.name] = s.where
	}
	return sources, nil
}

// set sets flag f of fs to value, from source. A boolean also takes yes and
// no, as redis.conf says them.
func set(fs *flag.FlagSet, f *flag.Flag, value, source string) error {
	if isBool(f) {
		switch strings.ToLower(value) {
		case "yes":
			value = "true"
		case "no":
			value = "false"
		}
	}
	if err := fs.Set(f.Name, value); err != nil {
		return &settingError{name: f.Name, source: source, err: err,
			msg: fmt.Sprintf("invalid value %q for --%s: %v", value, f.Name, err)}
	}
	return nil
}

// isBool reports whether f is a boolean flag, which needs no value.
func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// fileSetting is one line of a config file.
type fileSetting struct {
	name, value string
	where       string // file:line
	bare        bool   // a name without a value
}

// readConfigFile reads the settings of a config file, in order.
func readConfigFile(path string) ([]fileSetting, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, &settingError{name: "config", msg: fmt.Sprintf("--config: %v", err), err: err}
	}
	defer f.Close()
	var out []fileSetting
	lineOf := map[string]int{}
	sc := bufio.NewScanner(f)
	for n := 1; sc.Scan(); n++ {
		where := path + ":" + strconv.Itoa(n)
		s, ok, err := parseConfigLine(sc.Text())
		if err != nil {
			return nil, &settingError{name: s.name, source: where, msg: err.Error(), err: err}
		}
		if !ok {
			continue
		}
		if first, dup := lineOf[s.name]; dup {
			return nil, &settingError{name: s.name, source: where, msg: fmt.Sprintf("%s is already set on line %d", s.name, first)}
		}
		lineOf[s.name] = n
		s.where = where
		out = append(out, s)
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("--config %s: %w", path, err)
	}
	return out, nil
}

// parseConfigLine parses one line: ok is false for a blank line or a
// comment.
func parseConfigLine(line string) (s fileSetting, ok bool, err error) {
	line = strings.TrimSpace(line)
	if line == "" || line[0] == '#' {
		return s, false, nil
	}
	name, rest := line, ""
	if i := strings.IndexAny(line, " \t"); i >= 0 {
		name, rest = line[:i], line[i+1:]
	}
	s.name = strings.TrimPrefix(name, "--")
	rest = strings.TrimSpace(rest)
	if strings.HasPrefix(rest, `"`) {
		quoted, err := strconv.QuotedPrefix(rest)
		if err != nil {
			return s, false, fmt.Errorf("%s: unterminated or malformed quoted value %s", s.name, rest)
		}
		s.value, _ = strconv.Unquote(quoted)
		if after := strings.TrimSpace(rest[len(quoted):]); after != "" && after[0] != '#' {
			return s, false, fmt.Errorf("%s: unexpected %q after the quoted value", s.name, after)
		}
		return s, true, nil
	}
	if i := strings.Index(rest, " #"); i >= 0 {
		rest = strings.TrimSpace(rest[:i])
	}
	if i := strings.Index(rest, "\t#"); i >= 0 {
		rest = strings.TrimSpace(rest[:i])
	}
	s.value, s.bare = rest, rest == ""
	return s, true, nil
}

// absPath is path made absolute, for INFO's config_file; path itself if
// that fails.
func absPath(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		return abs
	}
	return path
}
