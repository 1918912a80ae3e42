package kind_test

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// touches matches the calls of an own-daemon run that change something:
// the daemon, its rules, its network, a cluster, the footprint it saves
// before starting the daemon.
const touches = `^(dockerd|iptables|kind|docker (network|run|build|load|exec)|go .*footprint)( |$)`

// ownCache makes the prepared cache an own-daemon run needs under the
// runScript's CSISIM_CACHE, as prepare.sh leaves it, and returns its
// kind/v1.37.2 directory.
func ownCache(t *testing.T, dir string) string {
	t.Helper()
	cache := filepath.Join(dir, "cache", "kind", "v1.37.2")
	if err := os.MkdirAll(filepath.Join(cache, "docker"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(cache, "READY"), nil, 0o644); err != nil {
		t.Fatal(err)
	}
	// crane, the run's registry, from the cache's bin; no kind there, so
	// a run that gets past the checks stops at the cluster.
	bin := filepath.Join(dir, "cache", "realkube", "v1.37.2", "bin")
	if err := os.MkdirAll(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	crane := "#!/usr/bin/env bash\nprintf '%s\\n' \"crane $*\" >>\"$FAKE_LOG\"\n"
	if err := os.WriteFile(filepath.Join(bin, "crane"), []byte(crane), 0o755); err != nil {
		t.Fatal(err)
	}
	return cache
}

// An own-daemon run (no daemon answers) stops with exit 2 and a message
// saying what is taken, before it saves the footprint, starts a daemon,
// adds a rule or makes a network: a subnet or port in use, a daemon of
// another run, a cluster of the same name left in the cache's data root,
// no root, no prepared cache. With nothing taken it goes on (the control
// case: the checks can pass).
func TestRunShOwnModeRefusesWhatIsTaken(t *testing.T) {
	tests := []struct {
		name     string
		env      []string
		leftover string // a container of this name in the data root
		noCache  bool
		want     string // "" : the checks pass
	}{
		{name: "nothing taken"},
		{name: "subnet has an address here", env: []string{"FAKE_ADDR=10.213.0.7/24"}, want: "the subnet 10.213.0.0/24 is in use on this machine"},
		{name: "subnet routed elsewhere", env: []string{"FAKE_ROUTE_DEV=br-other"}, want: "the subnet 10.213.0.0/24 is in use on this machine"},
		{name: "other subnet chosen is free", env: []string{"FAKE_ADDR=10.213.0.7/24", "KIND_SUBNET=10.214.0.0/24", "KIND_GATEWAY=10.214.0.1"}},
		{name: "subnet not a /24", env: []string{"KIND_SUBNET=10.213.0.0/16"}, want: "want a /24 ending in .0/24 and its .1"},
		{name: "API port in use", env: []string{"FAKE_PORTS_IN_USE=6445"}, want: "port 6445 is in use"},
		{name: "registry port in use", env: []string{"FAKE_PORTS_IN_USE=5310"}, want: "port 5310 is in use"},
		{name: "other ports chosen are free", env: []string{"FAKE_PORTS_IN_USE=6445 5310", "KIND_API_PORT=6446", "KIND_REGISTRY_PORT=5311"}},
		{name: "another run's daemon", env: []string{"FAKE_PGREP_RC=0"}, want: "a Docker daemon of another e2e-kind run is running"},
		{name: "same-name cluster left in the data root", leftover: "csisim-e2e-control-plane", want: "holds the containers of a kind cluster named csisim-e2e"},
		{name: "other-name cluster left in the data root", leftover: "other-control-plane"},
		{name: "cache not prepared", noCache: true, want: "the kind cache is not prepared"},
		{name: "not root", env: []string{"FAKE_UID=1000"}, want: "a daemon of the run's own needs root"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := t.TempDir()
			if !tt.noCache {
				cache := ownCache(t, dir)
				if tt.leftover != "" {
					c := filepath.Join(cache, "docker", "containers", "0123abcd")
					if err := os.MkdirAll(c, 0o755); err != nil {
						t.Fatal(err)
					}
					cfg := `{"ID":"0123abcd","Name":"/` + tt.leftover + `","State":{}}`
					if err := os.WriteFile(filepath.Join(c, "config.v2.json"), []byte(cfg), 0o644); err != nil {
						t.Fatal(err)
					}
				}
			}
			env := append([]string{"FAKE_DOCKER_INFO_RC=1", "CSISIM_CACHE=" + filepath.Join(dir, "cache")}, tt.env...)
			res := runScript(t, nil, env...)
			if tt.want == "" {
				// Past the checks: the footprint is saved first.
				if res.code == 2 || index(res.calls, `^go .*/footprint save `) < 0 {
					t.Fatalf("exit code %d, footprint not saved: the checks did not pass; output:\n%s", res.code, res.stderr)
				}
				return
			}
			if res.code != 2 {
				t.Errorf("exit code %d, want 2; output:\n%s", res.code, res.stderr)
			}
			if !strings.Contains(res.stderr, tt.want) {
				t.Errorf("output does not say %q:\n%s", tt.want, res.stderr)
			}
			if i := index(res.calls, touches); i >= 0 {
				t.Errorf("touched the machine before refusing: %s", res.calls[i])
			}
		})
	}
}

// make e2e-kind-prepare on a machine with no Docker and no apt-get to
// install it: exit 2, saying what to install, and the cache untouched.
func TestPrepareShNoWayToInstallDocker(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "bin")
	if err := os.Mkdir(bin, 0o755); err != nil {
		t.Fatal(err)
	}
	// Only these on PATH: no dockerd, no apt-get (the machine's own would
	// be found in its /usr/bin), root by a fake id.
	for _, tool := range []string{"bash", "env", "dirname", "mkdir", "rm", "date"} {
		p, err := exec.LookPath(tool)
		if err != nil {
			t.Fatalf("%s: %v", tool, err)
		}
		if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
			t.Fatal(err)
		}
	}
	for name, body := range map[string]string{"id": `echo 0`, "go": `exit 0`} {
		if err := os.WriteFile(filepath.Join(bin, name), []byte("#!/usr/bin/env bash\n"+body+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	cache := filepath.Join(dir, "cache")
	cmd := exec.Command(filepath.Join(bin, "bash"), "prepare.sh")
	cmd.Env = []string{"PATH=" + bin, "HOME=" + dir, "CSISIM_CACHE=" + cache, "GO=go"}
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != 2 {
		t.Fatalf("err %v, want exit code 2; output:\n%s", err, out)
	}
	for _, want := range []string{"docker.io", "no apt-get to install them", "install Docker Engine"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("output does not say %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(cache); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the cache was touched: %v", err)
	}
}

// An own-daemon run of the tests' takes the host lock where
// E2E_KIND_HOST_LOCK_DIR says, not the machine's: run inside a real run
// (whose e2e/kind step runs these tests) it waited for that run's lock
// until its timeout. Held here, the run waits for it and goes on once it
// is let go.
func TestRunShHostLockWhereTheTestsSay(t *testing.T) {
	dir := t.TempDir()
	lockDir := filepath.Join(dir, "held")
	if err := os.MkdirAll(lockDir, 0o755); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(filepath.Join(lockDir, "lock"), os.O_RDWR|os.O_CREATE, 0o644)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Flock(int(f.Fd()), unix.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	go func() {
		time.Sleep(3 * time.Second)
		_ = unix.Flock(int(f.Fd()), unix.LOCK_UN)
	}()
	ownCache(t, dir)
	res := runScript(t, nil, "FAKE_DOCKER_INFO_RC=1", "CSISIM_CACHE="+filepath.Join(dir, "cache"), "E2E_KIND_HOST_LOCK_DIR="+lockDir)
	if !strings.Contains(res.stderr, "waiting for the host") {
		t.Errorf("the run did not wait for the lock held in E2E_KIND_HOST_LOCK_DIR; output:\n%s", res.stderr)
	}
	if index(res.calls, `^go .*/footprint save `) < 0 {
		t.Errorf("the run did not go on once the lock was let go; output:\n%s", res.stderr)
	}
}
