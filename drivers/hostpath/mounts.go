package hostpath

// Which mounts show which volume, and taking them down.

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// maxStackedMounts bounds how many mounts on one path an unstage or
// unpublish peels off before giving up.
const maxStackedMounts = 8

// volumeIdentity is what tells the mounts of a volume from any others.
type volumeIdentity struct {
	kind volumeKind
	// dirDev and dirIno identify a directory volume's backend directory:
	// a bind mount's root has the device and inode of its source, which
	// identifies the volume without parsing mount sources.
	dirDev, dirIno uint64
	// device and rdev are a block volume's loop device and its number;
	// files on the file system in it have that device number, and the
	// node bind-mounted for access type block is that device. Empty if
	// no loop device is attached.
	device string
	rdev   uint64
}

// matches reports whether st, the stat of a mount point, shows the volume.
func (v volumeIdentity) matches(st *unix.Stat_t) bool {
	switch {
	case v.kind == kindDirectory && (v.dirDev != 0 || v.dirIno != 0):
		return st.Dev == v.dirDev && st.Ino == v.dirIno
	case v.kind == kindBlock && v.rdev != 0:
		if st.Mode&unix.S_IFMT == unix.S_IFBLK {
			return st.Rdev == v.rdev
		}
		return st.Dev == v.rdev
	}
	return false
}

// identify finds what identifies volume id of the given kind. For a block
// volume, device is the loop device the caller believes in; if it is not
// (or no longer) the volume's, the kernel's list of loop devices is
// searched. A volume whose backing is gone has an identity that matches
// nothing.
func (d *Driver) identify(id string, kind volumeKind, device string) (volumeIdentity, error) {
	ident := volumeIdentity{kind: kind}
	switch kind {
	case kindDirectory:
		var st unix.Stat_t
		err := unix.Stat(d.volumeDir(id), &st)
		if errors.Is(err, unix.ENOENT) {
			return ident, nil
		}
		if err != nil {
			return ident, fmt.Errorf("stat volume %s: %w", id, err)
		}
		ident.dirDev, ident.dirIno = st.Dev, st.Ino
	case kindBlock:
		image := d.volumeImage(id)
		if device == "" || checkLoopDevice(device, image) != nil {
			var err error
			if device, err = findLoop(image); err != nil {
				return ident, err
			}
		}
		if device == "" {
			return ident, nil
		}
		rdev, err := deviceRdev(device)
		if err != nil {
			return ident, err
		}
		ident.device, ident.rdev = device, rdev
	}
	return ident, nil
}

// identifyExisting is identify for calls that may come after the volume
// was deleted; such a volume's identity matches nothing.
func (d *Driver) identifyExisting(id, device string) (volumeIdentity, error) {
	kind, ok, err := d.volumeKindOf(id)
	if err != nil || !ok {
		return volumeIdentity{}, err
	}
	return d.identify(id, kind, device)
}

// mountState says what is mounted on a path.
type mountState struct {
	mounted bool
	// isVolume: the path shows the volume (see volumeIdentity).
	isVolume bool
	stat     *unix.Stat_t
}

func (m mountState) ours() bool { return m.mounted && m.isVolume }

// mountOf tells whether path is a mount point and whether it shows the
// volume.
func mountOf(path string, ident volumeIdentity) (mountState, error) {
	mounted, err := mountinfo.Mounted(path)
	if errors.Is(err, os.ErrNotExist) {
		return mountState{}, nil
	}
	if err != nil {
		return mountState{}, fmt.Errorf("check mount point %s: %w", path, err)
	}
	if !mounted {
		return mountState{}, nil
	}
	var st unix.Stat_t
	if err := unix.Stat(path, &st); err != nil {
		return mountState{}, fmt.Errorf("stat %s: %w", path, err)
	}
	return mountState{mounted: true, isVolume: ident.matches(&st), stat: &st}, nil
}

// unmountVolume unmounts path until nothing is mounted there. It refuses to
// unmount something that is neither shown to be the volume nor recorded as
// mounted by this plugin. Errors are gRPC statuses prefixed with method.
func (d *Driver) unmountVolume(method, path string, ident volumeIdentity, recorded bool) error {
	for range maxStackedMounts {
		m, err := mountOf(path, ident)
		if err != nil {
			return status.Errorf(codes.Internal, "%s: %v", method, err)
		}
		if !m.mounted {
			return nil
		}
		if !m.ours() && !recorded {
			return status.Errorf(codes.FailedPrecondition, "%s: %s holds a mount that is not this volume", method, path)
		}
		if err := unmount(path); err != nil {
			return status.Errorf(codes.Internal, "%s: %v", method, err)
		}
	}
	return status.Errorf(codes.Internal, "%s: %s is still mounted after %d unmounts", method, path, maxStackedMounts)
}

// dirMountedAt is a mount point that shows directory volume id (a node
// plugin's staging or publishing bind mount of it), or "" if none does.
// Every plugin of a run mounts in this machine's mount table, so the
// controller plugin sees the node plugins' mounts there: a bind mount's
// root is its source directory's path within its file system, whose last
// element is the volume's ID, and its mount point has the directory's
// device and inode.
func (d *Driver) dirMountedAt(id string) (string, error) {
	ident, err := d.identify(id, kindDirectory, "")
	if err != nil || (ident.dirDev == 0 && ident.dirIno == 0) {
		return "", err
	}
	infos, err := mountinfo.GetMounts(func(i *mountinfo.Info) (skip, stop bool) {
		return filepath.Base(i.Root) != id, false
	})
	if err != nil {
		return "", fmt.Errorf("read mount table: %w", err)
	}
	for _, info := range infos {
		var st unix.Stat_t
		if unix.Stat(info.Mountpoint, &st) != nil {
			continue // gone meanwhile, or not ours to look at
		}
		if ident.matches(&st) {
			return info.Mountpoint, nil
		}
	}
	return "", nil
}
