package testenv

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// TestCsisimBinary builds the binary once, runs it, and Cleanup removes it.
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
	Cleanup()
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("after Cleanup, stat %s: %v, want not exist", path, err)
	}
}
