package hostpath

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/moby/sys/mountinfo"
	"golang.org/x/sys/unix"
)

// Loop devices back block volumes: ControllerPublishVolume attaches a
// volume's image file to one, the node formats and mounts it or hands the
// device itself to the pod, ControllerUnpublishVolume detaches it. The
// kernel's table of loop devices is the truth about what is attached: it
// survives a plugin restart, so the plugin looks there instead of trusting
// its own records.

// sysBlock is where the kernel lists block devices, loop devices included.
const sysBlock = "/sys/block"

// loopControl hands out free loop devices, creating them on demand.
const loopControl = "/dev/loop-control"

// loopMajor is the block device major number of every loop device.
const loopMajor = 7

// loopAttachAttempts bounds the retries when another process grabs the
// free device between LOOP_CTL_GET_FREE and LOOP_CONFIGURE.
const loopAttachAttempts = 16

var loopDevicePattern = regexp.MustCompile(`^/dev/loop[0-9]+$`)

// loopBackingFile returns the file behind loop device name ("loop3"), or ""
// if the device is not attached.
func loopBackingFile(name string) (string, error) {
	raw, err := os.ReadFile(filepath.Join(sysBlock, name, "loop", "backing_file"))
	if errors.Is(err, os.ErrNotExist) {
		return "", nil // no loop/backing_file: not attached
	}
	if err != nil {
		return "", fmt.Errorf("read backing file of %s: %w", name, err)
	}
	// A backing file removed while attached is reported with this suffix;
	// it still identifies the image the device was attached to.
	return strings.TrimSuffix(strings.TrimSpace(string(raw)), " (deleted)"), nil
}

// findLoop returns the loop device (/dev/loopN) that image is attached to,
// or "" if none is. image must be an absolute path with symlinks resolved,
// since that is how the kernel reports it.
func findLoop(image string) (string, error) {
	entries, err := os.ReadDir(sysBlock)
	if err != nil {
		return "", fmt.Errorf("list loop devices: %w", err)
	}
	for _, e := range entries {
		if !strings.HasPrefix(e.Name(), "loop") {
			continue
		}
		backing, err := loopBackingFile(e.Name())
		if err != nil {
			return "", err
		}
		if backing == image {
			return "/dev/" + e.Name(), nil
		}
	}
	return "", nil
}

// attachLoop attaches image to a loop device and returns the device, or the
// device it is attached to already.
func attachLoop(image string) (string, error) {
	if dev, err := findLoop(image); err != nil || dev != "" {
		return dev, err
	}
	ctl, err := os.OpenFile(loopControl, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("attach %s: %w", image, err)
	}
	defer ctl.Close()
	backing, err := os.OpenFile(image, os.O_RDWR, 0)
	if err != nil {
		return "", fmt.Errorf("attach %s: %w", image, err)
	}
	defer backing.Close()

	for range loopAttachAttempts {
		n, err := unix.IoctlRetInt(int(ctl.Fd()), unix.LOOP_CTL_GET_FREE)
		if err != nil {
			return "", fmt.Errorf("attach %s: find free loop device: %w", image, err)
		}
		dev := fmt.Sprintf("/dev/loop%d", n)
		busy, err := configureLoop(dev, n, backing, image)
		if err != nil {
			return "", fmt.Errorf("attach %s to %s: %w", image, dev, err)
		}
		if !busy {
			return dev, nil
		}
		// Someone else configured the device first; ask for another.
	}
	return "", fmt.Errorf("attach %s: every free loop device was taken by others %d times in a row", image, loopAttachAttempts)
}

// configureLoop binds backing to loop device dev (number n). busy reports
// that another process bound the device first.
func configureLoop(dev string, n int, backing *os.File, image string) (busy bool, err error) {
	f, err := os.OpenFile(dev, os.O_RDWR, 0)
	if errors.Is(err, os.ErrNotExist) {
		// A /dev that is not devtmpfs (some containers) lacks the nodes
		// the kernel creates on demand.
		if err := unix.Mknod(dev, unix.S_IFBLK|0o660, int(unix.Mkdev(loopMajor, uint32(n)))); err != nil && !errors.Is(err, unix.EEXIST) {
			return false, fmt.Errorf("create device node: %w", err)
		}
		f, err = os.OpenFile(dev, os.O_RDWR, 0)
	}
	if err != nil {
		return false, err
	}
	defer f.Close()
	cfg := unix.LoopConfig{Fd: uint32(backing.Fd())}
	// The name is informational (losetup shows it) and truncated by the
	// kernel; sysfs has the full path.
	copy(cfg.Info.File_name[:len(cfg.Info.File_name)-1], image)
	err = unix.IoctlLoopConfigure(int(f.Fd()), &cfg)
	if errors.Is(err, unix.EBUSY) {
		return true, nil
	}
	return false, err
}

