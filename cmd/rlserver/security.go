package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/server"
	"github.com/rlserver/rlserver/server/acl"
)

// The settings that decide who may talk to rlserver: users (--requirepass
// or --aclfile), protected mode, TLS for clients and mutual TLS between
// nodes, and the idle timeout. Their names are Redis's, so that a
// redis.conf's lines carry over.

// security are the access settings as given.
type security struct {
	aclFile        string
	protectedMode  yesNo
	tlsPort        int
	tlsCertFile    string
	tlsKeyFile     string
	tlsCAFile      string
	tlsAuthClients string
	tlsCluster     yesNo
	timeout        int // seconds; 0: never
}

// access is what the access settings load: the users (the aclfile's, or
// the default user alone with --requirepass), and the TLS configurations of
// the client port and of the bus (nil where off).
type access struct {
	users     *acl.Users
	clientTLS *tls.Config
	busTLS    *cluster.BusTLS
	fedTLS    *cluster.BusTLS // the federation's links (--federation-tls)
}

// yesNo is a boolean setting that takes a value, as redis.conf writes them:
// "--protected-mode no" (a Go boolean flag would not take "no" after a
// space).
type yesNo bool

// String is "yes" or "no", as the flag's default shows.
func (b *yesNo) String() string {
	if b != nil && *b {
		return "yes"
	}
	return "no"
}

// Set takes yes or no (also true, false, on, off, 1, 0), any case.
func (b *yesNo) Set(s string) error {
	switch strings.ToLower(s) {
	case "yes", "true", "1", "on":
		*b = true
	case "no", "false", "0", "off":
		*b = false
	default:
		return errors.New("must be yes or no")
	}
	return nil
}

// addFlags defines the access settings' flags on fs.
func (s *security) addFlags(fs *flag.FlagSet) {
	s.protectedMode = yesNo(server.DefaultConfig().ProtectedMode)
	fs.StringVar(&s.aclFile, "aclfile", "", "read users, their passwords and permissions from this file (see docs/security.md); excludes --requirepass")
	fs.Var(&s.protectedMode, "protected-mode", "yes: while the default user has no password, refuse clients that are not on loopback: yes or no")
	fs.IntVar(&s.tlsPort, "tls-port", 0, "serve TLS clients on this port of --bind (0: no TLS port); with --port 0, TLS only")
	fs.StringVar(&s.tlsCertFile, "tls-cert-file", "", "this server's certificate (PEM), for --tls-port and --tls-cluster")
	fs.StringVar(&s.tlsKeyFile, "tls-key-file", "", "the private key of --tls-cert-file (PEM)")
	fs.StringVar(&s.tlsCAFile, "tls-ca-cert-file", "", "CA certificates (PEM) that clients' certificates (--tls-auth-clients) and other nodes' (--tls-cluster) must chain to")
	fs.StringVar(&s.tlsAuthClients, "tls-auth-clients", "yes", "TLS clients must present a certificate from --tls-ca-cert-file: yes, no or optional")
	fs.Var(&s.tlsCluster, "tls-cluster", "yes: nodes speak mutual TLS on the bus with --tls-cert-file, each checking the other's against --tls-ca-cert-file: yes or no (default no)")
	fs.IntVar(&s.timeout, "timeout", 0, "close a client connection that has sent no command for this many seconds (0: never)")
}

