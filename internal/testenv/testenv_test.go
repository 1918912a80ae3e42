package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
)

// TestCsisimBinary builds the binary once, runs it, and Cleanup removes
// this process's link of it.
func TestCsisimBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("-short: not building csisim")
	}
	path := CsisimBinary(t)
	if again := CsisimBinary(t); again != path {
		t.Errorf("second call: %s, want the first build's %s", again, path)
	}
	out, err := exec.Command(path, "--help").CombinedOutput()
	if !strings.Contains(string(out), "csisim") {
		t.Errorf("%s --help: %v\n%s", path, err, out)
	}
	// A hard link of the shared build, which Cleanup leaves for the next
	// test process.
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if st, ok := fi.Sys().(*syscall.Stat_t); !ok || st.Nlink < 2 {
		t.Errorf("%s is not a link of the shared build: %+v", path, fi.Sys())
	}
	Cleanup()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("after Cleanup, stat %s: %v, want not exist", path, err)
	}
}

// A test process killed before its Cleanup leaves its directory behind;
// the next one removes it, and leaves those of processes that still run.
func TestRemoveStale(t *testing.T) {
	shared := t.TempDir()
	gone := exec.Command("true")
	if err := gone.Run(); err != nil {
		t.Fatal(err)
	}
	dead := filepath.Join(shared, fmt.Sprintf("process-%d-123", gone.Process.Pid))
	live := filepath.Join(shared, fmt.Sprintf("process-%d-456", os.Getpid()))
	other := filepath.Join(shared, "process-notapid")
	for _, d := range []string{dead, live, other} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	removeStale(shared)
	for d, want := range map[string]bool{dead: false, live: true, other: true} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("%s: exists %v, want %v", filepath.Base(d), err == nil, want)
		}
	}
}

// The shared build of a checkout that is gone is removed by the next
// build of another checkout, unless a test process still uses it or its
// lock is held (a build under way).
func TestRemoveGoneCheckouts(t *testing.T) {
	testBin := t.TempDir()
	gomod := filepath.Join(t.TempDir(), "go.mod")
	if err := os.WriteFile(gomod, []byte("module example.com/here\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	dirs := map[string]struct {
		checkout string // recorded go.mod, "" for none
		process  bool   // a process directory of this (live) process
		locked   bool
		want     bool
	}{
		"self":     {want: true},
		"kept":     {checkout: gomod, want: true},
		"gone":     {checkout: "/nonexistent/go.mod", want: false},
		"legacy":   {want: false},
		"in-use":   {checkout: "/nonexistent/go.mod", process: true, want: true},
		"building": {checkout: "/nonexistent/go.mod", locked: true, want: true},
	}
	for name, d := range dirs {
		dir := filepath.Join(testBin, name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		lock, err := os.Create(filepath.Join(dir, "lock"))
		if err != nil {
			t.Fatal(err)
		}
		defer lock.Close()
		if d.locked {
			if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
				t.Fatal(err)
			}
		}
		if d.checkout != "" {
			if err := os.WriteFile(filepath.Join(dir, checkoutFile), []byte(d.checkout), 0o644); err != nil {
				t.Fatal(err)
			}
		}
		if d.process {
			if err := os.MkdirAll(filepath.Join(dir, fmt.Sprintf("process-%d-1", os.Getpid())), 0o755); err != nil {
				t.Fatal(err)
			}
		}
	}
	removeGoneCheckouts(testBin, filepath.Join(testBin, "self"))
	for name, d := range dirs {
		if _, err := os.Stat(filepath.Join(testBin, name)); (err == nil) != d.want {
			t.Errorf("%s: exists %v, want %v", name, err == nil, d.want)
		}
	}
}
