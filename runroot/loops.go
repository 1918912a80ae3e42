package runroot

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"golang.org/x/sys/unix"
)

// A run's loop devices come in two layers. csisim's driver attaches a
// volume's image file (below the root) to a loop device; the kubelet then
// puts a second loop device on the published device node, bind-mounted
// below the root, as its block volume mapper takes its lock. The second
// one's backing file reads as a path below the root only while that bind
// mount exists: once it is unmounted the kernel reports the device node by
// a path outside the root ("/"), so a device found by path alone would be
// missed. It is the run's all the same, because what backs it is a loop
// device of the run: the kernel's status of a loop device names the device
// number (rdev) of its backing file, which is how the second layer is found
// whatever is mounted.

// sysBlock is where the kernel lists block devices, loop devices included.
const sysBlock = "/sys/block"

// loopMajor is the block device major number of every loop device.
const loopMajor = 7

// loopDevice is one attached loop device.
type loopDevice struct {
	name    string // "loop3"
	backing string // the backing file as the kernel reports it
	dev     uint64 // this device's own number
	rdev    uint64 // the device number of its backing file (a block device's), 0 for a regular file
	layer   int    // 0: backed by a file below the root; n: backed by a layer n-1 device
}

func (l loopDevice) String() string { return fmt.Sprintf("/dev/%s (%s)", l.name, l.backing) }

// attachedLoops lists every attached loop device on the machine.
func attachedLoops() ([]loopDevice, error) {
	entries, err := os.ReadDir(sysBlock)
	if err != nil {
		return nil, fmt.Errorf("list loop devices: %w", err)
	}
	var out []loopDevice
	for _, e := range entries {
		name := e.Name()
		if !strings.HasPrefix(name, "loop") {
			continue
		}
		raw, err := os.ReadFile(filepath.Join(sysBlock, name, "loop", "backing_file"))
		if err != nil {
			continue // no backing_file: not attached
		}
		l := loopDevice{name: name, backing: strings.TrimSuffix(strings.TrimSpace(string(raw)), " (deleted)")}
		if l.dev, err = deviceNumber(name); err != nil {
			continue // gone meanwhile
		}
		if info, err := loopStatus(name); err == nil {
			l.rdev = info.Rdevice
		}
		out = append(out, l)
	}
	return out, nil
}

// deviceNumber reads a block device's number from sysfs ("7:3").
func deviceNumber(name string) (uint64, error) {
	raw, err := os.ReadFile(filepath.Join(sysBlock, name, "dev"))
	if err != nil {
		return 0, err
	}
	var major, minor uint32
	if _, err := fmt.Sscanf(strings.TrimSpace(string(raw)), "%d:%d", &major, &minor); err != nil {
		return 0, fmt.Errorf("device number of %s: %w", name, err)
	}
	return unix.Mkdev(major, minor), nil
}

// loopStatus asks the kernel for a loop device's status.
func loopStatus(name string) (*unix.LoopInfo64, error) {
	f, err := os.OpenFile("/dev/"+name, os.O_RDONLY, 0)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	return unix.IoctlLoopGetStatus64(int(f.Fd()))
}

// runLoops returns the loop devices that belong to the run rooted at dir:
// those backed by a file at or below dir, and, layer by layer, those backed
// by one of them. Upper layers come first, the order to detach them in.
func runLoops(dir string) ([]loopDevice, error) {
	all, err := attachedLoops()
	if err != nil {
		return nil, err
	}
	owned := map[uint64]int{} // device number -> layer
	for _, l := range all {
		if within(l.backing, dir) {
			owned[l.dev] = 0
		}
	}
	for layer := 1; ; layer++ {
		grew := false
		for _, l := range all {
			if _, ok := owned[l.dev]; ok || l.rdev == 0 || unix.Major(l.rdev) != loopMajor {
				continue
			}
			if below, ok := owned[l.rdev]; ok && below == layer-1 {
				owned[l.dev] = layer
				grew = true
			}
		}
		if !grew {
			break
		}
	}
	var out []loopDevice
	for _, l := range all {
		if layer, ok := owned[l.dev]; ok {
			l.layer = layer
			out = append(out, l)
		}
	}
	sort.SliceStable(out, func(i, j int) bool { return out[i].layer > out[j].layer })
	return out, nil
}

// detachLoops detaches the given devices in order.
func detachLoops(loops []loopDevice) error {
	var errs []error
	for _, l := range loops {
		if err := detachLoop("/dev/" + l.name); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// detachLoop clears a loop device's backing file. If the device is still
// open elsewhere (a file system on it still mounted, an upper layer on it),
// the kernel defers the detach until the last user closes it.
func detachLoop(dev string) error {
	f, err := os.OpenFile(dev, os.O_RDONLY, 0)
	if errors.Is(err, os.ErrNotExist) || errors.Is(err, unix.ENXIO) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("detach loop device %s: %w", dev, err)
	}
	defer f.Close()
	if err := unix.IoctlSetInt(int(f.Fd()), unix.LOOP_CLR_FD, 0); err != nil && !errors.Is(err, unix.ENXIO) {
		return fmt.Errorf("detach loop device %s: %w", dev, err)
	}
	return nil
}

// loopSettle bounds the wait for deferred detaches to happen once the last
// user of a device is gone.
const loopSettle = 2 * time.Second

// stillAttached returns those of loops that are still attached to what
// backed them, after waiting up to loopSettle for them to go. A device
// backed by a block device is compared by that device's number, since its
// path may read differently once a bind mount went.
func stillAttached(loops []loopDevice) []loopDevice {
	deadline := time.Now().Add(loopSettle)
	for {
		now, err := attachedLoops()
		if err != nil {
			return loops
		}
		var left []loopDevice
		for _, l := range loops {
			for _, n := range now {
				if n.name == l.name && ((l.rdev != 0 && n.rdev == l.rdev) || (l.rdev == 0 && n.backing == l.backing)) {
					left = append(left, l)
				}
			}
		}
		if len(left) == 0 || time.Now().After(deadline) {
			return left
		}
		time.Sleep(20 * time.Millisecond)
	}
}
