// Package runroot gives a run a private temporary directory that holds all of
// its files, mount points and loop-device backing files, and tears all of it
// down again on exit — also after a failure — without touching anything
// outside that directory.
package runroot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// Root is one run's private temporary directory.
type Root struct {
	dir string
}

// New creates a fresh directory named csisim-<prefix>-* in the system's
// temporary directory, locked as the calling process's (see owner.go).
func New(prefix string) (*Root, error) {
	dir, err := os.MkdirTemp("", "csisim-"+prefix+"-")
	if err != nil {
		return nil, fmt.Errorf("create run root: %w", err)
	}
	// Mount points and loop backing files are reported with symlinks
	// resolved, so keep the resolved form to compare against them.
	resolved, err := filepath.EvalSymlinks(dir)
	if err != nil {
		_ = os.Remove(dir)
		return nil, fmt.Errorf("resolve run root %s: %w", dir, err)
	}
	if err := lock(resolved); err != nil {
		_ = os.RemoveAll(resolved)
		return nil, err
	}
	return &Root{dir: resolved}, nil
}

// Path joins elem onto the root. It panics if the result would lie outside
// the root, because handing out such a path would break the promise that a
// run never touches host paths beyond its own directory.
func (r *Root) Path(elem ...string) string {
	p := filepath.Join(append([]string{r.dir}, elem...)...)
	if !within(p, r.dir) {
		panic(fmt.Sprintf("runroot: path %q escapes root %q", p, r.dir))
	}
	return p
}

// Close tears down everything of the run at or below the root and removes
// it: the processes recorded with RecordProcess that still run, the loop
// devices (found before anything is unmounted, see loops.go), every mount
// (deepest first), and the directory. It is safe to call more than once.
// The error joins everything that could not be cleaned up, naming what was
// left; if a mount survives, the directory is deliberately left in place,
// since removing it would reach through the mount into another file system.
func (r *Root) Close() error {
	if _, err := os.Lstat(r.dir); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	_, err := teardown(r.dir, false)
	return err
}

// Teardown is what tearing down a root did or, in a dry run, would do.
type Teardown struct {
	Dir       string
	Processes []int    // process groups killed
	Loops     []string // loop devices detached, "/dev/loopN (backing file)"
	Mounts    []string // mount points unmounted
}

// teardown tears down the root at dir (see Close); dryRun only looks.
func teardown(dir string, dryRun bool) (Teardown, error) {
	t := Teardown{Dir: dir}
	var errs []error
	for _, s := range recordedProcesses(dir) {
		killed, err := killGroup(s, dryRun)
		if err != nil {
			errs = append(errs, err)
		}
		if killed {
			t.Processes = append(t.Processes, s.pid)
		}
	}
	// Before any unmount: the kubelet's loop devices are recognisable by
	// path only while their bind mounts exist.
	loops, err := runLoops(dir)
	if err != nil {
		errs = append(errs, err)
	}
	mounts, err := mountsBelow(dir)
	if err != nil {
		errs = append(errs, err)
	}
	for _, l := range loops {
		t.Loops = append(t.Loops, l.String())
	}
	t.Mounts = mounts
	if dryRun {
		return t, errors.Join(errs...)
	}
	if err := detachLoops(loops); err != nil {
		errs = append(errs, err)
	}
	if err := SweepMounts(dir); err != nil {
		errs = append(errs, err)
	}
	// A device attached while the first ones went (a driver's last act).
	if late, err := runLoops(dir); err == nil && len(late) > 0 {
		errs = append(errs, detachLoops(late))
		loops = append(loops, late...)
	}
	for _, l := range stillAttached(loops) {
		errs = append(errs, fmt.Errorf("loop device %s is still attached", l))
	}
	remaining, err := mountsBelow(dir)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("leave %s in place: %w", dir, err))
	case len(remaining) > 0:
		errs = append(errs, fmt.Errorf("leave %s in place: %d mount(s) remain below it", dir, len(remaining)))
	default:
		if err := os.RemoveAll(dir); err != nil {
			errs = append(errs, fmt.Errorf("remove run root: %w", err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return t, &LeftBehind{Dir: dir, Err: err}
	}
	return t, nil
}

// LeftBehind is the error of a teardown that could not clean up all of a
// root: Err says what was left (a loop device still attached, a mount, the
// directory). A caller tells the user the run was torn down only if no
// error of this type came back.
type LeftBehind struct {
	Dir string
	Err error
}

func (e *LeftBehind) Error() string {
	return fmt.Sprintf("run root %s not fully torn down: %v", e.Dir, e.Err)
}

func (e *LeftBehind) Unwrap() error { return e.Err }

// maxSweepPasses bounds SweepMounts: each pass removes the top mount of every
// mount point, so only paths mounted over this many times survive.
const maxSweepPasses = 16

// SweepMounts unmounts every mount point at or below dir, deepest first. A
// busy mount is detached lazily (MNT_DETACH) so it disappears from the mount
// table at once. Paths mounted several times over are unmounted until none
// remain.
func SweepMounts(dir string) error {
	dir = resolve(dir)
	var errs []error
	for pass := 0; pass < maxSweepPasses; pass++ {
		mounts, err := mountsBelow(dir)
		if err != nil {
			return err
		}
		if len(mounts) == 0 {
			return nil
		}
		errs = errs[:0]
		progress := false
		for _, mp := range mounts {
			if err := unmount(mp); err != nil {
				errs = append(errs, err)
				continue
			}
			progress = true
		}
		if !progress {
			break
		}
	}
	mounts, err := mountsBelow(dir)
	if err != nil {
		return err
	}
	if len(mounts) == 0 {
		return nil
	}
	return errors.Join(append(errs, fmt.Errorf("mounts remain below %s: %s", dir, strings.Join(mounts, ", ")))...)
}

// mountsBelow lists the distinct mount points at or below dir, deepest first.
func mountsBelow(dir string) ([]string, error) {
	infos, err := mountinfo.GetMounts(mountinfo.PrefixFilter(dir))
	if err != nil {
		return nil, fmt.Errorf("read mount table: %w", err)
	}
	seen := make(map[string]bool, len(infos))
	var mounts []string
	for _, info := range infos {
		if !seen[info.Mountpoint] {
			seen[info.Mountpoint] = true
			mounts = append(mounts, info.Mountpoint)
		}
	}
	sort.Slice(mounts, func(i, j int) bool {
		di, dj := strings.Count(mounts[i], "/"), strings.Count(mounts[j], "/")
		if di != dj {
			return di > dj
		}
		return mounts[i] > mounts[j]
	})
	return mounts, nil
}

func unmount(mp string) error {
	err := unix.Unmount(mp, 0)
	if errors.Is(err, unix.EBUSY) {
		err = unix.Unmount(mp, unix.MNT_DETACH)
	}
	// EINVAL: no longer a mount point (an earlier unmount took it along);
	// ENOENT: the directory went away.
	if err == nil || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.ENOENT) {
		return nil
	}
	return fmt.Errorf("unmount %s: %w", mp, err)
}

// within reports whether p is dir or lies below it.
func within(p, dir string) bool {
	return p == dir || strings.HasPrefix(p, strings.TrimSuffix(dir, "/")+"/")
}

// resolve returns dir with symlinks resolved when possible, so that it can be
// compared with the kernel's view of paths.
func resolve(dir string) string {
	dir = filepath.Clean(dir)
	if r, err := filepath.EvalSymlinks(dir); err == nil {
		return r
	}
	return dir
}
