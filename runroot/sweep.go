package runroot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// Sweep tears down the roots that dead runs left in the system's temporary
// directory (csisim-*-* with a lock file whose owner is gone: a run that
// was SIGKILLed or crashed) and returns what it removed; with dryRun it only
// says what it would remove. Roots of live runs, and directories without a
// lock (not a run root, or one still being created), are never touched.
func Sweep(dryRun bool) ([]Teardown, error) { return SweepWith(dryRun, nil) }

// SweepWith is Sweep with a hook for what a run changed outside its root
// (real nodes' sysctls and fixed paths): before is called with each dead
// root before it is torn down, while its files are still there, and the
// function it returns, if any, after; neither in a dry run.
func SweepWith(dryRun bool, before func(dir string) (after func() error)) ([]Teardown, error) {
	tmp := resolve(os.TempDir())
	entries, err := os.ReadDir(tmp)
	if err != nil {
		return nil, fmt.Errorf("sweep dead runs: %w", err)
	}
	var (
		done []Teardown
		errs []error
	)
	for _, e := range entries {
		if !e.IsDir() || !strings.HasPrefix(e.Name(), "csisim-") {
			continue
		}
		dir := filepath.Join(tmp, e.Name())
		owner, err := parseStamp(filepath.Join(dir, lockFile))
		if err != nil || owner.alive() {
			continue
		}
		var after func() error
		if before != nil && !dryRun {
			after = before(dir)
		}
		t, err := teardown(dir, dryRun)
		if err != nil {
			errs = append(errs, fmt.Errorf("sweep %s (run of dead pid %d): %w", dir, owner.pid, err))
		}
		if after != nil {
			if err := after(); err != nil {
				errs = append(errs, fmt.Errorf("sweep %s (run of dead pid %d): %w", dir, owner.pid, err))
			}
		}
		done = append(done, t)
	}
	return done, errors.Join(errs...)
}

// String says what a teardown did, in one line.
func (t Teardown) String() string {
	var parts []string
	count := func(n int, what string) {
		if n == 1 {
			parts = append(parts, "1 "+what)
		} else if n > 1 {
			parts = append(parts, fmt.Sprintf("%d %ss", n, what))
		}
	}
	count(len(t.Processes), "process group")
	count(len(t.Loops), "loop device")
	count(len(t.Mounts), "mount")
	if len(parts) == 0 {
		return t.Dir
	}
	return t.Dir + ": " + strings.Join(parts, ", ")
}
