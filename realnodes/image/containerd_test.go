package image

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"

	"github.com/csisim/csisim/runroot"
)

// TestContainerdImportAndRun checks archives against the real thing: a
// private containerd (the one installed at /usr/bin/containerd, with the
// configuration real nodes need on this kind of machine) imports an
// archive of the pause and workload images with ctr, lists both tags,
// and runs them: the workload twice on one volume, the second run finding
// the first's marker, both on a read-only root filesystem with the files
// the kubelet bind-mounts (/etc/hosts, /dev/termination-log) and no
// directories in the image but the binary's.
//
// It needs root, containerd, ctr and runc, takes a few seconds, and runs
// only when CSISIM_CONTAINERD_TEST=1:
//
//	CSISIM_CONTAINERD_TEST=1 go test -run Containerd -v ./realnodes/image/
//
// Everything lives under a temporary directory and goes with it —
// containerd, its shims and containers, their mounts — except what
// containerd 1.6 puts in fixed places whatever its configuration: the
// shims' sockets in /run/containerd/s. The test removes such fixed paths
// if they were not there before it ran, and logs them.
func TestContainerdImportAndRun(t *testing.T) {
	if os.Getenv("CSISIM_CONTAINERD_TEST") != "1" {
		t.Skip("set CSISIM_CONTAINERD_TEST=1 to run containerd (needs root, containerd, ctr and runc)")
	}
	for _, bin := range []string{"containerd", "ctr", "runc"} {
		if _, err := exec.LookPath(bin); err != nil {
			t.Fatalf("CSISIM_CONTAINERD_TEST=1 but %s is not on PATH: %v", bin, err)
		}
	}
	dir := t.TempDir()
	watchFixedPaths(t)

	bin := filepath.Join(dir, "csisim-workload")
	build := exec.Command(goTool(), "build", "-o", bin, "github.com/csisim/csisim/cmd/csisim-workload")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building csisim-workload: %v\n%s", err, out)
	}
	archive := filepath.Join(dir, "images.tar")
	files := map[string]string{"/csisim-workload": bin}
	if err := WriteArchive(archive,
		Image{Tag: "csisim.local/pause:v1", Entrypoint: []string{"/csisim-workload", "pause"}, Files: files},
		Image{Tag: "csisim.local/workload:v1", Entrypoint: []string{"/csisim-workload", "run"}, Files: files},
	); err != nil {
		t.Fatal(err)
	}
	if fi, err := os.Stat(archive); err == nil {
		t.Logf("archive of both images: %d bytes", fi.Size())
	}

	c := startContainerd(t, dir)
	out := c.ctr(t, "images", "import", "--platform", "linux/amd64", archive)
	t.Logf("ctr images import:\n%s", out)
	listed := c.ctr(t, "images", "ls", "-q")
	for _, tag := range []string{"csisim.local/pause:v1", "csisim.local/workload:v1"} {
		if !slices.Contains(strings.Fields(listed), tag) {
			t.Fatalf("ctr images ls -q does not list %s:\n%s", tag, listed)
		}
	}

	vol := filepath.Join(dir, "volume")
	hosts := filepath.Join(dir, "hosts")
	termLog := filepath.Join(dir, "termination-log")
	if err := os.Mkdir(vol, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{hosts, termLog} {
		if err := os.WriteFile(p, []byte("127.0.0.1 localhost\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	// What the kubelet and containerd's CRI mount into every container:
	// files in directories the image does not have.
	mounts := []string{
		"--mount", "type=bind,src=" + vol + ",dst=/data,options=rbind:rw",
		"--mount", "type=bind,src=" + hosts + ",dst=/etc/hosts,options=rbind:ro",
		"--mount", "type=bind,src=" + termLog + ",dst=/dev/termination-log,options=rbind:rw",
	}
	pod := func(uid string) []string {
		return []string{"--env", "POD_UID=" + uid, "--env", "POD_NAMESPACE=default", "--env", "POD_NAME=app-" + uid}
	}
	first := c.run(t, "w1", "csisim.local/workload:v1", slices.Concat(pod("uid-1"), mounts), "/csisim-workload", "run", "--volume", "/data=data")
	if want := "csisim-workload: /data (claim default/data): wrote marker of pod uid-1; found 0 earlier marker(s); corrupt: none"; first != want {
		t.Fatalf("first workload printed %q, want %q", first, want)
	}
	second := c.run(t, "w2", "csisim.local/workload:v1", slices.Concat(pod("uid-2"), mounts), "/csisim-workload", "run", "--volume", "/data=data")
	if want := "found 1 earlier marker(s): uid-1; corrupt: none"; !strings.HasSuffix(second, want) {
		t.Fatalf("second workload printed %q, want it to end in %q", second, want)
	}
	// The image's entrypoint, no arguments: the sandbox's pause process.
	c.run(t, "p1", "csisim.local/pause:v1", nil)
}

// containerd is a private containerd of a test.
type containerd struct {
	dir, sock string
}

// startContainerd starts containerd with everything under dir, and
// registers its teardown.
func startContainerd(t *testing.T, dir string) *containerd {
	t.Helper()
	c := &containerd{dir: dir, sock: filepath.Join(dir, "containerd.sock")}
	for _, d := range []string{"root", "state", "tmp", "opt", "cni/bin", "cni/net.d", "runc", "fifo"} {
		if err := os.MkdirAll(filepath.Join(dir, d), 0o700); err != nil {
			t.Fatal(err)
		}
	}
	cfg := filepath.Join(dir, "config.toml")
	if err := os.WriteFile(cfg, []byte(containerdConfig(dir)), 0o600); err != nil {
		t.Fatal(err)
	}
	logFile, err := os.Create(filepath.Join(dir, "containerd.log"))
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("containerd", "--config", cfg)
	cmd.Stdout, cmd.Stderr = logFile, logFile
	cmd.Env = append(os.Environ(), "TMPDIR="+filepath.Join(dir, "tmp"))
	if err := cmd.Start(); err != nil {
		logFile.Close()
		t.Fatalf("starting containerd: %v", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); logFile.Close(); close(exited) }()
	t.Cleanup(func() { c.stop(t, cmd.Process, exited) })

	deadline := time.Now().Add(15 * time.Second)
	for {
		if err := exec.Command("ctr", "--address", c.sock, "version").Run(); err == nil {
			return c
		}
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(dir, "containerd.log"))
			t.Fatalf("containerd exited:\n%s", log)
		case <-time.After(100 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatal("containerd did not answer within 15s")
		}
	}
}

// containerdConfig is a containerd configuration that keeps every path
// under dir and suits this kind of machine: no CAP_SYS_RESOURCE (so the CRI
// may not raise a container's OOM score adjustment above containerd's own),
// no AppArmor, no hugetlb cgroup, cgroupfs rather than systemd. The opt
// plugin and CNI configuration directories are moved too: containerd
// creates them (/opt/containerd, /etc/cni/net.d) otherwise.
func containerdConfig(dir string) string {
	return fmt.Sprintf(`version = 2
root = %[1]q
state = %[2]q
temp = %[3]q

[grpc]
  address = %[4]q

[ttrpc]
  address = %[5]q

[plugins."io.containerd.internal.v1.opt"]
  path = %[6]q

[plugins."io.containerd.grpc.v1.cri"]
  restrict_oom_score_adj = true
  disable_apparmor = true
  disable_hugetlb_controller = true
  sandbox_image = "csisim.local/pause:v1"
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = %[7]q
    conf_dir = %[8]q
  [plugins."io.containerd.grpc.v1.cri".containerd]
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = %[9]q
`, filepath.Join(dir, "root"), filepath.Join(dir, "state"), filepath.Join(dir, "tmp"),
		filepath.Join(dir, "containerd.sock"), filepath.Join(dir, "containerd.sock.ttrpc"),
		filepath.Join(dir, "opt"), filepath.Join(dir, "cni/bin"), filepath.Join(dir, "cni/net.d"),
		filepath.Join(dir, "runc"))
}

func (c *containerd) ctr(t *testing.T, args ...string) string {
	t.Helper()
	out, err := exec.Command("ctr", slices.Concat([]string{"--address", c.sock, "-n", "k8s.io"}, args)...).CombinedOutput()
	if err != nil {
		t.Fatalf("ctr %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// run runs a container of image with ctr run --rm until it has printed its
// first line (or, printing nothing, has run for a second), stops it with
// SIGTERM, and returns that line; the container must exit 0. The runc
// state and the stdio FIFOs stay under the test's directory (ctr's
// defaults are /run/containerd/runc and /run/containerd/fifo).
func (c *containerd) run(t *testing.T, id, image string, opts []string, args ...string) string {
	t.Helper()
	cmdArgs := slices.Concat([]string{"--address", c.sock, "-n", "k8s.io", "run", "--rm", "--read-only",
		"--fifo-dir", filepath.Join(c.dir, "fifo"), "--runc-root", filepath.Join(c.dir, "runc")}, opts, []string{image, id}, args)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, "ctr", cmdArgs...)
	pr, pw := io.Pipe()
	var all bytes.Buffer
	var mu sync.Mutex
	cmd.Stdout, cmd.Stderr = pw, pw
	if err := cmd.Start(); err != nil {
		t.Fatalf("ctr run %s: %v", id, err)
	}
	// Only the first line is awaited; the rest is kept for the failure
	// messages, and read on so that the container never blocks writing.
	lines := make(chan string, 1)
	go func() {
		s := bufio.NewScanner(pr)
		for s.Scan() {
			mu.Lock()
			all.WriteString(s.Text() + "\n")
			mu.Unlock()
			select {
			case lines <- s.Text():
			default:
			}
		}
		io.Copy(io.Discard, pr) // a line too long for the scanner
	}()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait(); pw.Close() }()

	var first string
	select {
	case first = <-lines:
	case <-time.After(time.Second):
	case err := <-exited:
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("container %s exited on its own (%v):\n%s", id, err, all.String())
	}
	// The container runs until it is told to stop, like a pod's.
	if out, err := exec.Command("ctr", "--address", c.sock, "-n", "k8s.io", "tasks", "kill", "--signal", "SIGTERM", id).CombinedOutput(); err != nil {
		t.Fatalf("ctr tasks kill %s: %v\n%s", id, err, out)
	}
	if err := <-exited; err != nil {
		mu.Lock()
		defer mu.Unlock()
		t.Fatalf("container %s, stopped with SIGTERM: %v (want exit 0):\n%s", id, err, all.String())
	}
	return first
}

// stop tears down everything the test's containerd started: its
// containers (through containerd, so that their shims exit and their
// mounts go), containerd itself, any shim left behind, and any mount under
// the test's directory.
func (c *containerd) stop(t *testing.T, p *os.Process, exited <-chan struct{}) {
	ctr := func(args ...string) string {
		out, _ := exec.Command("ctr", slices.Concat([]string{"--address", c.sock, "-n", "k8s.io", "--timeout", "10s"}, args)...).Output()
		return string(out)
	}
	for _, id := range strings.Fields(ctr("tasks", "ls", "-q")) {
		ctr("tasks", "kill", "--signal", "SIGKILL", id)
		ctr("tasks", "delete", "--force", id)
	}
	for _, id := range strings.Fields(ctr("containers", "ls", "-q")) {
		ctr("containers", "delete", id)
	}
	p.Signal(syscall.SIGTERM)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		t.Errorf("containerd did not exit within 10s of SIGTERM; killing it")
		p.Kill()
		<-exited
	}
	// A shim outlives containerd by design; one still running here lost
	// its container to the kill above. Its children go first, or they
	// would be orphaned.
	for _, shim := range shimsOf(c.sock) {
		t.Errorf("shim %d of the test's containerd was still running; killing it and its children", shim)
		for _, child := range childrenOf(shim) {
			syscall.Kill(child, syscall.SIGKILL)
		}
		syscall.Kill(shim, syscall.SIGKILL)
	}
	unmountUnder(t, c.dir)
}

// shimsOf lists the containerd-shim processes serving the containerd at
// sock, by the -address argument containerd starts them with.
func shimsOf(sock string) []int {
	var pids []int
	forEachProcess(func(pid int, args []string) {
		if len(args) > 0 && strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			if i := slices.Index(args, "-address"); i >= 0 && i+1 < len(args) && args[i+1] == sock {
				pids = append(pids, pid)
			}
		}
	})
	return pids
}

func childrenOf(parent int) []int {
	var pids []int
	forEachProcess(func(pid int, _ []string) {
		stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
		if err != nil {
			return
		}
		// pid (comm) state ppid ...: comm may hold spaces, so split
		// after its closing parenthesis.
		if i := bytes.LastIndexByte(stat, ')'); i >= 0 {
			if f := strings.Fields(string(stat[i+1:])); len(f) > 1 && f[1] == strconv.Itoa(parent) {
				pids = append(pids, pid)
			}
		}
	})
	return pids
}

func forEachProcess(fn func(pid int, args []string)) {
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		fn(pid, strings.Split(strings.TrimSuffix(string(cmdline), "\x00"), "\x00"))
	}
}

