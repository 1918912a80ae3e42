package realnodes

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"syscall"
	"time"

	"github.com/moby/sys/mountinfo"
)

// The kernel settings the kubelet changes at start when
// protectKernelDefaults is false (pkg/kubelet/cm's setupKernelTunables):
// it wants vm.overcommit_memory=1, kernel.panic=10, kernel.panic_on_oops=1.
var kubeletSysctls = []string{"vm/overcommit_memory", "kernel/panic", "kernel/panic_on_oops"}

// fixedPaths are the host paths a kubelet or containerd 1.6 uses whatever
// their root directories are: the device-plugin directory
// (pkg/kubelet/apis/deviceplugin's DevicePluginPath), the container log
// symlinks (pkg/kubelet/kuberuntime's ContainerLogsDir), the runc and
// shim state containerd 1.6 keeps below /run/containerd, and the network
// namespaces its CRI plugin bind-mounts below /var/run/netns. Those that
// did not exist before a run are removed after it; of those that did, only
// what the run put in them.
var fixedPaths = []string{
	"/var/lib/kubelet/device-plugins", "/var/lib/kubelet",
	"/var/log/containers", "/var/log/pods",
	"/run/containerd/runc", "/run/containerd/s", "/run/containerd/fifo", "/run/containerd/io.containerd.runtime.v2.task", "/run/containerd",
	"/var/run/netns", "/run/netns",
}

// Host is what real nodes change on the machine outside their run root,
// as it was before they started, so Restore can put it back. It is
// written to a file in the run root too, so that `csisim clean` can
// restore a machine a killed run left changed.
type Host struct {
	// Sysctls by /proc/sys path below /proc/sys.
	Sysctls map[string]string `json:"sysctls"`
	// Existed are the fixed paths that were there before.
	Existed []string `json:"existed"`
	// CgroupRoot is the cgroup (the same name in every hierarchy) below
	// which the nodes' kubelets put their pods; Restore removes it.
	CgroupRoot string `json:"cgroupRoot"`
	// Since is when the run started: what appeared in a fixed path that
	// existed before, later than Since and pointing into the run root, is
	// the run's.
	Since   time.Time `json:"since"`
	RunRoot string    `json:"runRoot"`
	// LockDir is where the host lock and the holder's record are
	// (hostlock.go); DefaultHostLockDir when empty.
	LockDir string `json:"lockDir,omitempty"`
	// Adopted is the run root of a run that died holding the host, whose
	// record of the machine this one took over.
	Adopted string `json:"adopted,omitempty"`

	lock    *hostLock // held from CaptureHost to Restore
	procSys string    // /proc/sys; a test's directory in tests
}

// sysctlPath is where the kernel setting k is read and written.
func (h *Host) sysctlPath(k string) string {
	if h.procSys == "" {
		return filepath.Join("/proc/sys", k)
	}
	return filepath.Join(h.procSys, k)
}

// hostStateFile is where CaptureHost records the host in the run root.
const hostStateFile = "host-state.json"

// CaptureHost takes the host (hostlock.go: waiting, with a line to logf,
// while another run with real nodes holds it, until ctx ends), records the
// host's state before real nodes start below runRoot and creates the run's
// cgroup root in every cgroup hierarchy. Restore puts the host back and
// lets go of it.
func CaptureHost(ctx context.Context, runRoot, cgroupRoot string, logf func(string, ...any)) (*Host, error) {
	lock, err := lockHost(ctx, DefaultHostLockDir, runRoot, logf)
	if err != nil {
		return nil, err
	}
	h, err := recordHost(lock, runRoot, cgroupRoot, logf)
	if err != nil {
		return nil, errors.Join(err, lock.release(false))
	}
	return h, nil
}

// recordHost records the machine as found (machineAsFound) in the run
// root and beside the lock, and makes the run's cgroups.
func recordHost(lock *hostLock, runRoot, cgroupRoot string, logf func(string, ...any)) (*Host, error) {
	h := &Host{CgroupRoot: cgroupRoot, Since: time.Now(), RunRoot: runRoot, LockDir: lock.dir, lock: lock}
	if err := h.machineAsFound(lock); err != nil {
		return nil, err
	}
	if h.Adopted != "" && logf != nil {
		logf("a run with real nodes (root %s) died before putting the host back; this run puts it back as that run found it", h.Adopted)
	}
	data, err := json.MarshalIndent(h, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := lock.keepRecord(data); err != nil {
		return nil, err
	}
	if err := os.WriteFile(filepath.Join(runRoot, hostStateFile), data, 0o600); err != nil {
		return nil, fmt.Errorf("recording the host's state: %w", err)
	}
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return nil, err
	}
	for _, dir := range hierarchies {
		if err := os.MkdirAll(filepath.Join(dir, cgroupRoot), 0o755); err != nil {
			return nil, fmt.Errorf("creating the nodes' cgroup in %s: %w", dir, err)
		}
	}
	return h, nil
}

