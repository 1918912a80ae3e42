package runroot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	"golang.org/x/sys/unix"
)

// A run that is SIGKILLed cannot clean up after itself, so every root says
// who owns it: a lock file with the owner's PID and the time the kernel
// started that process. A later run looks at the lock to tell a live run's
// root (left alone) from a dead one's (swept). The start time is what makes
// a reused PID no mistake: a new process with the old PID started later.
//
// The processes a run starts (driver plugins) are recorded the same way,
// one file per process under processDir, so that a sweep kills exactly
// those, and never a stranger that got one of their PIDs.

// lockFile is the name of the lock file in a root.
const lockFile = "csisim.lock"

// processDir is the directory of process records in a root.
const processDir = "processes"

// procStamp identifies a process: its PID and start time.
type procStamp struct {
	pid   int
	start uint64 // clock ticks after boot, field 22 of /proc/<pid>/stat
}

func (s procStamp) String() string { return fmt.Sprintf("pid %d\nstart %d\n", s.pid, s.start) }

// stampOf reads the start time of process pid; ok is false if there is
// no such process.
func stampOf(pid int) (procStamp, bool) {
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
	if err != nil {
		return procStamp{}, false
	}
	// The command name (field 2) is in parentheses and may contain
	// anything, spaces and parentheses included: count from the last ')'.
	s := string(raw)
	i := strings.LastIndexByte(s, ')')
	if i < 0 {
		return procStamp{}, false
	}
	fields := strings.Fields(s[i+1:])
	const startField = 22 - 3 // fields[0] is field 3 (state)
	if len(fields) <= startField {
		return procStamp{}, false
	}
	start, err := strconv.ParseUint(fields[startField], 10, 64)
	if err != nil {
		return procStamp{}, false
	}
	return procStamp{pid: pid, start: start}, true
}

// alive reports whether the process s names still runs (a zombie counts as
// gone: it has exited).
func (s procStamp) alive() bool {
	now, ok := stampOf(s.pid)
	if !ok || now.start != s.start {
		return false
	}
	raw, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(s.pid), "stat"))
	if err != nil {
		return false
	}
	i := strings.LastIndexByte(string(raw), ')')
	return !strings.HasPrefix(strings.TrimSpace(string(raw[i+1:])), "Z")
}

// parseStamp reads a lock file or a process record.
func parseStamp(path string) (procStamp, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return procStamp{}, err
	}
	var s procStamp
	if _, err := fmt.Sscanf(string(raw), "pid %d\nstart %d\n", &s.pid, &s.start); err != nil || s.pid <= 0 {
		return procStamp{}, fmt.Errorf("%s: not a csisim lock (%q)", path, raw)
	}
	return s, nil
}

// writeStamp writes s to path, atomically so a reader never sees half.
func writeStamp(path string, s procStamp) error {
	tmp := path + ".tmp"
	if err := os.WriteFile(tmp, []byte(s.String()), 0o640); err != nil {
		return err
	}
	return os.Rename(tmp, path)
}

// lock records the calling process as the owner of dir.
func lock(dir string) error {
	s, ok := stampOf(os.Getpid())
	if !ok {
		return errors.New("cannot read this process's start time from /proc")
	}
	if err := writeStamp(filepath.Join(dir, lockFile), s); err != nil {
		return fmt.Errorf("lock run root: %w", err)
	}
	return nil
}

// RecordProcess notes that process pid belongs to this run, so that a
// sweep after the run died kills it and the helpers in its process group.
// Call it as soon as the process has started.
func (r *Root) RecordProcess(pid int) error {
	s, ok := stampOf(pid)
	if !ok {
		return nil // already gone: nothing to sweep
	}
	dir := filepath.Join(r.dir, processDir)
	if err := os.MkdirAll(dir, 0o750); err != nil {
		return fmt.Errorf("record process %d: %w", pid, err)
	}
	if err := writeStamp(filepath.Join(dir, strconv.Itoa(pid)), s); err != nil {
		return fmt.Errorf("record process %d: %w", pid, err)
	}
	return nil
}

// recordedProcesses lists the process records of the root at dir.
func recordedProcesses(dir string) []procStamp {
	entries, err := os.ReadDir(filepath.Join(dir, processDir))
	if err != nil {
		return nil
	}
	var out []procStamp
	for _, e := range entries {
		if s, err := parseStamp(filepath.Join(dir, processDir, e.Name())); err == nil {
			out = append(out, s)
		}
	}
	return out
}

// killGroup kills what is left of a recorded process: its process group,
// which holds the helpers it forked. It does so only if the group is
// surely the recorded one: the process itself still runs (same start
// time), or it is gone and its PID not reused by anyone, in which case any
// process still in a group of that ID is a helper of it (the kernel does
// not hand out a PID while a process group still has that ID). It reports
// whether anything was signalled.
func killGroup(s procStamp, dryRun bool) (bool, error) {
	now, exists := stampOf(s.pid)
	if exists && now.start != s.start {
		return false, nil // a stranger has the PID now
	}
	if !groupExists(s.pid) {
		return false, nil
	}
	if dryRun {
		return true, nil
	}
	if err := unix.Kill(-s.pid, unix.SIGKILL); err != nil && !errors.Is(err, unix.ESRCH) {
		return false, fmt.Errorf("kill process group %d: %w", s.pid, err)
	}
	return true, nil
}

// groupExists reports whether any process is in process group pgid.
func groupExists(pgid int) bool {
	// Signal 0 checks without sending anything.
	return unix.Kill(-pgid, 0) == nil
}
