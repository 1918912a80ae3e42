package runroot

import (
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"
)

// attachLoop attaches file to a free loop device with losetup and returns
// the device; the test is skipped where loop devices cannot be made.
func attachLoop(t *testing.T, file string) string {
	t.Helper()
	out, err := exec.Command("losetup", "--find", "--show", file).CombinedOutput()
	if err != nil {
		t.Skipf("cannot attach a loop device here: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	t.Cleanup(func() { _ = exec.Command("losetup", "-d", dev).Run() })
	return dev
}

func attached(dev string) bool {
	_, err := os.Stat(filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file"))
	return err == nil
}

func sparseFile(t *testing.T, path string) {
	t.Helper()
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(16 << 20); err != nil {
		t.Fatal(err)
	}
	f.Close()
}

// The kubelet's block volume lock: a loop device on the published device
// node, bind-mounted below the root. Once the bind mount is gone its
// backing file no longer reads as a path below the root; Close must detach
// it (and the device under it) all the same.
func TestCloseDetachesLayeredLoopDevices(t *testing.T) {
	requireRoot(t)
	r, err := New("layertest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	img := r.Path("disk.img")
	sparseFile(t, img)
	lower := attachLoop(t, img)
	mapped := r.Path("volumeDevices", "pv", "dev", "pod")
	if err := os.MkdirAll(filepath.Dir(mapped), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(mapped, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := syscall.Mount(lower, mapped, "", syscall.MS_BIND, ""); err != nil {
		t.Fatal(err)
	}
	upper := attachLoop(t, mapped)

	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	for _, dev := range []string{upper, lower} {
		if attached(dev) {
			t.Errorf("loop device %s is still attached after Close", dev)
		}
	}
	if _, err := os.Stat(r.dir); !os.IsNotExist(err) {
		t.Errorf("root still exists after Close (stat err %v)", err)
	}
}

// deadStamp returns the stamp of a process that has exited.
func deadStamp(t *testing.T) procStamp {
	t.Helper()
	cmd := exec.Command("sleep", "10")
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s, ok := stampOf(cmd.Process.Pid)
	if !ok {
		t.Fatal("no stamp for a running process")
	}
	_ = cmd.Process.Kill()
	_ = cmd.Wait()
	return s
}

func TestSweepRemovesOnlyDeadRunsRoots(t *testing.T) {
	requireRoot(t)
	t.Setenv("TMPDIR", t.TempDir())

	live, err := New("live")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = live.Close() })

	dead, err := New("dead")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = dead.Close() })
	// A helper of the dead run's driver, in a process group of its own.
	helper := exec.Command("sleep", "300")
	helper.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := helper.Start(); err != nil {
		t.Fatal(err)
	}
	reaped := make(chan error, 1)
	go func() { reaped <- helper.Wait() }()
	t.Cleanup(func() { _ = helper.Process.Kill() })
	if err := dead.RecordProcess(helper.Process.Pid); err != nil {
		t.Fatal(err)
	}
	bindMount(t, t.TempDir(), dead.Path("mnt"))
	sparseFile(t, dead.Path("disk.img"))
	dev := attachLoop(t, dead.Path("disk.img"))
	// The owner dies; so does a second one whose PID a stranger has now.
	if err := writeStamp(filepath.Join(dead.dir, lockFile), deadStamp(t)); err != nil {
		t.Fatal(err)
	}
	reused, err := New("reused")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = reused.Close() })
	me, _ := stampOf(os.Getpid())
	if err := writeStamp(filepath.Join(reused.dir, lockFile), procStamp{pid: me.pid, start: me.start - 1}); err != nil {
		t.Fatal(err)
	}
	notOurs := filepath.Join(os.TempDir(), "csisim-unlocked-1")
	if err := os.Mkdir(notOurs, 0o755); err != nil {
		t.Fatal(err)
	}

	dry, err := Sweep(true)
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if len(dry) != 2 {
		t.Fatalf("dry run would sweep %v, want the dead and the reused-PID roots", dry)
	}
	if _, err := os.Stat(dead.dir); err != nil || !attached(dev) {
		t.Fatalf("the dry run changed something: stat %v, loop attached %v", err, attached(dev))
	}

	swept, err := Sweep(false)
	if err != nil {
		t.Fatalf("Sweep: %v", err)
	}
	var report []string
	for _, s := range swept {
		report = append(report, s.String())
	}
	want := dead.dir + ": 1 process group, 1 loop device, 1 mount"
	if !strings.Contains(strings.Join(report, "\n"), want) {
		t.Errorf("Sweep reported %q, want a line %q", report, want)
	}
	for _, gone := range []string{dead.dir, reused.dir} {
		if _, err := os.Stat(gone); !os.IsNotExist(err) {
			t.Errorf("%s survived the sweep (stat err %v)", gone, err)
		}
	}
	for _, kept := range []string{live.dir, notOurs} {
		if _, err := os.Stat(kept); err != nil {
			t.Errorf("%s was swept, but it is not a dead run's root: %v", kept, err)
		}
	}
	if attached(dev) {
		t.Errorf("loop device %s still attached after the sweep", dev)
	}
	select {
	case <-reaped:
	case <-time.After(5 * time.Second):
		t.Error("the dead run's process still runs after the sweep")
	}
}

// A loop device that cannot go (still open elsewhere) is named in Close's
// error, a *LeftBehind, and the root is not claimed clean.
func TestCloseNamesWhatIsLeft(t *testing.T) {
	requireRoot(t)
	r, err := New("lefttest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	sparseFile(t, r.Path("disk.img"))
	dev := attachLoop(t, r.Path("disk.img"))
	holder, err := os.Open(dev)
	if err != nil {
		t.Fatal(err)
	}
	err = r.Close()
	var left *LeftBehind
	if !errors.As(err, &left) || !strings.Contains(err.Error(), "loop device "+dev) || !strings.Contains(err.Error(), "still attached") {
		t.Errorf("Close with %s held open = %v, want a *LeftBehind naming it", dev, err)
	}
	holder.Close() // the kernel's deferred detach happens now
	deadline := time.Now().Add(5 * time.Second)
	for attached(dev) && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if attached(dev) {
		t.Errorf("%s still attached after its last user closed it", dev)
	}
}