// machineAsFound fills in the sysctls and fixed paths as they are — or,
// when the run that held the host before died without putting it back, as
// that run found them.
func (h *Host) machineAsFound(lock *hostLock) error {
	h.Sysctls, h.Existed = map[string]string{}, nil
	for _, k := range kubeletSysctls {
		b, err := os.ReadFile(h.sysctlPath(k))
		if err != nil {
			return fmt.Errorf("reading sysctl %s: %w", k, err)
		}
		h.Sysctls[k] = strings.TrimSpace(string(b))
	}
	for _, p := range fixedPaths {
		if _, err := os.Lstat(p); err == nil {
			h.Existed = append(h.Existed, p)
		}
	}
	left, err := lock.leftRecord()
	if err != nil || left == nil {
		return err
	}
	h.Sysctls, h.Existed, h.Adopted = left.Sysctls, left.Existed, left.RunRoot
	return nil
}

// LoadHost reads what CaptureHost recorded in runRoot, for a clean-up
// after the run that made it is gone.
func LoadHost(runRoot string) (*Host, error) {
	data, err := os.ReadFile(filepath.Join(runRoot, hostStateFile))
	if err != nil {
		return nil, err
	}
	var h Host
	if err := json.Unmarshal(data, &h); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(runRoot, hostStateFile), err)
	}
	return &h, nil
}

// Restore kills what is left in the run's cgroups and removes them, puts
// the sysctls back and removes from the fixed paths what the run made, and
// lets go of the host. Call it when every kubelet and containerd of the
// run has stopped. For a dead run's record (LoadHost) while another live
// run holds the host, it does only what is the dead run's own: that run
// took over its record and puts the machine back at its end.
func (h *Host) Restore() error {
	var errs []error
	// A dead run's shims outlive it (each is in a session of its own).
	if h.RunRoot != "" {
		killShims(func(address string) bool { return strings.HasPrefix(address, h.RunRoot+"/") })
	}
	errs = append(errs, h.removeCgroups())
	lock := h.lock
	if lock == nil {
		dir := h.LockDir
		if dir == "" {
			dir = DefaultHostLockDir
		}
		l, free, err := tryLockHost(dir)
		if err != nil || !free {
			for _, p := range fixedPaths {
				errs = append(errs, h.removeOwnEntries(p, false))
			}
			return errors.Join(append(errs, err)...)
		}
		lock = l
		// The last holder's record, if it died too, knows the machine
		// as found best: it may have adopted this run's.
		if left, err := l.leftRecord(); err == nil && left != nil {
			h.Sysctls, h.Existed = left.Sysctls, left.Existed
		}
	}
	h.lock = nil
	for k, v := range h.Sysctls {
		if err := os.WriteFile(h.sysctlPath(k), []byte(v), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("restoring sysctl %s=%s: %w", k, v, err))
		}
	}
	for _, p := range fixedPaths {
		if slices.Contains(h.Existed, p) {
			errs = append(errs, h.removeOwnEntries(p, true))
			continue
		}
		errs = append(errs, removeTree(p))
	}
	err := errors.Join(errs...)
	return errors.Join(err, lock.release(err == nil))
}

// removeOwnEntries removes from dir, a fixed path that existed before the
// run, the entries the run made: symlinks into the run root, and network
// namespaces and files made since the run started (newer: only while the
// run holds the host, when nothing newer can be another run's).
func (h *Host) removeOwnEntries(dir string, newer bool) error {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil
	}
	var errs []error
	for _, e := range entries {
		p := filepath.Join(dir, e.Name())
		fi, err := os.Lstat(p)
		if err != nil {
			continue
		}
		if target, err := os.Readlink(p); err == nil && strings.HasPrefix(target, h.RunRoot) {
			errs = append(errs, os.Remove(p))
			continue
		}
		// Where names say nothing of their owner (a network namespace, a
		// shim's socket, the kubelet's device-plugin socket), what is newer
		// than the run is the run's; elsewhere only links into its root.
		if newer && fi.ModTime().After(h.Since) && !slices.Contains(fixedPaths, p) && dir != "/var/lib/kubelet" && dir != "/var/log/pods" && dir != "/var/log/containers" {
			errs = append(errs, removeTree(p))
		}
	}
	return errors.Join(errs...)
}