// unmountUnder sweeps every mount at or below dir, so that the temporary
// directory can be removed. A test that tore down cleanly leaves none:
// each one found is reported.
func unmountUnder(t *testing.T, dir string) {
	left, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Errorf("reading the mount table: %v", err)
	}
	for _, m := range left {
		t.Errorf("still mounted after teardown: %s", m.Mountpoint)
	}
	if err := runroot.SweepMounts(dir); err != nil {
		t.Error(err)
	}
}

// fixedPaths are where containerd 1.6 and ctr write whatever the
// configuration says (or where they would, had the test not moved them):
// the shims' sockets, ctr's FIFOs, the runc root, the default root and
// state, the opt plugin's and CNI's directories.
var fixedPaths = []string{"/run/containerd", "/var/lib/containerd", "/opt/containerd", "/etc/cni", "/opt/cni"}

// watchFixedPaths registers, to run after containerd is gone, the removal
// of every fixed path that appeared during the test, and logs which did.
func watchFixedPaths(t *testing.T) {
	existed := map[string]bool{}
	for _, p := range fixedPaths {
		if _, err := os.Lstat(p); err == nil {
			existed[p] = true
		}
	}
	t.Cleanup(func() {
		for _, p := range fixedPaths {
			if existed[p] {
				continue
			}
			if _, err := os.Lstat(p); err != nil {
				continue
			}
			var found []string
			filepath.WalkDir(p, func(path string, _ os.DirEntry, _ error) error {
				found = append(found, path)
				return nil
			})
			t.Logf("containerd created %s (removing it): %s", p, strings.Join(found, " "))
			if err := os.RemoveAll(p); err != nil {
				t.Errorf("removing %s: %v", p, err)
			}
		}
	})
}

// goTool is the go command: the one on PATH, which `go test` puts first.
func goTool() string {
	if p, err := exec.LookPath("go"); err == nil {
		return p
	}
	return "go"
}
