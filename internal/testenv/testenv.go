// Package testenv is what tests share to set up what they run: the csisim
// binary, whose `driver` subcommand a simulated cluster starts as
// processes of their own, built once per checkout and linked into each
// test process's own directory.
//
// A package whose tests use it removes its link when they end:
//
//	func TestMain(m *testing.M) { testenv.Main(m) }
//
// or, in a Ginkgo suite, DeferCleanup(testenv.Cleanup) after BuildCsisim.
package testenv

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"

	"github.com/csisim/csisim/internal/cachedir"
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
//
// Linking csisim costs 10-15 s of CPU, and a dozen packages of `make test`
// want it: they share one build, kept in sharedDir, which go build relinks
// only when the sources changed (it skips an up-to-date -o target), under
// a lock so that packages tested at once do not write it together. Each
// test process gets a hard link of its own: a later relink replaces the
// shared file, not the one its tests run.
func BuildCsisim() (string, error) {
	build.mu.Lock()
	defer build.mu.Unlock()
	if build.path != "" || build.err != nil {
		return build.path, build.err
	}
	dir, path, err := linkShared()
	if err != nil {
		build.err = fmt.Errorf("building csisim: %w", err)
		return "", build.err
	}
	build.dir, build.path = dir, path
	return path, nil
}

// sharedDir is where the shared build of this checkout is kept:
// ${CSISIM_CACHE:-$HOME/.cache/csisim}/test-bin/<hash of the module's
// directory>, so that two checkouts on one machine keep a build each.
func sharedDir() (string, string, error) {
	gomod, err := cachedir.GoMod()
	if err != nil {
		return "", "", err
	}
	return filepath.Join(cachedir.Root(), "test-bin", cachedir.KeyOf(gomod)), gomod, nil
}

// checkoutFile, in a shared build's directory, holds the path of the
// go.mod of the checkout it was built from.
const checkoutFile = "checkout"

// removeGoneCheckouts removes the shared builds (130 MB each) of checkouts
// that are no longer there — a worktree or a clone that was deleted —
// except one a test process still uses or another checkout is building.
// A build from before the checkout was recorded goes too: its checkout,
// if it still exists, builds again once.
func removeGoneCheckouts(testBin, self string) {
	dirs, _ := filepath.Glob(filepath.Join(testBin, "*"))
	for _, dir := range dirs {
		if dir == self {
			continue
		}
		if gomod, err := os.ReadFile(filepath.Join(dir, checkoutFile)); err == nil {
			if _, err := os.Stat(string(gomod)); err == nil {
				continue
			}
		}
		removeStale(dir)
		if live, _ := filepath.Glob(filepath.Join(dir, "process-*")); len(live) > 0 {
			continue
		}
		lock, err := os.OpenFile(filepath.Join(dir, "lock"), os.O_RDWR, 0)
		if err != nil {
			continue
		}
		if syscall.Flock(int(lock.Fd()), syscall.LOCK_EX|syscall.LOCK_NB) == nil {
			os.RemoveAll(dir)
		}
		lock.Close()
	}
}

// linkShared brings the shared build up to date and links it into a
// directory of this process's own, returning the directory and the path.
func linkShared() (string, string, error) {
	shared, gomod, err := sharedDir()
	if err != nil {
		return "", "", err
	}
	if err := os.MkdirAll(shared, 0o755); err != nil {
		return "", "", err
	}
	if err := os.WriteFile(filepath.Join(shared, checkoutFile), []byte(gomod), 0o644); err != nil {
		return "", "", err
	}
	lock, err := os.OpenFile(filepath.Join(shared, "lock"), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return "", "", err
	}
	defer lock.Close() // which also releases the lock
	if err := syscall.Flock(int(lock.Fd()), syscall.LOCK_EX); err != nil {
		return "", "", fmt.Errorf("locking %s: %w", lock.Name(), err)
	}
	binary := filepath.Join(shared, "csisim")
	if out, err := exec.Command("go", "build", "-o", binary, csisimPackage).CombinedOutput(); err != nil {
		return "", "", fmt.Errorf("%v\n%s", err, out)
	}
	removeStale(shared)
	removeGoneCheckouts(filepath.Dir(shared), shared)
	dir, err := os.MkdirTemp(shared, fmt.Sprintf("process-%d-", os.Getpid()))
	if err != nil {
		return "", "", err
	}
	path := filepath.Join(dir, "csisim")
	if err := os.Link(binary, path); err != nil {
		os.RemoveAll(dir)
		return "", "", err
	}
	return dir, path, nil
}

// removeStale removes the directories of test processes that are gone
// (named process-<pid>-…): one killed by go test's timeout or a signal
// never ran its Cleanup. A directory whose pid runs is left, even if the
// pid now belongs to another process: it goes once that one has ended.
func removeStale(shared string) {
	dirs, _ := filepath.Glob(filepath.Join(shared, "process-*"))
	for _, dir := range dirs {
		rest, _ := strings.CutPrefix(filepath.Base(dir), "process-")
		field, _, ok := strings.Cut(rest, "-")
		pid, err := strconv.Atoi(field)
		if !ok || err != nil || pid <= 0 || processRuns(pid) {
			continue
		}
		os.RemoveAll(dir)
	}
}

// processRuns reports whether a process with this pid exists (signal 0
// checks without sending; EPERM means it exists under another user).
func processRuns(pid int) bool {
	err := syscall.Kill(pid, 0)
	return err == nil || errors.Is(err, syscall.EPERM)
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

// Cleanup removes this process's link of the binary, if it made one;
// the shared build stays for the next.
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
