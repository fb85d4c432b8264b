package main

import (
	"crypto/tls"
	"crypto/x509"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"time"

	"github.com/rlserver/rlserver/backup"
)

// rlserver backup --addr HOST:PORT --out FILE takes every shard's state from
// a running node or cluster, each at one committed index, into one
// checksummed file (package backup has its format).

// backupSettings are rlserver backup's flags.
type backupSettings struct {
	addr, out         string
	user, pass        string
	tls               bool
	caCert, cert, key string
	timeout, retryFor time.Duration
	quiet             bool
}

// runBackup is `rlserver backup`; it returns the exit status.
func runBackup(args []string, stdout, stderr io.Writer, lookupEnv func(string) (string, bool)) int {
	fs := flag.NewFlagSet("rlserver backup", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var s backupSettings
	fs.StringVar(&s.addr, "addr", "127.0.0.1:6380", "host:port of any node of the cluster")
	fs.StringVar(&s.out, "out", "", "the backup file to write (required); written as FILE.partial, renamed once complete")
	fs.StringVar(&s.user, "user", "", "user to authenticate as (ACL); default: the default user")
	fs.StringVar(&s.pass, "pass", "", "password (also RLSERVER_BACKUP_PASSWORD or REDISCLI_AUTH, which keep it off the command line)")
	fs.BoolVar(&s.tls, "tls", false, "connect with TLS")
	fs.StringVar(&s.caCert, "cacert", "", "CA certificates (PEM) to check the server's certificate with")
	fs.StringVar(&s.cert, "cert", "", "client certificate (PEM), for --tls-auth-clients")
	fs.StringVar(&s.key, "key", "", "client certificate's key (PEM)")
	fs.DurationVar(&s.timeout, "timeout", 30*time.Second, "longest wait for a reply, or for the next bytes of a shard")
	fs.DurationVar(&s.retryFor, "retry-for", 30*time.Second, "how long to retry a shard that has no leader (an election)")
	fs.BoolVar(&s.quiet, "quiet", false, "no progress, only the summary")
	fs.Usage = func() {
		fmt.Fprintln(stderr, "Usage: rlserver backup --addr HOST:PORT --out FILE [flags]")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 || s.out == "" {
		fmt.Fprintln(stderr, "rlserver backup: --out FILE is required, and takes no arguments")
		return 2
	}
	if s.pass == "" {
		for _, env := range []string{"RLSERVER_BACKUP_PASSWORD", "REDISCLI_AUTH"} {
			if v, ok := lookupEnv(env); ok && v != "" {
				s.pass = v
				break
			}
		}
	}
	src := &backup.Source{User: s.user, Password: s.pass, Timeout: s.timeout}
	if s.tls || s.caCert != "" || s.cert != "" {
		cfg, err := clientTLS(s.caCert, s.cert, s.key)
		if err != nil {
			fmt.Fprintln(stderr, "rlserver backup:", err)
			return 2
		}
		src.TLS = cfg
	}
	defer src.Close()
	p := progress{w: stderr, live: !s.quiet && isTerminal(stderr), quiet: s.quiet}
	start := time.Now()
	size, shards, err := takeBackup(src, s, &p)
	if err != nil {
		p.done()
		fmt.Fprintln(stderr, "rlserver backup:", err)
		return 1
	}
	p.done()
	fmt.Fprintf(stdout, "backup of %d shards from %s written to %s: %s in %.1f s\n",
		shards, s.addr, s.out, humanSize(size), time.Since(start).Seconds())
	return 0
}

// takeBackup writes the backup to s.out.partial, checks it, and renames it
// to s.out. It returns the file's size and the shard count.
func takeBackup(src *backup.Source, s backupSettings, p *progress) (int64, int, error) {
	shards, err := src.Shards(s.addr)
	if err != nil {
		return 0, 0, err
	}
	tmp := s.out + ".partial"
	f, err := os.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		return 0, 0, err
	}
	ok := false
	defer func() {
		if !ok {
			f.Close()
			os.Remove(tmp)
		}
	}()
	w, err := backup.NewWriter(f, backup.Header{CreatedMs: time.Now().UnixMilli(), Shards: shards, Source: s.addr, Release: version})
	if err != nil {
		return 0, 0, err
	}
	for shard := range shards {
		err := src.Fetch(s.addr, shard, s.retryFor, func(sec backup.Shard, frame io.Reader) error {
			p.shard(shard, shards, sec)
			return w.WriteShard(sec, p.counting(frame))
		})
		if err != nil {
			return 0, 0, fmt.Errorf("shard %d: %w", shard, err)
		}
		p.shardDone()
	}
	if err := w.Close(); err != nil {
		return 0, 0, err
	}
	if err := f.Sync(); err != nil {
		return 0, 0, err
	}
	size, _ := f.Seek(0, io.SeekCurrent)
	if err := f.Close(); err != nil {
		return 0, 0, err
	}
	// Read it back: a file that does not check is never left in place.
	rf, err := os.Open(tmp)
	if err != nil {
		return 0, 0, err
	}
	_, _, err = backup.Verify(rf)
	rf.Close()
	if err != nil {
		return 0, 0, fmt.Errorf("the file written does not check: %w", err)
	}
	if err := os.Rename(tmp, s.out); err != nil {
		return 0, 0, err
	}
	ok = true
	return size, shards, nil
}

// clientTLS is the TLS configuration of --cacert, --cert and --key.
func clientTLS(caFile, certFile, keyFile string) (*tls.Config, error) {
	cfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		cfg.RootCAs = x509.NewCertPool()
		if !cfg.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("--cacert %s: no certificate", caFile)
		}
	}
	if certFile != "" || keyFile != "" {
		cert, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, fmt.Errorf("--cert/--key: %w", err)
		}
		cfg.Certificates = []tls.Certificate{cert}
	}
	return cfg, nil
}

