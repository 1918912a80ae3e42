package hostpath

import (
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"sort"

	"golang.org/x/sys/unix"
	utilexec "k8s.io/utils/exec"
)

// File system growth. A block volume's file system must follow its device
// when the device grows (ControllerExpandVolume, or a restore into a larger
// volume). Growing a mounted ext2/3/4 file system (resize2fs through the
// EXT4_IOC_RESIZE_FS ioctl) needs CAP_SYS_RESOURCE, which containers often
// drop; growing an unmounted one needs only write access to the device. So:
//
//   - NodeStageVolume grows an ext file system before mounting it;
//   - NodeExpandVolume grows it online where the process may, and otherwise
//     takes the node's mounts of the volume down, grows it offline and
//     puts the mounts back, which works as long as nothing holds files
//     open on it (in the simulator, nothing does);
//   - xfs (xfs_growfs needs CAP_SYS_ADMIN, which mounting needs anyway)
//     always grows online.

// extSuperblock is what growth needs from an ext2/3/4 superblock.
type extSuperblock struct {
	blocks    uint64
	blockSize uint64
}

// readExtSuperblock reads the superblock of the ext2/3/4 file system on
// dev; ok is false if dev holds no such file system.
func readExtSuperblock(dev string) (sb extSuperblock, ok bool, err error) {
	f, err := os.Open(dev)
	if err != nil {
		return sb, false, fmt.Errorf("read superblock: %w", err)
	}
	defer f.Close()
	var raw [1024]byte
	if _, err := f.ReadAt(raw[:], 1024); err != nil {
		return sb, false, fmt.Errorf("read superblock of %s: %w", dev, err)
	}
	le := binary.LittleEndian
	if le.Uint16(raw[0x38:]) != 0xEF53 { // s_magic
		return sb, false, nil
	}
	sb.blocks = uint64(le.Uint32(raw[0x04:])) // s_blocks_count_lo
	if le.Uint32(raw[0x60:])&0x80 != 0 {      // s_feature_incompat & INCOMPAT_64BIT
		sb.blocks |= uint64(le.Uint32(raw[0x150:])) << 32 // s_blocks_count_hi
	}
	sb.blockSize = uint64(1024) << le.Uint32(raw[0x18:]) // s_log_block_size
	return sb, true, nil
}

// extNeedsGrowth reports whether dev holds an ext2/3/4 file system (isExt)
// that leaves at least one block of the device unused (grow). Reading the
// superblock is cheaper than running resize2fs on every stage.
func extNeedsGrowth(dev string) (isExt, grow bool, err error) {
	sb, ok, err := readExtSuperblock(dev)
	if err != nil || !ok {
		return false, false, err
	}
	size, err := blockDeviceSize(dev)
	if err != nil {
		return true, false, err
	}
	return true, uint64(size) >= (sb.blocks+1)*sb.blockSize, nil
}

// growExtOffline grows the ext file system on dev, which must not be
// mounted, to fill the device; a device without an ext file system, or
// with one that fills it, is left alone.
func (d *Driver) growExtOffline(dev string) error {
	isExt, grow, err := extNeedsGrowth(dev)
	if err != nil || !isExt || !grow {
		return err
	}
	// resize2fs insists on a freshly checked file system.
	if out, err := d.exec.Command("e2fsck", "-f", "-p", dev).CombinedOutput(); err != nil {
		var exit utilexec.ExitError
		if !errors.As(err, &exit) || exit.ExitStatus() != 1 { // 1: errors corrected
			return fmt.Errorf("e2fsck %s: %w: %s", dev, err, out)
		}
	}
	if out, err := d.exec.Command("resize2fs", dev).CombinedOutput(); err != nil {
		return fmt.Errorf("resize2fs %s: %w: %s", dev, err, out)
	}
	return nil
}

// hasCapability reports whether the process has capability c in its
// effective set.
func hasCapability(c int) bool {
	hdr := unix.CapUserHeader{Version: unix.LINUX_CAPABILITY_VERSION_3}
	var data [2]unix.CapUserData
	if err := unix.Capget(&hdr, &data[0]); err != nil {
		return false
	}
	return data[c/32].Effective&(1<<(c%32)) != 0
}

// growMounted grows the file system of block volume id on dev, mounted at
// path. The caller holds mu.
func (d *Driver) growMounted(id, dev, path string) error {
	isExt, grow, err := extNeedsGrowth(dev)
	if err != nil {
		return err
	}
	switch {
	case isExt && !grow:
		return nil
	case isExt && !d.onlineExtResize:
		return d.growExtRemounting(id, dev)
	}
	if _, err := d.resizer.Resize(dev, path); err != nil {
		return fmt.Errorf("grow file system: %w", err)
	}
	return nil
}

// growExtRemounting grows a mounted ext file system offline: it unmounts
// the volume's targets and staging path, grows the file system and mounts
// everything again as it was. If something keeps a mount busy, everything
// is put back and the error says so. The caller holds mu.
func (d *Driver) growExtRemounting(id, dev string) (err error) {
	st, ok := d.state.Staged[id]
	if !ok || st.Block {
		return fmt.Errorf("volume %s is not staged with access type mount on this node", id)
	}
	var targets []string
	for t, p := range d.state.Published[id] {
		if !p.Block {
			targets = append(targets, t)
		}
	}
	sort.Strings(targets)

	// Targets first: they are bind mounts of the staging mount.
	var down []string
	defer func() {
		if err == nil {
			return
		}
		// Put back what was taken down, staging path first.
		for i := len(down) - 1; i >= 0; i-- {
			if rerr := d.remount(id, down[i], st); rerr != nil {
				err = errors.Join(err, rerr)
			}
		}
	}()
	for _, p := range append(targets, st.StagingPath) {
		if err := unmount(p); err != nil {
			return fmt.Errorf("take mounts down to grow the file system offline (this process lacks CAP_SYS_RESOURCE for an online resize): %w", err)
		}
		down = append(down, p)
	}
	if err := d.growExtOffline(dev); err != nil {
		return err
	}
	for i := len(down) - 1; i >= 0; i-- {
		if err := d.remount(id, down[i], st); err != nil {
			down = down[:i+1]
			return err
		}
	}
	down = nil
	return nil
}

// remount mounts path again as NodeStageVolume (the staging path) or
// NodePublishVolume (a target) mounted it.
func (d *Driver) remount(id, path string, st *stageRecord) error {
	if path == st.StagingPath {
		fsType := st.FsType
		if fsType == "" {
			fsType = defaultFsType
		}
		if err := d.mounter.Mount(st.Device, path, fsType, d.stageMountOptions(st)); err != nil {
			return fmt.Errorf("mount %s on %s again: %w", st.Device, path, err)
		}
		return nil
	}
	p := d.state.Published[id][path]
	if err := d.bindMount(st.StagingPath, path, p.Readonly, p.MountFlags); err != nil {
		return fmt.Errorf("mount again: %w", err)
	}
	return nil
}

// stageMountOptions are the options a block volume's file system is
// mounted with on the staging path.
func (d *Driver) stageMountOptions(st *stageRecord) []string {
	options := append([]string(nil), hostMountOptions(st.MountFlags, d.seLinux)...)
	if st.Readonly {
		options = append(options, "ro")
	}
	return options
}
