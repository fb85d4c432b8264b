package main

import (
	"crypto/tls"
	"errors"
	"io"
	"path/filepath"
	"strings"
	"testing"

	"github.com/rlserver/rlserver/internal/testcert"
)

// tlsFiles writes a CA and a certificate from it to a fresh directory.
func tlsFiles(t *testing.T) (ca, cert, key string) {
	dir := t.TempDir()
	c := testcert.NewCA(t, "ca")
	cert, key = c.Issue(t, "node", "127.0.0.1").Write(t, dir, "node")
	return c.Write(t, dir, "ca.crt"), cert, key
}

// Every access setting that cannot work is refused at start, naming the
// setting and where its value came from.
func TestAccessSettingErrors(t *testing.T) {
	ca, cert, key := tlsFiles(t)
	badACL := writeConfig(t, "user app on +rl.slidng\n")
	tlsArgs := []string{"--tls-cert-file", cert, "--tls-key-file", key}
	cluster := []string{"--cluster", "n1@127.0.0.1:7001,n2@127.0.0.1:7002", "--port", "7001"}
	cases := []struct {
		name string
		args []string
		env  map[string]string
		want string
	}{
		{"aclfile and requirepass", []string{"--aclfile", badACL}, map[string]string{"RLSERVER_REQUIREPASS": "x"},
			"--aclfile and --requirepass exclude each other: give the default user its password in the aclfile"},
		{"aclfile with an error", nil, map[string]string{"RLSERVER_ACLFILE": badACL},
			"RLSERVER_ACLFILE: --aclfile " + badACL + ":1: Unknown command or category name in ACL in rule '+rl.slidng'"},
		{"missing aclfile", []string{"--aclfile", "/nonexistent/users.acl"}, nil,
			"--aclfile open /nonexistent/users.acl: no such file or directory"},
		{"protected-mode", nil, map[string]string{"RLSERVER_PROTECTED_MODE": "maybe"},
			`RLSERVER_PROTECTED_MODE: invalid value "maybe" for --protected-mode: must be yes or no`},
		{"timeout", []string{"--timeout", "-1"}, nil,
			"--timeout -1: must be from 0 (never) to 3153600000 seconds"},
		{"tls-port range", []string{"--tls-port", "70000"}, nil,
			"--tls-port 70000: must be from 1 to 65535, or 0 for off"},
		{"tls-port is port", []string{"--tls-port", "7000", "--port", "7000"}, nil,
			"--tls-port 7000: is the client --port"},
		{"tls-port without a certificate", []string{"--tls-port", "7443"}, nil,
			"--tls-port needs --tls-cert-file"},
		{"tls-port without a key", []string{"--tls-port", "7443", "--tls-cert-file", cert}, nil,
			"--tls-port needs --tls-key-file"},
		{"client auth without a CA", append([]string{"--tls-port", "7443"}, tlsArgs...), nil,
			"--tls-auth-clients yes needs --tls-ca-cert-file, to check the clients' certificates (or --tls-auth-clients no)"},
		{"tls-auth-clients", append([]string{"--tls-port", "7443", "--tls-auth-clients", "sometimes"}, tlsArgs...), nil,
			`--tls-auth-clients "sometimes": must be yes, no or optional`},
		{"key of another certificate", []string{"--tls-port", "7443", "--tls-auth-clients", "no", "--tls-cert-file", cert, "--tls-key-file", ca}, nil,
			"--tls-cert-file, --tls-key-file: tls: found a certificate rather than a key in the PEM for the private key"},
		{"a CA file without a certificate", append([]string{"--tls-port", "7443", "--tls-ca-cert-file", key}, tlsArgs...), nil,
			"--tls-ca-cert-file " + key + ": no PEM certificate in it"},
		{"tls-cluster alone", append([]string{"--tls-cluster", "yes", "--tls-ca-cert-file", ca}, tlsArgs...), nil,
			"--tls-cluster needs --cluster: a single node has no bus"},
		{"tls-cluster without a CA", append(append([]string{"--tls-cluster", "yes"}, cluster...), tlsArgs...), nil,
			"--tls-cluster needs --tls-ca-cert-file: the CA the other nodes' certificates must chain to"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"--data-dir", filepath.Join(t.TempDir(), "d")}, tc.args...)
			_, err := parseFlags(args, io.Discard, env(tc.env))
			if err == nil || err.Error() != tc.want {
				t.Fatalf("error %v\nwant       %s", err, tc.want)
			}
			if !errors.Is(err, ErrInvalidSetting) {
				t.Errorf("%v does not wrap ErrInvalidSetting", err)
			}
		})
	}
}

// The access settings load what they name: the users, the client TLS
// configuration (client authentication as --tls-auth-clients says), the
// bus's; yes and no come from the config file as redis.conf writes them;
// --port 0 beside --tls-port serves TLS only.
func TestAccessSettings(t *testing.T) {
	ca, cert, key := tlsFiles(t)
	users := writeConfig(t, "user default off\nuser app on >pw ~* +@ratelimit\n")
	conf := writeConfig(t, strings.Join([]string{
		"aclfile " + users, "protected-mode no", "tls-port 7443", "tls-cert-file " + cert, "tls-key-file " + key,
		"tls-ca-cert-file " + ca, "tls-auth-clients optional", "tls-cluster yes", "timeout 300",
		"cluster n1@127.0.0.1:7001,n2@127.0.0.1:7002", "port 7001",
	}, "\n")+"\n")
	o, err := parseFlags([]string{"--config", conf, "--data-dir", filepath.Join(t.TempDir(), "d")}, io.Discard, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	switch {
	case o.access.users == nil || len(o.access.users.Names()) != 2 || o.access.users.Default().Enabled():
		t.Errorf("users: %+v", o.access.users)
	case bool(o.sec.protectedMode):
		t.Error("protected-mode no was not read")
	case o.access.clientTLS == nil || o.access.clientTLS.ClientAuth != tls.VerifyClientCertIfGiven || o.access.clientTLS.ClientCAs == nil:
		t.Errorf("client TLS: %+v", o.access.clientTLS)
	case o.access.busTLS == nil || o.access.busTLS.CAs == nil:
		t.Error("no bus TLS")
	case o.idleTimeout().Seconds() != 300:
		t.Errorf("timeout %v", o.idleTimeout())
	case !o.plainPort() || o.clientPort() != 7001:
		t.Errorf("plain port %v, client port %d", o.plainPort(), o.clientPort())
	}

	o, err = parseFlags([]string{"--in-memory", "--port", "0", "--tls-port", "7443", "--tls-auth-clients", "no",
		"--tls-cert-file", cert, "--tls-key-file", key}, io.Discard, env(nil))
	if err != nil {
		t.Fatal(err)
	}
	if o.plainPort() || o.clientPort() != 7443 || !bool(o.sec.protectedMode) || o.access.clientTLS.ClientAuth != tls.NoClientCert {
		t.Errorf("TLS only: plain %v, client port %d, protected %v", o.plainPort(), o.clientPort(), o.sec.protectedMode)
	}
	if o, err = parseFlags([]string{"--in-memory", "--port", "0"}, io.Discard, env(nil)); err != nil || !o.plainPort() {
		t.Errorf("--port 0 alone must pick a free plain port: %v", err)
	}
}
