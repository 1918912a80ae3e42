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
// temporary directory.
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

// Close unmounts everything mounted at or below the root (deepest first),
// detaches loop devices whose backing file lies below the root and then
// removes the directory. It is safe to call more than once. The error joins
// everything that could not be cleaned up; if a mount survives, the directory
// is deliberately left in place, since removing it would reach through the
// mount into another file system.
func (r *Root) Close() error {
	var errs []error
	if err := SweepMounts(r.dir); err != nil {
		errs = append(errs, err)
	}
	if err := detachLoopDevices(r.dir); err != nil {
		errs = append(errs, err)
	}
	remaining, err := mountsBelow(r.dir)
	switch {
	case err != nil:
		errs = append(errs, fmt.Errorf("leave %s in place: %w", r.dir, err))
	case len(remaining) > 0:
		errs = append(errs, fmt.Errorf("leave %s in place: %d mount(s) remain below it", r.dir, len(remaining)))
	default:
		if err := os.RemoveAll(r.dir); err != nil {
			errs = append(errs, fmt.Errorf("remove run root: %w", err))
		}
	}
	return errors.Join(errs...)
}

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

// sysBlock is where the kernel lists block devices, loop devices included.
const sysBlock = "/sys/block"

// detachLoopDevices detaches every loop device whose backing file lies at or
// below dir.
func detachLoopDevices(dir string) error {
	dir = resolve(dir)
	entries, err := os.ReadDir(sysBlock)
	if err != nil {
		return fmt.Errorf("list loop devices: %w", err)
	}
	var errs []error
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "loop") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(sysBlock, name, "loop", "backing_file"))
		if err != nil {
			// No backing_file: the device is not attached.
			continue
		}
		backing := strings.TrimSuffix(strings.TrimSpace(string(raw)), " (deleted)")
		if !within(backing, dir) {
			continue
		}
		if err := detachLoop("/dev/" + name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// detachLoop clears a loop device's backing file. If the device is still
// open elsewhere, the kernel defers the detach until the last user closes it.
func detachLoop(dev string) error {
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("detach loop device %s: %w", dev, err)
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("detach loop device %s: %w", dev, err)
	}
	return nil
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
