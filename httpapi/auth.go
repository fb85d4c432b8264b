package httpapi

import (
	"errors"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/rlserver/rlserver/server/acl"
)

// A request acts as an ACL user, as a RESP connection does after AUTH:
//
//	Authorization: Basic base64(user:password)   the user, as AUTH user password
//	Authorization: Bearer <password>             the user whose password it is
//	(none)                                       the default user, when it takes no password
//
// A bearer token is a password of one user: give each service a user of
// its own, with a long random password, and that password is its token.
// Users that take no password ("nopass") are never matched by a token.
// Protected mode applies as to RESP: while the default user takes no
// password, a request from beyond loopback is refused.

var (
	errNoAuth           = withStatus(http.StatusUnauthorized, errors.New("NOAUTH Authentication required: send HTTP Basic credentials or a bearer token"))
	errBadAuthorization = withStatus(http.StatusUnauthorized,
		errors.New("the Authorization header is neither Basic credentials nor a Bearer token"))
	errDenied = withStatus(http.StatusForbidden, errors.New("DENIED rlserver is running in protected mode because protected mode is enabled "+
		"and no password is set for the default user: only requests from the loopback interface are served. "+
		"Set a password with --requirepass, or users in an --aclfile, or, on a network no one else reaches, --protected-mode no"))
)

// authenticate is the user r acts as.
func (s *Server) authenticate(r *http.Request) (*acl.User, error) {
	users := s.cfg.Users
	if s.cfg.ProtectedMode && users.Default().NoPass() && !loopback(r.RemoteAddr) {
		return nil, errDenied
	}
	h := r.Header.Get("Authorization")
	if h == "" {
		if users.OpenAccess() {
			return users.Default(), nil
		}
		return nil, errNoAuth
	}
	if name, pass, ok := r.BasicAuth(); ok {
		u, err := users.Authenticate([]byte(name), []byte(pass))
		if err != nil {
			return nil, withStatus(http.StatusUnauthorized, err)
		}
		return u, nil
	}
	scheme, token, ok := strings.Cut(h, " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") || token == "" {
		return nil, errBadAuthorization
	}
	for _, name := range users.Names() {
		u := users.Lookup(name)
		if u.NoPass() {
			continue
		}
		if u, err := users.Authenticate([]byte(name), []byte(token)); err == nil {
			return u, nil
		}
	}
	return nil, withStatus(http.StatusUnauthorized, errors.New("WRONGPASS the bearer token is no enabled user's password"))
}

// loopback reports whether a request's remote address is on loopback.
func loopback(remote string) bool {
	host, _, err := net.SplitHostPort(remote)
	if err != nil {
		host = remote
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
