package tests

import (
	"bufio"
	"bytes"
	"context"
	"debug/buildinfo"
	"debug/elf"
	"encoding/json"
	"fmt"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"
	"github.com/rlserver/rlserver/internal/poll"
)

// The image, as deploy/build-image builds it (Dockerfile at the repository's
// root), and as a user runs it: tests/containers_test.go has the podman
// helpers.

// maxImageSize is issue 43's bound on the image: 25 MB, as podman counts
// (10^6 bytes).
const maxImageSize = 25_000_000

// The image is small, runs as 65532:65532 with /data as its volume, says
// what it is in the OCI labels, exposes the client, bus, metrics and gRPC
// ports, runs /rlserver with the container's defaults in its environment,
// checks its health with rlserver itself, and holds nothing but the binary
// (static, trimmed, naming its version and commit) and /data.
func TestImageIsSmallNonRootAndOnlyTheBinary(t *testing.T) {
	t.Parallel()
	img := sharedImage(t)
	t.Logf("deploy/build-image took %v:\n%s", img.Took.Round(100*time.Millisecond), img.Output)
	for _, arch := range []string{"amd64", "arm64"} {
		if !strings.Contains(img.Output, "binary linux/"+arch+": ") || !strings.Contains(img.Output, "GOARCH="+arch) {
			t.Errorf("deploy/build-image did not build and check the %s binary:\n%s", arch, img.Output)
		}
	}
	info := inspectImage(t, img.Tag)
	t.Logf("image %s: %d bytes (%.1f MB), %d layers", img.Tag, info.Size, float64(info.Size)/1e6, len(info.RootFS.Layers))
	if info.Size >= maxImageSize {
		t.Errorf("image size %d bytes, want under %d", info.Size, maxImageSize)
	}
	if info.Os != "linux" || info.Architecture != runtime.GOARCH {
		t.Errorf("image for %s/%s, want linux/%s", info.Os, info.Architecture, runtime.GOARCH)
	}
	cfg := info.Config
	if cfg.User != "65532:65532" {
		t.Errorf("user %q, want 65532:65532", cfg.User)
	}
	if !slices.Equal(cfg.Entrypoint, []string{"/rlserver"}) || len(cfg.Cmd) != 0 {
		t.Errorf("entrypoint %q and cmd %q, want [/rlserver] and none (the defaults are in the environment)", cfg.Entrypoint, cfg.Cmd)
	}
	for _, env := range []string{"RLSERVER_BIND=0.0.0.0", "RLSERVER_DATA_DIR=/data", "RLSERVER_LOG_FORMAT=json", "RLSERVER_LOG_OUTPUT=stdout", "RLSERVER_METRICS_PORT=9380"} {
		if !slices.Contains(cfg.Env, env) {
			t.Errorf("environment %q lacks %s", cfg.Env, env)
		}
	}
	if slices.ContainsFunc(cfg.Env, func(e string) bool { return strings.HasPrefix(e, "RLSERVER_PROTECTED_MODE=") }) {
		t.Errorf("environment %q changes protected mode", cfg.Env)
	}
	for _, port := range []string{"6380/tcp", "16380/tcp", "9380/tcp", "8081/tcp"} {
		if _, ok := cfg.ExposedPorts[port]; !ok {
			t.Errorf("exposed ports %v lack %s", cfg.ExposedPorts, port)
		}
	}
	if _, ok := cfg.Volumes["/data"]; !ok || len(cfg.Volumes) != 1 {
		t.Errorf("volumes %v, want /data alone", cfg.Volumes)
	}
	if !slices.Equal(info.Healthcheck.Test, []string{"CMD", "/rlserver", "health"}) {
		t.Errorf("healthcheck %q, want [CMD /rlserver health] (built with --format docker?)", info.Healthcheck.Test)
	}
	if cfg.StopSignal != "SIGTERM" {
		t.Errorf("stop signal %q, want SIGTERM", cfg.StopSignal)
	}
	revision := gitRevision(t)
	want := map[string]string{
		"org.opencontainers.image.title":    "rlserver",
		"org.opencontainers.image.version":  img.Version,
		"org.opencontainers.image.revision": revision,
		"org.opencontainers.image.source":   "https://github.com/rlserver/rlserver",
		"org.opencontainers.image.licenses": "NOASSERTION",
	}
	for name, value := range want {
		if got := cfg.Labels[name]; got != value {
			t.Errorf("label %s = %q, want %q", name, got, value)
		}
	}
	if d := cfg.Labels["org.opencontainers.image.description"]; d == "" {
		t.Error("no org.opencontainers.image.description label")
	}
	if c, err := time.Parse(time.RFC3339, cfg.Labels["org.opencontainers.image.created"]); err != nil || time.Since(c) > time.Hour {
		t.Errorf("label org.opencontainers.image.created = %q: want the build's time (%v)", cfg.Labels["org.opencontainers.image.created"], err)
	}

	root, files := imageFiles(t, img.Tag)
	wantFiles := map[string]imageFile{
		"/":         {dir: true, mode: 0o555, uid: 0, gid: 0},
		"/rlserver": {mode: 0o755, uid: 0, gid: 0},
		"/data":     {dir: true, mode: 0o755, uid: 65532, gid: 65532},
	}
	for path, f := range files {
		w, ok := wantFiles[path]
		if !ok {
			t.Errorf("the image holds %s (%+v): want only /rlserver and /data", path, f)
			continue
		}
		if f.dir != w.dir || f.uid != w.uid || f.gid != w.gid || (path != "/" && f.mode != w.mode) {
			t.Errorf("%s: %+v, want %+v", path, f, w)
		}
	}
	for path := range wantFiles {
		if _, ok := files[path]; !ok {
			t.Errorf("the image lacks %s", path)
		}
	}
	checkBinary(t, filepath.Join(root, "rlserver"), runtime.GOARCH, img.Version, revision)
}

