// Package testenv is what tests share to set up what they run: the csisim
// binary, whose `driver` subcommand a simulated cluster starts as
// processes of their own, built once per test process.
//
// A package whose tests use it removes the binary when they end:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// or, in a Ginkgo suite, DeferCleanup(testenv.Cleanup) after BuildCsisim.
package testenv

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"
)

// csisimPackage is the command the binary is built from; go build finds
// it from any directory of the module.
const csisimPackage = "github.com/csisim/csisim/cmd/csisim"

// build is the one csisim binary of this test process: tests of one
// package share it, as go test runs them in one process.
var build struct {
	mu   sync.Mutex
	dir  string
	path string
	err  error
}

// BuildCsisim builds cmd/csisim, the first time it is called in the test
// process (again after Cleanup), and returns the binary's path.
func BuildCsisim() (string, error) {
	build.mu.Lock()
	defer build.mu.Unlock()
	if build.path != "" || build.err != nil {
		return build.path, build.err
	}
	dir, err := os.MkdirTemp("", "csisim-test-bin-")
	if err != nil {
		build.err = fmt.Errorf("building csisim: %w", err)
		return "", build.err
	}
	path := filepath.Join(dir, "csisim")
	if out, err := exec.Command("go", "build", "-o", path, csisimPackage).CombinedOutput(); err != nil {
		os.RemoveAll(dir)
		build.err = fmt.Errorf("building csisim: %v\n%s", err, out)
		return "", build.err
	}
	build.dir, build.path = dir, path
	return path, nil
}

// CsisimBinary is BuildCsisim for a test or benchmark, which fails if the
// binary cannot be built.
func CsisimBinary(tb testing.TB) string {
	tb.Helper()
	path, err := BuildCsisim()
	if err != nil {
		tb.Fatal(err)
	}
	return path
}

// Cleanup removes the binary, if one was built.
func Cleanup() {
	build.mu.Lock()
	defer build.mu.Unlock()
	if build.dir != "" {
		os.RemoveAll(build.dir)
	}
	build.dir, build.path, build.err = "", "", nil
}

// Main runs a package's tests and removes the binary after them: a
// package's TestMain.
func Main(m *testing.M) {
	code := m.Run()
	Cleanup()
	os.Exit(code)
}
