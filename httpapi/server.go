package httpapi

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"time"

	"github.com/rlserver/rlserver/cluster"
	"github.com/rlserver/rlserver/server/acl"
)

// Shards is what the API needs of the shard layer (cluster.MemoryShards and
// cluster.RaftShards): which shard owns a slot, and a way to submit a
// request to it, which a node that does not lead the shard forwards to the
// node that does.
type Shards interface {
	Shards() int
	ShardOf(slot uint16) int
	Submit(shard int, r *cluster.Request)
}

// Config configures a Server.
type Config struct {
	Shards Shards
	// Users are who requests authenticate as (the RESP server's), and
	// ProtectedMode refuses requests from beyond loopback while the
	// default user takes no password, as the RESP server does.
	Users         *acl.Users
	ProtectedMode bool
	// RequestTimeout bounds a request's wait for its shard (the RESP
	// server's --request-timeout).
	RequestTimeout time.Duration
	// MaxKeyLen bounds a key's bytes (--max-key-len), MaxBodyLen a
	// request body's (--max-request-len).
	MaxKeyLen  int
	MaxBodyLen int64
	// TLS, when set, is what the port speaks (the RESP TLS port's config,
	// client certificates included); HTTP/2 is then negotiated by ALPN.
	// Without it the port speaks HTTP/1.1 and HTTP/2 without TLS (h2c,
	// with prior knowledge).
	TLS *tls.Config
	// IdleTimeout closes a keep-alive connection idle that long (0: two
	// minutes).
	IdleTimeout time.Duration
	Log         *slog.Logger
}

// Server serves the decision API.
type Server struct {
	cfg   Config
	http  *http.Server
	stats stats
}

// maxHeaderBytes bounds a request's headers: the API reads two of them.
const maxHeaderBytes = 64 << 10

// The endpoints.
const (
	pathDecide = "/v1/decide"
	pathSettle = "/v1/settle"
)

// New returns the Server cfg describes.
func New(cfg Config) *Server {
	if cfg.IdleTimeout <= 0 {
		cfg.IdleTimeout = 2 * time.Minute
	}
	if cfg.Log == nil {
		cfg.Log = slog.New(slog.DiscardHandler)
	}
	s := &Server{cfg: cfg}
	var protocols http.Protocols
	protocols.SetHTTP1(true)
	protocols.SetHTTP2(true)
	protocols.SetUnencryptedHTTP2(cfg.TLS == nil)
	s.http = &http.Server{
		Handler: s.Handler(), Protocols: &protocols, TLSConfig: cfg.TLS,
		ReadHeaderTimeout: 10 * time.Second, IdleTimeout: cfg.IdleTimeout, MaxHeaderBytes: maxHeaderBytes,
		ErrorLog: slog.NewLogLogger(cfg.Log.Handler(), slog.LevelDebug),
	}
	return s
}

// Handler is the API's routes.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.Handle(pathDecide, s.endpoint(endpointDecide, s.decide))
	mux.Handle(pathSettle, s.endpoint(endpointSettle, s.settle))
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.stats.count(endpointOther, writeProblem(w, withStatus(http.StatusNotFound,
			errors.New("no such endpoint: POST "+pathDecide+" or "+pathSettle))), 0)
	})
	return mux
}

// Serve serves on ln until Shutdown; it returns nil after Shutdown.
func (s *Server) Serve(ln net.Listener) error {
	var err error
	if s.cfg.TLS != nil {
		err = s.http.ServeTLS(ln, "", "")
	} else {
		err = s.http.Serve(ln)
	}
	if errors.Is(err, http.ErrServerClosed) {
		return nil
	}
	return err
}

// Shutdown stops taking requests and waits, until ctx ends, for those in
// progress; then it closes the connections left.
func (s *Server) Shutdown(ctx context.Context) error {
	err := s.http.Shutdown(ctx)
	if err != nil {
		s.http.Close()
	}
	return err
}

// handler answers one endpoint's request as r's user, returning the status
// it answered.
type handler func(w http.ResponseWriter, r *http.Request, u *acl.User) int

// endpoint wraps h with what every endpoint does first: POST, JSON,
// authentication; and counts and times it.
func (s *Server) endpoint(e endpointID, h handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		start := time.Now()
		status := s.serve(w, r, h)
		s.stats.count(e, status, time.Since(start))
	})
}

// serve checks r and runs h.
func (s *Server) serve(w http.ResponseWriter, r *http.Request, h handler) int {
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		return writeProblem(w, withStatus(http.StatusMethodNotAllowed, errors.New("this endpoint takes POST")))
	}
	if ct := r.Header.Get("Content-Type"); !jsonMedia(ct) {
		return writeProblem(w, withStatus(http.StatusUnsupportedMediaType,
			errors.New("the body must be JSON: Content-Type: application/json, not "+quoted(ct))))
	}
	u, err := s.authenticate(r)
	if err != nil {
		return writeProblem(w, err)
	}
	r.Body = &limitedBody{r: http.MaxBytesReader(w, r.Body, s.cfg.MaxBodyLen), max: s.cfg.MaxBodyLen}
	return h(w, r, u)
}

// jsonMedia reports whether a Content-Type is JSON's.
func jsonMedia(ct string) bool {
	media, _, err := mime.ParseMediaType(ct)
	return err == nil && media == "application/json"
}

// quoted is s for an error, "none" when empty.
func quoted(s string) string {
	if s == "" {
		return "none"
	}
	return `"` + s + `"`
}

// limitedBody turns http.MaxBytesReader's error into one that says the
// bound.
type limitedBody struct {
	r   io.ReadCloser
	max int64
}

func (b *limitedBody) Read(p []byte) (int, error) {
	n, err := b.r.Read(p)
	var tooBig *http.MaxBytesError
	if errors.As(err, &tooBig) {
		return n, &tooLargeError{max: b.max}
	}
	return n, err
}

func (b *limitedBody) Close() error { return b.r.Close() }