// The image serves as its documentation says to run it: a password from the
// environment, a named volume at /data, the client port published on
// 127.0.0.1, under a restricted profile (read-only, no capabilities). It
// answers PING and RL.SLIDING there, names its version and commit, passes
// its HEALTHCHECK, logs JSON on its standard output, stops cleanly on SIGTERM, and comes back on
// its volume with the count it had. Without a password, protected mode
// refuses clients from outside the container; with the password in a
// mounted config file (a secret), it serves and passes its HEALTHCHECK.
func TestImageServesWithAPassword(t *testing.T) {
	t.Parallel()
	img := sharedImage(t)
	ctx := context.Background()
	began := time.Now()
	step := func(what string) {
		t.Logf("%-44s %6.1fs", what, time.Since(began).Seconds())
	}
	password := fmt.Sprintf("e2e-%d", time.Now().UnixNano())
	c := startContainer(t, containerSpec{
		Name:        "single",
		Image:       img.Tag,
		Env:         map[string]string{"RLSERVER_REQUIREPASS": password},
		Volumes:     []string{newVolume(t, "single-data") + ":/data"},
		Publish:     []int{6380},
		StopTimeout: 30 * time.Second,
		Extra:       []string{"--read-only", "--cap-drop", "ALL", "--security-opt", "no-new-privileges"},
	})
	rc := c.Client(t, 6380, password)
	waitPong(t, rc, c.Addr(6380))
	step("started, PONG through 127.0.0.1")

	got, err := rc.Do(ctx, "RL.SLIDING", "e2e", 10, 60000).Int64Slice()
	if err != nil || len(got) != 5 || got[0] != 1 || got[1] != 10 || got[2] != 9 {
		t.Fatalf("RL.SLIDING e2e 10 60000: %v %v, want allowed with 9 remaining", got, err)
	}
	anonymous := redis.NewClient(&redis.Options{Addr: c.Addr(6380), Protocol: 2, MaxRetries: -1})
	defer anonymous.Close()
	if err := anonymous.Ping(ctx).Err(); err == nil || !strings.Contains(err.Error(), "NOAUTH") {
		t.Errorf("PING without the password: %v, want NOAUTH", err)
	}
	step("RL.SLIDING; NOAUTH without the password")

	line := c.Exec(t, "/rlserver", "version")
	if want := fmt.Sprintf("rlserver %s (commit %s", img.Version, shortRevision(gitRevision(t))); !strings.HasPrefix(line, want) {
		t.Errorf("rlserver version in the container: %q, want it to start with %q", line, want)
	}
	if health := c.WaitHealthy(t, time.Minute); health != "healthy" {
		t.Errorf("health after the HEALTHCHECK passed: %q", health)
	}
	step("rlserver version; HEALTHCHECK passes")

	code, took := c.Stop(t, 30*time.Second)
	logs, errs := c.LogStreams(t)
	if code != 0 {
		t.Fatalf("exit %d after SIGTERM (%v); stdout:\n%s\nstderr:\n%s", code, took, logs, errs)
	}
	// The log is JSON on standard output (RLSERVER_LOG_OUTPUT=stdout),
	// where log collectors look for it, and nothing is on standard error.
	msgs := jsonLogMessages(t, logs)
	for _, want := range []string{"rlserver ready", "shutting down", "stopped"} {
		if !slices.Contains(msgs, want) {
			t.Errorf("no %q in the JSON log on the container's standard output; stdout:\n%s\nstderr:\n%s", want, logs, errs)
		}
	}
	if errs != "" {
		t.Errorf("the container wrote on its standard error, want nothing there:\n%s", errs)
	}
	step(fmt.Sprintf("SIGTERM: exit 0 in %.1fs; JSON log on stdout", took.Seconds()))

	podman(t, "start", c.Name)
	waitPong(t, rc, c.Addr(6380))
	got, err = rc.Do(ctx, "RL.SLIDING", "e2e", 10, 60000).Int64Slice()
	if err != nil || len(got) != 5 || got[2] != 8 {
		t.Errorf("RL.SLIDING after a restart on the volume: %v %v, want 8 remaining", got, err)
	}
	step("restarted on its volume, the count kept")

	open := startContainer(t, containerSpec{Name: "nopass", Image: img.Tag, Publish: []int{6380}})
	poll.Until(t, time.Minute, "protected mode to refuse a client from outside the container", func() (bool, error) {
		greeting, err := firstLine(open.Addr(6380))
		return strings.HasPrefix(greeting, "-DENIED rlserver is running in protected mode"), err
	})
	step("without a password: DENIED (protected mode)")

	secret := filepath.Join(t.TempDir(), "rlserver.conf")
	if err := os.WriteFile(secret, []byte(fmt.Sprintf("requirepass %q\n", password+" from a file")), 0o644); err != nil {
		t.Fatal(err)
	}
	fromFile := startContainer(t, containerSpec{
		Name:    "secret",
		Image:   img.Tag,
		Args:    []string{"--config", "/run/secrets/rlserver.conf"},
		Volumes: []string{secret + ":/run/secrets/rlserver.conf:ro"},
		Publish: []int{6380},
	})
	waitPong(t, fromFile.Client(t, 6380, password+" from a file"), fromFile.Addr(6380))
	if health := fromFile.WaitHealthy(t, time.Minute); health != "healthy" {
		t.Errorf("health with the password in a config file: %q", health)
	}
	step("password from a secret file (--config): PONG, healthy")
}