// detachLoop detaches a loop device. A device that is already detached is
// fine. The caller checks loopInUse first: for a device still open
// elsewhere the kernel only defers the detach to the last close.
func detachLoop(dev string) error {
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("detach %s: %w", dev, err)
	}
	return nil
}

// loopInUse reports whether something uses a loop device: a mounted file
// system on it (or any other exclusive holder), or a bind mount of its
// device node, which is how a block-mode volume reaches a pod.
func loopInUse(dev string) (bool, error) {
	fd, err := unix.Open(dev, unix.O_RDONLY|unix.O_EXCL|unix.O_CLOEXEC, 0)
	switch {
	case errors.Is(err, unix.EBUSY):
		return true, nil
	case errors.Is(err, unix.ENOENT):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("check whether %s is in use: %w", dev, err)
	}
	unix.Close(fd)

	var devStat unix.Stat_t
	if err := unix.Stat(dev, &devStat); err != nil {
		return false, fmt.Errorf("stat %s: %w", dev, err)
	}
	name := filepath.Base(dev)
	// A bind mount of a device node shows the node's path within its file
	// system as the mount's root; /dev/loop3 appears as "/loop3".
	infos, err := mountinfo.GetMounts(func(i *mountinfo.Info) (skip, stop bool) {
		return filepath.Base(i.Root) != name, false
	})
	if err != nil {
		return false, fmt.Errorf("read mount table: %w", err)
	}
	for _, info := range infos {
		var st unix.Stat_t
		if unix.Stat(info.Mountpoint, &st) != nil {
			continue // gone meanwhile, or not ours to look at
		}
		if st.Mode&unix.S_IFMT == unix.S_IFBLK && st.Rdev == devStat.Rdev {
			return true, nil
		}
	}
	return false, nil
}

// setLoopCapacity makes a loop device take on the current size of its
// backing file, after the controller grew it.
func setLoopCapacity(dev string) error {
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if err != nil {
		return fmt.Errorf("refresh capacity of %s: %w", dev, err)
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_SET_CAPACITY, 0); err != nil {
		return fmt.Errorf("refresh capacity of %s: %w", dev, err)
	}
	return nil
}

// blockDeviceSize returns the size of a block device in bytes, as the
// kernel sees it.
func blockDeviceSize(dev string) (int64, error) {
	raw, err := os.ReadFile(filepath.Join(sysBlock, filepath.Base(dev), "size"))
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", dev, err)
	}
	sectors, err := strconv.ParseInt(strings.TrimSpace(string(raw)), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("size of %s: %w", dev, err)
	}
	return sectors * 512, nil // sysfs counts 512-byte sectors, whatever the block size
}

// deviceRdev returns the device number of a block device node.
func deviceRdev(dev string) (uint64, error) {
	var st unix.Stat_t
	if err := unix.Stat(dev, &st); err != nil {
		return 0, fmt.Errorf("stat %s: %w", dev, err)
	}
	if st.Mode&unix.S_IFMT != unix.S_IFBLK {
		return 0, fmt.Errorf("%s is not a block device", dev)
	}
	return st.Rdev, nil
}

// errNotOurDevice says that a device handed in by the CO is not the loop
// device of the volume.
var errNotOurDevice = errors.New("not the volume's loop device")

// checkLoopDevice verifies that dev, as named in a publish context, is a
// loop device attached to image. The node formats what it is given, so it
// must never take the CO's word for it.
func checkLoopDevice(dev, image string) error {
	if !loopDevicePattern.MatchString(dev) {
		return fmt.Errorf("%q is not a loop device path (/dev/loopN): %w", dev, errNotOurDevice)
	}
	rdev, err := deviceRdev(dev)
	if err != nil {
		return fmt.Errorf("%w: %w", errNotOurDevice, err)
	}
	if unix.Major(rdev) != loopMajor {
		return fmt.Errorf("%s has major number %d, not %d: %w", dev, unix.Major(rdev), loopMajor, errNotOurDevice)
	}
	backing, err := loopBackingFile(filepath.Base(dev))
	if err != nil {
		return err
	}
	switch backing {
	case image:
		return nil
	case "":
		return fmt.Errorf("%s is not attached to anything: %w", dev, errNotOurDevice)
	}
	return fmt.Errorf("%s is attached to %s, not %s: %w", dev, backing, image, errNotOurDevice)
}
