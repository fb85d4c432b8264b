package rls

import (
	"errors"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/rlserver/rlserver/internal/poll"
)

// replaceFile gives path its new content as config management tools do: a
// hidden file beside it (which Load does not read), renamed over it, so that
// the watcher never reads a file half written.
func replaceFile(t *testing.T, path, content string) {
	t.Helper()
	tmp := filepath.Join(filepath.Dir(path), "."+filepath.Base(path)+".tmp")
	if err := os.WriteFile(tmp, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.Rename(tmp, path); err != nil {
		t.Fatal(err)
	}
}

// A reload installs a good config and refuses a bad one, keeping the old
// and not trying it again until the files change; the watcher sees a
// change by content.
func TestWatcherReloads(t *testing.T) {
	dir := writeConfig(t, map[string]string{"a.yaml": "domain: a\n"})
	cfg, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "domain: unused\n", Options{})
	f.svc.SetConfig(cfg)
	w := NewWatcher(dir, f.svc, 10*time.Millisecond, slog.New(slog.DiscardHandler))
	w.Start()
	defer w.Close()

	replaceFile(t, filepath.Join(dir, "b.yaml"), "domain: b\n")
	poll.Until(t, 5*time.Second, "the new file loaded", func() (bool, error) { return f.svc.Config().Domains() == 2, nil })

	replaceFile(t, filepath.Join(dir, "b.yaml"), "domain: a\n") // a duplicate domain
	poll.Until(t, 5*time.Second, "the bad config refused", func() (bool, error) {
		return f.svc.ServiceStats().ConfigErrors == 1, nil
	})
	if f.svc.Config().Domains() != 2 {
		t.Fatalf("a refused config replaced the old one")
	}
	if err := w.Reload("test"); !errors.Is(err, ErrConfig) {
		t.Fatalf("Reload of the bad files: %v", err)
	}
	loads := f.svc.ServiceStats().ConfigLoads
	replaceFile(t, filepath.Join(dir, "b.yaml"), "domain: c\n")
	poll.Until(t, 5*time.Second, "the fixed config loaded", func() (bool, error) {
		_, ok := f.svc.Config().domains["c"]
		return ok, nil
	})
	if s := f.svc.ServiceStats(); s.ConfigErrors != 2 || s.ConfigLoads != loads+1 {
		t.Fatalf("a refused config was tried again while unchanged: %+v", s)
	}
}
