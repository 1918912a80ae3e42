package runroot

import (
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

func requireRoot(t *testing.T) {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("needs root for mount(2)")
	}
}

func bindMount(t *testing.T, src, dst string) {
	t.Helper()
	if err := os.MkdirAll(dst, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := unix.Mount(src, dst, "", unix.MS_BIND, ""); err != nil {
		t.Fatalf("bind mount %s on %s: %v", src, dst, err)
	}
}

func mountsUnder(t *testing.T, dir string) []string {
	t.Helper()
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, i := range infos {
		out = append(out, i.Mountpoint)
	}
	return out
}

func TestPath(t *testing.T) {
	r, err := New("pathtest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })

	tests := []struct {
		name      string
		elem      []string
		want      string
		wantPanic bool
	}{
		{name: "root itself", elem: nil, want: r.dir},
		{name: "nested", elem: []string{"a", "b"}, want: r.dir + "/a/b"},
		{name: "cleaned", elem: []string{"a/../b"}, want: r.dir + "/b"},
		{name: "escape", elem: []string{"..", "x"}, wantPanic: true},
		{name: "absolute element stays inside", elem: []string{"/etc"}, want: r.dir + "/etc"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			defer func() {
				if p := recover(); (p != nil) != tc.wantPanic {
					t.Fatalf("panic = %v, want panic %v", p, tc.wantPanic)
				}
			}()
			if got := r.Path(tc.elem...); got != tc.want {
				t.Fatalf("Path(%q) = %q, want %q", tc.elem, got, tc.want)
			}
		})
	}
}

func TestCloseRemovesNestedMounts(t *testing.T) {
	requireRoot(t)
	r, err := New("mounttest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })

	src := r.Path("src")
	if err := os.MkdirAll(filepath.Join(src, "inner"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "keep"), []byte("data"), 0o644); err != nil {
		t.Fatal(err)
	}
	outer := r.Path("mnt", "outer")
	bindMount(t, src, outer)
	// A mount inside a mount, and the same path mounted twice over.
	bindMount(t, src, filepath.Join(outer, "inner"))
	stacked := r.Path("mnt", "stacked")
	bindMount(t, src, stacked)
	bindMount(t, src, stacked)

	if got := len(mountsUnder(t, r.dir)); got != 4 {
		t.Fatalf("set-up made %d mounts, want 4", got)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := mountsUnder(t, r.dir); len(got) != 0 {
		t.Fatalf("mounts left after Close: %v", got)
	}
	if _, err := os.Stat(r.dir); !os.IsNotExist(err) {
		t.Fatalf("root still exists after Close (stat err %v)", err)
	}
	if err := r.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
}

func TestCloseDetachesBusyMount(t *testing.T) {
	requireRoot(t)
	r, err := New("busytest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })
	src := r.Path("src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	mnt := r.Path("busy")
	bindMount(t, src, mnt)
	// An open file keeps the mount busy, so a plain unmount fails.
	f, err := os.Create(filepath.Join(mnt, "open"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if err := unix.Unmount(mnt, 0); err != unix.EBUSY {
		t.Fatalf("plain unmount of busy mount: %v, want EBUSY", err)
	}

	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if got := mountsUnder(t, r.dir); len(got) != 0 {
		t.Fatalf("mounts left after Close: %v", got)
	}
	if _, err := os.Stat(r.dir); !os.IsNotExist(err) {
		t.Fatalf("root still exists after Close (stat err %v)", err)
	}
}

func TestSweepMountsLeavesFiles(t *testing.T) {
	requireRoot(t)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(src, "f"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	bindMount(t, src, filepath.Join(dir, "a"))
	bindMount(t, src, filepath.Join(dir, "a", "b"))
	t.Cleanup(func() { _ = SweepMounts(dir) })

	if err := SweepMounts(dir); err != nil {
		t.Fatalf("SweepMounts: %v", err)
	}
	if got := mountsUnder(t, dir); len(got) != 0 {
		t.Fatalf("mounts left: %v", got)
	}
	if _, err := os.Stat(filepath.Join(src, "f")); err != nil {
		t.Fatalf("sweeping removed a file: %v", err)
	}
}

func TestCloseDetachesLoopDevices(t *testing.T) {
	requireRoot(t)
	losetup, err := exec.LookPath("losetup")
	if err != nil {
		t.Skip("losetup not installed")
	}
	r, err := New("looptest")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = r.Close() })

	img := r.Path("disk.img")
	f, err := os.Create(img)
	if err != nil {
		t.Fatal(err)
	}
	if err := f.Truncate(16 << 20); err != nil { // sparse
		t.Fatal(err)
	}
	f.Close()
	out, err := exec.Command(losetup, "--find", "--show", img).CombinedOutput()
	if err != nil {
		t.Skipf("cannot attach a loop device here: %v: %s", err, out)
	}
	dev := strings.TrimSpace(string(out))
	backing := filepath.Join("/sys/block", filepath.Base(dev), "loop", "backing_file")
	if _, err := os.Stat(backing); err != nil {
		t.Fatalf("loop device %s not attached: %v", dev, err)
	}

	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for {
		raw, err := os.ReadFile(backing)
		if err != nil || !strings.HasPrefix(strings.TrimSpace(string(raw)), r.dir) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("loop device %s still backed by %s after Close", dev, raw)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if _, err := os.Stat(r.dir); !os.IsNotExist(err) {
		t.Fatalf("root still exists after Close (stat err %v)", err)
	}
}
