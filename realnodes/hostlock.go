package realnodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

// Real nodes change what the machine has one of: the kernel settings the
// kubelet sets, /var/lib/kubelet/device-plugins, containerd's state under
// /run/containerd. Two runs with real nodes at once would each record the
// other's changes as the machine's own and put those back at their end (a
// run that started while another's kubelet had set vm.overcommit_memory=1
// restored 1), and one's clean-up would remove the fixed paths the other
// still uses. So a run holds the host: an exclusive flock(2) on a file of
// the machine's, taken before it records the host and let go after it has
// put the host back. The kernel lets go of a killed run's lock, so a dead
// holder never blocks the next run.
//
// The holder also keeps its record of the machine as found (Host) beside
// the lock, and removes it once it has restored the machine. A record
// still there when a run takes the lock was left by a run that died
// before restoring: the new run adopts it, so that what it puts back at its
// end is the machine as the dead run found it, not the dead run's changes.

// DefaultHostLockDir is where real-node runs meet: the lock and the
// holder's record of the machine.
const DefaultHostLockDir = "/run/csisim-real-nodes"

const (
	hostLockFile   = "lock"
	hostRecordFile = "host.json"
	// lockPoll is how often a waiting run tries the lock again.
	lockPoll = 200 * time.Millisecond
)

// hostLock is a held lock on the host, and where its record is kept.
type hostLock struct {
	dir  string
	file *os.File
}

// lockHost takes the host lock in dir, waiting while another live run
// holds it (logf says once whose), until ctx ends.
func lockHost(ctx context.Context, dir, runRoot string, logf func(string, ...any)) (*hostLock, error) {
	said := false
	for {
		l, free, err := tryLockHost(dir)
		if err != nil {
			return nil, err
		}
		if free {
			// Whose the lock is, for the message of a run that waits.
			if err := l.file.Truncate(0); err == nil {
				_, _ = l.file.WriteAt([]byte(fmt.Sprintf("pid %d, run root %s\n", os.Getpid(), runRoot)), 0)
			}
			return l, nil
		}
		holder := lockHolder(filepath.Join(dir, hostLockFile))
		if !said && logf != nil {
			logf("waiting for the host: another run with real nodes holds it (%s)", holder)
			said = true
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the host, held by another run with real nodes (%s): %w", holder, ctx.Err())
		case <-time.After(lockPoll):
		}
	}
}

// tryLockHost takes the host lock in dir if no live run holds it; free is
// false when one does. The holder removes the lock file when it lets go
// (release: nothing of the machine's is left behind), so a lock taken on
// a file that is no longer the one at the path — a run that opened it
// before its holder removed it — is no lock: it is let go and tried again.
func tryLockHost(dir string) (l *hostLock, free bool, err error) {
	path := filepath.Join(dir, hostLockFile)
	for {
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return nil, false, fmt.Errorf("the real-node host lock: %w", err)
		}
		f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o644)
		if errors.Is(err, os.ErrNotExist) {
			continue // the directory went with a holder's release
		}
		if err != nil {
			return nil, false, fmt.Errorf("the real-node host lock: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			if errors.Is(err, syscall.EWOULDBLOCK) {
				return nil, false, nil
			}
			return nil, false, fmt.Errorf("taking the real-node host lock %s: %w", path, err)
		}
		held, herr := f.Stat()
		now, perr := os.Stat(path)
		if herr == nil && perr == nil && os.SameFile(held, now) {
			return &hostLock{dir: dir, file: f}, true, nil
		}
		f.Close()
	}
}

// lockHolder says who holds the lock file, as its holder wrote it.
func lockHolder(path string) string {
	b, err := os.ReadFile(path)
	if err != nil || len(strings.TrimSpace(string(b))) == 0 {
		return "holder unknown"
	}
	return strings.TrimSpace(string(b))
}

// leftRecord is the record of a run that held the lock and died before
// restoring the machine, or nil.
func (l *hostLock) leftRecord() (*Host, error) {
	data, err := os.ReadFile(filepath.Join(l.dir, hostRecordFile))
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("reading the host record a dead run left: %w", err)
	}
	var h Host
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(l.dir, hostRecordFile), err)
	}
	return &h, nil
}

// keepRecord writes the holder's record of the machine beside the lock.
func (l *hostLock) keepRecord(data []byte) error {
	if err := os.WriteFile(filepath.Join(l.dir, hostRecordFile), data, 0o644); err != nil {
		return fmt.Errorf("recording the host's state: %w", err)
	}
	return nil
}

// release lets go of the lock. Restored (the machine is as found again),
// it removes the record, the lock file and their directory while it still
// holds the lock, so that nothing of csisim's stays on the machine; a run
// that waits on the removed file finds it is no longer the lock and takes
// the new one (tryLockHost). Not restored, the record stays for the next
// run or `csisim clean` to adopt.
func (l *hostLock) release(restored bool) error {
	var err error
	if restored {
		for _, name := range []string{hostRecordFile, hostLockFile} {
			if rerr := os.Remove(filepath.Join(l.dir, name)); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
				err = errors.Join(err, fmt.Errorf("removing %s: %w", filepath.Join(l.dir, name), rerr))
			}
		}
		_ = os.Remove(l.dir) // only if empty: another run may be making its lock there
	} else {
		_ = l.file.Truncate(0)
	}
	return errors.Join(err, l.file.Close())
}
