package rls

import (
	"crypto/sha256"
	"log/slog"
	"sync"
	"time"
)

// Watcher loads the config at a path again when its files change, and when
// asked to (Reload: rlserver asks on SIGHUP). It looks every interval at
// the files a load would read, by content, so that an editor's rename, a
// Kubernetes ConfigMap's symlink swap and a file copied over in place are
// all seen. A new config goes through Load's checks; one that fails them is
// refused, the old one kept, and the fault logged with its file and line
// (and counted in ServiceStats.ConfigErrors); it is not retried until the
// files change again.
type Watcher struct {
	path     string
	svc      *Service
	log      *slog.Logger
	interval time.Duration

	mu   sync.Mutex // one load at a time
	seen [sha256.Size]byte
	stop chan struct{}
	done chan struct{}
}

// NewWatcher returns a watcher of path that installs what it loads in svc.
// The config svc holds is taken to be path's as it is now.
func NewWatcher(path string, svc *Service, interval time.Duration, log *slog.Logger) *Watcher {
	w := &Watcher{path: path, svc: svc, log: log, interval: interval, stop: make(chan struct{}), done: make(chan struct{})}
	w.seen, _ = fingerprint(path)
	return w
}

// Start watches in the background until Close.
func (w *Watcher) Start() {
	go func() {
		defer close(w.done)
		t := time.NewTicker(w.interval)
		defer t.Stop()
		for {
			select {
			case <-w.stop:
				return
			case <-t.C:
				w.check()
			}
		}
	}()
}

// Close stops watching.
func (w *Watcher) Close() {
	close(w.stop)
	<-w.done
}

// check reloads when the files differ from the ones last loaded or refused.
func (w *Watcher) check() {
	sum, err := fingerprint(w.path)
	if err != nil {
		return // gone for a moment (a swap in progress): look again later
	}
	w.mu.Lock()
	changed := sum != w.seen
	w.mu.Unlock()
	if changed {
		w.Reload("the files changed")
	}
}

// Reload loads the config now and installs it, or keeps the old one and
// returns why not. why is logged with the outcome.
func (w *Watcher) Reload(why string) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	sum, _ := fingerprint(w.path)
	w.seen = sum // a refused config is not tried again until it changes
	cfg, err := Load(w.path)
	if err != nil {
		w.svc.svc.configErrors.Add(1)
		w.log.Error("rate limit config not reloaded: the previous one stays in force", "why", why, "path", w.path, "err", err)
		return err
	}
	w.svc.SetConfig(cfg)
	w.log.Info("rate limit config reloaded", "why", why, "path", w.path, "domains", cfg.Domains(), "rules", cfg.Rules())
	return nil
}

// fingerprint hashes the names and contents of the files Load would read
// at path.
func fingerprint(path string) ([sha256.Size]byte, error) {
	var sum [sha256.Size]byte
	files, err := configFiles(path)
	if err != nil {
		return sum, err
	}
	h := sha256.New()
	for _, f := range files {
		data, err := readFile(f)
		if err != nil {
			return sum, err
		}
		h.Write([]byte(f))
		h.Write([]byte{0})
		h.Write(data)
		h.Write([]byte{0})
	}
	copy(sum[:], h.Sum(nil))
	return sum, nil
}