// progress reports a backup's progress: a line rewritten in place on a
// terminal, a line per shard otherwise.
type progress struct {
	w          io.Writer
	live       bool
	quiet      bool // nothing but the summary
	shardN     int
	shards     int
	total      int64
	read       int64
	sec        backup.Shard
	lastRedraw time.Time
}

func (p *progress) shard(shard, shards int, sec backup.Shard) {
	p.shardN, p.shards, p.sec, p.total, p.read = shard, shards, sec, sec.Size, 0
	p.redraw(true)
}

func (p *progress) shardDone() {
	p.read = p.total
	p.redraw(true)
	if !p.live && !p.quiet {
		fmt.Fprintf(p.w, "shard %d/%d: index %d, shard time %s, %s\n", p.shardN+1, p.shards, p.sec.Index,
			time.UnixMilli(p.sec.TimeMs).UTC().Format(time.RFC3339Nano), humanSize(p.sec.Size))
	}
}

func (p *progress) done() {
	if p.live {
		fmt.Fprintln(p.w)
	}
}

func (p *progress) redraw(force bool) {
	if !p.live || (!force && time.Since(p.lastRedraw) < 100*time.Millisecond) {
		return
	}
	p.lastRedraw = time.Now()
	pct := 100.0
	if p.total > 0 {
		pct = 100 * float64(p.read) / float64(p.total)
	}
	fmt.Fprintf(p.w, "\rshard %d/%d at index %d: %s of %s (%3.0f%%)   ", p.shardN+1, p.shards, p.sec.Index,
		humanSize(p.read), humanSize(p.total), pct)
}

func (p *progress) counting(r io.Reader) io.Reader { return &countingReader{r: r, p: p} }

type countingReader struct {
	r io.Reader
	p *progress
}

func (c *countingReader) Read(b []byte) (int, error) {
	n, err := c.r.Read(b)
	c.p.read += int64(n)
	c.p.redraw(false)
	return n, err
}

// isTerminal reports whether w is a terminal (a character device).
func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	fi, err := f.Stat()
	return err == nil && fi.Mode()&os.ModeCharDevice != 0
}

func humanSize(n int64) string {
	switch {
	case n >= 1<<30:
		return fmt.Sprintf("%.2f GB", float64(n)/(1<<30))
	case n >= 1<<20:
		return fmt.Sprintf("%.1f MB", float64(n)/(1<<20))
	case n >= 1<<10:
		return fmt.Sprintf("%.1f KB", float64(n)/(1<<10))
	}
	return strconv.FormatInt(n, 10) + " B"
}
