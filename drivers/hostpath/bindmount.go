package hostpath

import (
	"errors"
	"fmt"

	"golang.org/x/sys/unix"
)

// Bind mounts are made and removed with mount(2) and umount(2) directly:
// the mount and umount binaries that mount-utils runs cost about 8 ms a
// call on the machines csisim runs on, which is most of a NodeStageVolume
// or NodePublishVolume. Mount flags from a volume capability are options in
// mount(8) syntax, so a bind mount with any is left to mount-utils, which
// hands them to the mount binary.

// preservedFlags are the per-mount flags a read-only remount must carry
// over: dropping one that the kernel locked (a mount inherited into a user
// namespace) fails with EPERM. statfs reports them with the values of the
// MS_ flags.
const preservedFlags = unix.MS_NOSUID | unix.MS_NODEV | unix.MS_NOEXEC | unix.MS_NOATIME | unix.MS_NODIRATIME | unix.MS_RELATIME

// bindMount bind-mounts source (a directory, or a device node onto a file)
// on target, read-only if readonly, with mount flags in mount(8) syntax.
func (d *Driver) bindMount(source, target string, readonly bool, mountFlags []string) error {
	mountFlags = hostMountOptions(mountFlags, d.seLinux)
	if len(mountFlags) > 0 {
		options := []string{"bind"}
		if readonly {
			options = append(options, "ro")
		}
		return d.mounter.Mount(source, target, "", append(options, mountFlags...))
	}
	if err := unix.Mount(source, target, "", unix.MS_BIND, ""); err != nil {
		return fmt.Errorf("bind mount %s on %s: %w", source, target, err)
	}
	if !readonly {
		return nil
	}
	// A bind mount takes no flags of its own at first: read-only needs a
	// remount of the new mount.
	var st unix.Statfs_t
	err := unix.Statfs(target, &st)
	if err == nil {
		flags := uintptr(unix.MS_BIND|unix.MS_REMOUNT|unix.MS_RDONLY) | uintptr(st.Flags)&preservedFlags
		err = unix.Mount("", target, "", flags, "")
	}
	if err != nil {
		return errors.Join(fmt.Errorf("make bind mount %s read-only: %w", target, err), unmount(target))
	}
	return nil
}

// unmount unmounts the top mount on path.
func unmount(path string) error {
	if err := unix.Unmount(path, 0); err != nil {
		return fmt.Errorf("unmount %s: %w", path, err)
	}
	return nil
}
