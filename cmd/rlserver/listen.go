package main

import (
	"fmt"
	"log/slog"
	"net"
	"strconv"
)

// listeners are the client ports: plain, TLS, or both; and the rate limit
// service's gRPC port.
type listeners struct {
	plain, tls net.Listener // nil where off
	grpc       net.Listener // nil without --grpc-port
	fed        net.Listener // nil without --region
	http       net.Listener // nil without --http-port
}

// listen opens the client ports the settings ask for, before anything else
// starts, so that a busy port fails the start at once.
func listen(o options) (*listeners, error) {
	l := &listeners{}
	var err error
	if o.plainPort() {
		if l.plain, err = net.Listen("tcp", net.JoinHostPort(o.bind, strconv.Itoa(o.port))); err != nil {
			return nil, err
		}
	}
	if o.sec.tlsPort != 0 {
		if l.tls, err = net.Listen("tcp", net.JoinHostPort(o.bind, strconv.Itoa(o.sec.tlsPort))); err != nil {
			l.close()
			return nil, err
		}
	}
	if o.rls.grpcPort != 0 {
		if l.grpc, err = net.Listen("tcp", net.JoinHostPort(o.bind, strconv.Itoa(o.rls.grpcPort))); err != nil {
			l.close()
			return nil, fmt.Errorf("--grpc-port: %w", err)
		}
	}
	if l.fed, err = listenFederation(o); err != nil {
		l.close()
		return nil, err
	}
	if o.httpPort != 0 {
		if l.http, err = net.Listen("tcp", net.JoinHostPort(o.bind, strconv.Itoa(o.httpPort))); err != nil {
			l.close()
			return nil, fmt.Errorf("--http-port: %w", err)
		}
	}
	return l, nil
}

// clientAddr is the address clients are told of: the plain port's, or the
// TLS port's when there is no plain one.
func (l *listeners) clientAddr() string {
	if l.plain != nil {
		return l.plain.Addr().String()
	}
	return l.tls.Addr().String()
}

// close closes the ports (once serving, the server closes them).
func (l *listeners) close() {
	for _, ln := range []net.Listener{l.plain, l.tls, l.grpc, l.fed, l.http} {
		if ln != nil {
			ln.Close()
		}
	}
}

// logAccess says at start who may connect: the users, whether protected
// mode refuses remote clients, TLS, and the idle timeout. An open door is a
// warning.
func logAccess(log *slog.Logger, o options) {
	users := o.access.users
	def := "password"
	switch {
	case !users.Default().Enabled():
		def = "off"
	case users.Default().NoPass():
		def = "nopass"
	}
	protected := bool(o.sec.protectedMode) && users.Default().NoPass()
	log.Info("access", "users", len(users.Names()), "aclfile", users.File(), "default_user", def,
		"protected_mode", protected, "tls_port", o.sec.tlsPort != 0, "tls_cluster", bool(o.sec.tlsCluster), "timeout_s", o.sec.timeout)
	if def == "nopass" && !protected && !isLoopbackBind(o.bind) {
		log.Warn("anyone who can reach --bind may run every command: the default user has no password and protected mode is off",
			"bind", o.bind)
	}
}

// isLoopbackBind reports whether the bind address is a loopback one.
func isLoopbackBind(bind string) bool {
	ip := net.ParseIP(bind)
	return bind == "localhost" || (ip != nil && ip.IsLoopback())
}
