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