// validateSecurity checks the access settings that need no file.
func (o options) validateSecurity() error {
	s := o.sec
	switch {
	case o.requirePass != "" && s.aclFile != "":
		return invalid("aclfile", "--aclfile and --requirepass exclude each other: give the default user its password in the aclfile")
	case s.tlsPort < 0 || s.tlsPort > 65535:
		return invalid("tls-port", "--tls-port %d: must be from 1 to 65535, or 0 for off", s.tlsPort)
	case s.tlsPort != 0 && s.tlsPort == o.port:
		return invalid("tls-port", "--tls-port %d: is the client --port", s.tlsPort)
	case s.tlsPort != 0 && s.tlsPort == o.metricsPort:
		return invalid("tls-port", "--tls-port %d: is the --metrics-port", s.tlsPort)
	case s.tlsAuthClients != "yes" && s.tlsAuthClients != "no" && s.tlsAuthClients != "optional":
		return invalid("tls-auth-clients", "--tls-auth-clients %q: must be yes, no or optional", s.tlsAuthClients)
	case bool(s.tlsCluster) && o.cluster == "":
		return invalid("tls-cluster", "--tls-cluster needs --cluster: a single node has no bus")
	case s.timeout < 0 || s.timeout > 100*365*24*3600:
		return invalid("timeout", "--timeout %d: must be from 0 (never) to 3153600000 seconds", s.timeout)
	}
	grpcTLS := bool(o.rls.grpcTLS) && o.rls.grpcPort != 0 // without a port, validateRLS refuses it
	if s.tlsPort != 0 || bool(s.tlsCluster) || grpcTLS || bool(o.fed.tls) {
		needs := "--tls-port"
		switch {
		case bool(s.tlsCluster):
			needs = "--tls-cluster"
		case bool(o.fed.tls):
			needs = "--federation-tls"
		case s.tlsPort == 0:
			needs = "--grpc-tls"
		}
		if s.tlsCertFile == "" {
			return invalid("tls-cert-file", "%s needs --tls-cert-file", needs)
		}
		if s.tlsKeyFile == "" {
			return invalid("tls-key-file", "%s needs --tls-key-file", needs)
		}
	}
	if o.fed.tls && s.tlsCAFile == "" {
		return invalid("tls-ca-cert-file", "--federation-tls needs --tls-ca-cert-file: the CA the other regions' certificates must chain to")
	}
	if s.tlsCluster && s.tlsCAFile == "" {
		return invalid("tls-ca-cert-file", "--tls-cluster needs --tls-ca-cert-file: the CA the other nodes' certificates must chain to")
	}
	if (s.tlsPort != 0 || grpcTLS) && s.tlsAuthClients != "no" && s.tlsCAFile == "" {
		return invalid("tls-ca-cert-file", "--tls-auth-clients %s needs --tls-ca-cert-file, to check the clients' certificates (or --tls-auth-clients no)", s.tlsAuthClients)
	}
	return nil
}

// loadAccess reads the files the access settings name: the aclfile, the
// certificate and its key, the CAs.
func (o options) loadAccess() (access, error) {
	s := o.sec
	var a access
	if s.aclFile != "" {
		users, err := acl.Load(absPath(s.aclFile))
		if err != nil {
			return a, &settingError{name: "aclfile", msg: fmt.Sprintf("--aclfile %v", err), err: err}
		}
		a.users = users
	} else {
		a.users = acl.New(o.requirePass)
	}
	if s.tlsPort == 0 && !s.tlsCluster && !o.rls.grpcTLS && !o.fed.tls {
		return a, nil
	}
	cert, err := tls.LoadX509KeyPair(s.tlsCertFile, s.tlsKeyFile)
	if err != nil {
		return a, &settingError{name: "tls-cert-file", msg: fmt.Sprintf("--tls-cert-file, --tls-key-file: %v", err), err: err}
	}
	var cas *x509.CertPool
	if s.tlsCAFile != "" {
		pem, err := os.ReadFile(s.tlsCAFile)
		if err != nil {
			return a, &settingError{name: "tls-ca-cert-file", msg: fmt.Sprintf("--tls-ca-cert-file: %v", err), err: err}
		}
		cas = x509.NewCertPool()
		if !cas.AppendCertsFromPEM(pem) {
			return a, invalid("tls-ca-cert-file", "--tls-ca-cert-file %s: no PEM certificate in it", s.tlsCAFile)
		}
	}
	if s.tlsPort != 0 || o.rls.grpcTLS {
		a.clientTLS = &tls.Config{
			Certificates: []tls.Certificate{cert},
			ClientCAs:    cas,
			ClientAuth:   map[string]tls.ClientAuthType{"yes": tls.RequireAndVerifyClientCert, "optional": tls.VerifyClientCertIfGiven, "no": tls.NoClientCert}[s.tlsAuthClients],
			MinVersion:   tls.VersionTLS12, // Redis's default tls-protocols: TLSv1.2 and TLSv1.3
		}
	}
	if s.tlsCluster {
		a.busTLS = &cluster.BusTLS{Certificate: cert, CAs: cas}
	}
	if o.fed.tls {
		a.fedTLS = &cluster.BusTLS{Certificate: cert, CAs: cas}
	}
	return a, nil
}

// idleTimeout is --timeout.
func (o options) idleTimeout() time.Duration {
	return time.Duration(o.sec.timeout) * time.Second
}