// An arm64 image builds on any machine (FROM scratch needs no emulation),
// and holds an arm64 binary.
func TestImageForArm64(t *testing.T) {
	t.Parallel()
	sharedImage(t) // its build compiled the arm64 binary: this one only links it
	img, err := buildImage(owned+"/rlserver:arm64", "arm64", "arm64")
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("deploy/build-image took %v:\n%s", img.Took.Round(100*time.Millisecond), img.Output)
	info := inspectImage(t, img.Tag)
	if info.Os != "linux" || info.Architecture != "arm64" {
		t.Errorf("image for %s/%s, want linux/arm64", info.Os, info.Architecture)
	}
	if info.Size >= maxImageSize {
		t.Errorf("image size %d bytes, want under %d", info.Size, maxImageSize)
	}
	root, _ := imageFiles(t, img.Tag)
	checkBinary(t, filepath.Join(root, "rlserver"), "arm64", img.Version, gitRevision(t))
}

// firstLine connects to addr and returns the first line the server sends
// unasked (protected mode's refusal), without waiting more than a second.
func firstLine(addr string) (string, error) {
	conn, err := net.DialTimeout("tcp", addr, time.Second)
	if err != nil {
		return "", err
	}
	defer conn.Close()
	conn.SetReadDeadline(time.Now().Add(time.Second))
	return bufio.NewReader(conn).ReadString('\n')
}