// removeTree unmounts whatever is mounted below path (a network namespace
// is a bind mount of nsfs) and removes it.
func removeTree(path string) error {
	if _, err := os.Lstat(path); err != nil {
		return nil
	}
	// The mount table names real paths: /var/run/netns is /run/netns on
	// Debian, where a network namespace's nsfs mount shows up.
	if real, err := filepath.EvalSymlinks(path); err == nil {
		path = real
	}
	mounts, err := mountPointsUnder(path)
	if err != nil {
		return err
	}
	for i := len(mounts) - 1; i >= 0; i-- {
		if err := syscall.Unmount(mounts[i], syscall.MNT_DETACH); err != nil && !errors.Is(err, syscall.EINVAL) {
			return fmt.Errorf("unmounting %s: %w", mounts[i], err)
		}
	}
	if err := os.RemoveAll(path); err != nil {
		return fmt.Errorf("removing %s: %w", path, err)
	}
	return nil
}

// mountPointsUnder lists the mount points at or below path, in the order
// they were mounted.
func mountPointsUnder(path string) ([]string, error) {
	var filter mountinfo.FilterFunc // all, for "/": PrefixFilter would look for "//"
	if path != "/" {
		filter = mountinfo.PrefixFilter(path)
	}
	infos, err := mountinfo.GetMounts(filter)
	if err != nil {
		return nil, fmt.Errorf("listing mounts under %s: %w", path, err)
	}
	out := make([]string, 0, len(infos))
	for _, m := range infos {
		out = append(out, m.Mountpoint)
	}
	return out, nil
}

// cgroupHierarchies are the mount points of the machine's cgroup
// hierarchies: each v1 controller's, named ones (name=systemd) and the
// unified v2 one.
func cgroupHierarchies() ([]string, error) {
	infos, err := mountinfo.GetMounts(mountinfo.FSTypeFilter("cgroup", "cgroup2"))
	if err != nil {
		return nil, fmt.Errorf("listing cgroup hierarchies: %w", err)
	}
	out := make([]string, 0, len(infos))
	for _, m := range infos {
		out = append(out, m.Mountpoint)
	}
	return out, nil
}

// removeCgroups kills every process left in the run's cgroups and removes
// them, deepest first, in every hierarchy.
func (h *Host) removeCgroups() error {
	if h.CgroupRoot == "" || h.CgroupRoot == "/" {
		return nil
	}
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return err
	}
	var errs []error
	for _, hier := range hierarchies {
		root := filepath.Join(hier, h.CgroupRoot)
		if _, err := os.Stat(root); err != nil {
			continue
		}
		var dirs []string
		_ = filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
			if err == nil && d.IsDir() {
				dirs = append(dirs, p)
			}
			return nil
		})
		for i := len(dirs) - 1; i >= 0; i-- {
			errs = append(errs, removeCgroup(dirs[i]))
		}
	}
	return errors.Join(errs...)
}

// removeCgroup kills the processes in one cgroup until it is empty, then
// removes it.
func removeCgroup(dir string) error {
	var last error
	for range 50 {
		pids := cgroupProcs(dir)
		for _, pid := range pids {
			_ = syscall.Kill(pid, syscall.SIGKILL)
		}
		if last = syscall.Rmdir(dir); last == nil || errors.Is(last, syscall.ENOENT) {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("removing cgroup %s: %w", dir, last)
}

func cgroupProcs(dir string) []int {
	data, err := os.ReadFile(filepath.Join(dir, "cgroup.procs"))
	if err != nil {
		return nil
	}
	var pids []int
	for _, f := range strings.Fields(string(data)) {
		var pid int
		if _, err := fmt.Sscan(f, &pid); err == nil && pid > 0 {
			pids = append(pids, pid)
		}
	}
	return pids
}
