package testenv

import (
	"os"
	"os/exec"
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