// waitPong waits until rc answers PING with PONG.
func waitPong(t *testing.T, rc *redis.Client, addr string) {
	t.Helper()
	poll.Until(t, time.Minute, "PONG from "+addr, func() (bool, error) {
		pong, err := rc.Ping(context.Background()).Result()
		return pong == "PONG", err
	})
}

// imageFile is one file of an image, as imageFiles reads it.
type imageFile struct {
	dir      bool
	mode     fs.FileMode // permission bits
	uid, gid uint32
}

// imageFiles mounts the image (unmounted when the test ends) and returns
// its root and its files by path from /.
func imageFiles(t *testing.T, tag string) (root string, files map[string]imageFile) {
	t.Helper()
	root = podman(t, "image", "mount", tag)
	t.Cleanup(func() { podmanErr(podmanTimeout, "image", "unmount", tag) })
	files = map[string]imageFile{}
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		st, ok := fi.Sys().(*syscall.Stat_t)
		if !ok {
			return fmt.Errorf("%s: no owner", path)
		}
		rel, _ := filepath.Rel(root, path)
		files[filepath.Join("/", rel)] = imageFile{dir: d.IsDir(), mode: fi.Mode().Perm(), uid: st.Uid, gid: st.Gid}
		return nil
	})
	if err != nil {
		t.Fatalf("reading the image %s: %v", tag, err)
	}
	return root, files
}

// checkBinary checks the image's rlserver: an ELF executable for arch,
// static (no interpreter), built by deploy/build-image's command (no cgo,
// -trimpath, symbols stripped, the version and commit set).
func checkBinary(t *testing.T, path, arch, version, revision string) {
	t.Helper()
	machine := map[string]elf.Machine{"amd64": elf.EM_X86_64, "arm64": elf.EM_AARCH64}[arch]
	f, err := elf.Open(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	defer f.Close()
	if f.Machine != machine {
		t.Errorf("%s is for %v, want %v", path, f.Machine, machine)
	}
	for _, p := range f.Progs {
		if p.Type == elf.PT_INTERP {
			t.Errorf("%s has an interpreter: not static", path)
		}
	}
	if f.Section(".symtab") != nil {
		t.Errorf("%s has a symbol table: not built with -s", path)
	}
	info, err := buildinfo.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	settings := map[string]string{}
	for _, s := range info.Settings {
		settings[s.Key] = s.Value
	}
	for key, want := range map[string]string{"GOOS": "linux", "GOARCH": arch, "CGO_ENABLED": "0", "-trimpath": "true"} {
		if settings[key] != want {
			t.Errorf("%s was built with %s=%q, want %q", path, key, settings[key], want)
		}
	}
	// -trimpath keeps -ldflags out of the build information: look for what
	// -X set in the binary's data instead.
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{version, shortRevision(revision)} {
		if !bytes.Contains(data, []byte(want)) {
			t.Errorf("%s does not hold %q (-X main.version, main.commit)", path, want)
		}
	}
}

// jsonLogMessages parses a log written with --log-format json, failing the
// test on a line that is not a JSON object with a message, and returns the
// messages in order.
func jsonLogMessages(t *testing.T, log string) []string {
	t.Helper()
	var msgs []string
	for _, line := range strings.Split(strings.TrimSpace(log), "\n") {
		var rec struct {
			Msg string `json:"msg"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil || rec.Msg == "" {
			t.Errorf("a log line that is not JSON with a msg: %q (%v)", line, err)
			continue
		}
		msgs = append(msgs, rec.Msg)
	}
	return msgs
}

// gitRevision is the checkout's commit, as deploy/build-image labels the
// image with it: "unknown" outside a git checkout.
func gitRevision(t *testing.T) string {
	t.Helper()
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}
	out, err := exec.Command("git", "-C", root, "rev-parse", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	return strings.TrimSpace(string(out))
}

// shortRevision is the commit as rlserver version names it: 12 digits.
func shortRevision(rev string) string {
	if len(rev) > 12 {
		return rev[:12]
	}
	return rev
}
