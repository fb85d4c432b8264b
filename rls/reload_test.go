package rls

import (
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
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

// configMapWrite updates dir as the kubelet's atomic writer updates a
// ConfigMap volume: the files go into a new hidden directory, the ..data
// symlink is swapped to it in one rename, each file is a symlink through
// ..data (made when its key is new), the symlinks of keys gone are removed,
// and so is the directory before. gen names the new directory.
func configMapWrite(t *testing.T, dir string, gen int, files map[string]string) {
	t.Helper()
	data := filepath.Join(dir, "..data")
	old, _ := os.Readlink(data) // none at the first write
	ts := fmt.Sprintf("..2026_12_06_17_00_%02d.000000001", gen)
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	must(os.Mkdir(filepath.Join(dir, ts), 0o755))
	for name, body := range files {
		must(os.WriteFile(filepath.Join(dir, ts, name), []byte(body), 0o644))
	}
	must(os.Symlink(ts, filepath.Join(dir, "..data_tmp")))
	must(os.Rename(filepath.Join(dir, "..data_tmp"), data))
	for name := range files {
		if _, err := os.Lstat(filepath.Join(dir, name)); errors.Is(err, fs.ErrNotExist) {
			must(os.Symlink(filepath.Join("..data", name), filepath.Join(dir, name)))
		}
	}
	entries, err := os.ReadDir(dir)
	must(err)
	for _, e := range entries {
		if _, kept := files[e.Name()]; !kept && !strings.HasPrefix(e.Name(), "..") {
			must(os.Remove(filepath.Join(dir, e.Name())))
		}
	}
	if old != "" {
		must(os.RemoveAll(filepath.Join(dir, old)))
	}
}

// The Helm chart mounts the rate limit config as a ConfigMap volume (the
// whole directory, so that the kubelet updates it): a change of the
// ConfigMap, a key added to it and a key taken out of it are each loaded,
// and the file of a removed key, dangling until the kubelet removes it, is
// no fault.
func TestWatcherReloadsAConfigMapUpdate(t *testing.T) {
	dir := t.TempDir()
	configMapWrite(t, dir, 1, map[string]string{"edge.yaml": "domain: edge\n"})
	cfg, err := Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	f := newFixture(t, "domain: unused\n", Options{})
	f.svc.SetConfig(cfg)
	loads := f.svc.ServiceStats().ConfigLoads
	w := NewWatcher(dir, f.svc, 10*time.Millisecond, slog.New(slog.DiscardHandler))
	w.Start()
	defer w.Close()

	domains := func() []string { return slices.Sorted(maps.Keys(f.svc.Config().domains)) }
	steps := []struct {
		files map[string]string
		want  []string
	}{
		{map[string]string{"edge.yaml": "domain: edge2\n"}, []string{"edge2"}},
		{map[string]string{"edge.yaml": "domain: edge2\n", "api.yml": "domain: api\n"}, []string{"api", "edge2"}},
		{map[string]string{"api.yml": "domain: api\n"}, []string{"api"}},
	}
	for i, s := range steps {
		configMapWrite(t, dir, i+2, s.files)
		poll.Until(t, 5*time.Second, fmt.Sprintf("update %d loaded: domains %v", i+2, s.want), func() (bool, error) {
			return slices.Equal(domains(), s.want), nil
		})
	}
	if s := f.svc.ServiceStats(); s.ConfigErrors != 0 || s.ConfigLoads != loads+uint64(len(steps)) {
		t.Fatalf("after %d ConfigMap updates: %+v", len(steps), s)
	}
}
