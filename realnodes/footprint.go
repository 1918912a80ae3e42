package realnodes

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Footprint is what of the machine real nodes could leave changed: the
// sysctls the kubelet sets, the fixed paths, cgroups named like a run's,
// the mount table, attached loop devices and the processes of the node
// programs. Two footprints, one taken before a run and one after, show
// whether the run left anything behind (Diff).
type Footprint struct {
	Sysctls    map[string]string
	Paths      []string // fixed paths that exist
	Cgroups    []string // csisim-* cgroups, in every hierarchy
	Mounts     []string // mount points
	Loops      []string // attached loop devices and their backing files
	Processes  []string // "pid name" of kubelets, containerds, shims, runc
	NetnsFiles []string
}

// nodePrograms are the processes a real node runs.
var nodePrograms = []string{"kubelet", "containerd", "containerd-shim-runc-v2", "runc", "csisim-workload"}

// TakeFootprint reads the machine's footprint.
func TakeFootprint() (Footprint, error) {
	f := Footprint{Sysctls: map[string]string{}}
	for _, k := range kubeletSysctls {
		b, err := os.ReadFile(filepath.Join("/proc/sys", k))
		if err != nil {
			return f, err
		}
		f.Sysctls[k] = strings.TrimSpace(string(b))
	}
	for _, p := range fixedPaths {
		if _, err := os.Lstat(p); err == nil {
			f.Paths = append(f.Paths, p)
		}
	}
	for _, d := range []string{"/var/run/netns", "/run/netns"} {
		entries, _ := os.ReadDir(d)
		for _, e := range entries {
			f.NetnsFiles = append(f.NetnsFiles, filepath.Join(d, e.Name()))
		}
	}
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return f, err
	}
	for _, h := range hierarchies {
		matches, _ := filepath.Glob(filepath.Join(h, "csisim-*"))
		f.Cgroups = append(f.Cgroups, matches...)
		// A kubelet that ignored its cgroup root would make these.
		for _, name := range []string{"kubepods", "kubepods.slice"} {
			if _, err := os.Stat(filepath.Join(h, name)); err == nil {
				f.Cgroups = append(f.Cgroups, filepath.Join(h, name))
			}
		}
	}
	if f.Mounts, err = mountPointsUnder("/"); err != nil {
		return f, err
	}
	slices.Sort(f.Mounts)
	f.Loops = attachedLoopDevices()
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == os.Getpid() {
			continue
		}
		comm, err := os.ReadFile(filepath.Join("/proc", e.Name(), "comm"))
		if err != nil {
			continue
		}
		name := strings.TrimSpace(string(comm))
		// comm is cut at 15 characters: containerd-shim-runc-v2 shows as
		// containerd-shim.
		if slices.ContainsFunc(nodePrograms, func(p string) bool { return p == name || len(name) == 15 && strings.HasPrefix(p, name) }) {
			f.Processes = append(f.Processes, fmt.Sprintf("%d %s", pid, name))
		}
	}
	return f, nil
}

// attachedLoopDevices lists /dev/loopN with their backing files.
func attachedLoopDevices() []string {
	var out []string
	matches, _ := filepath.Glob("/sys/block/loop*/loop/backing_file")
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		dev := filepath.Base(filepath.Dir(filepath.Dir(m)))
		out = append(out, "/dev/"+dev+" "+strings.TrimSpace(string(b)))
	}
	slices.Sort(out)
	return out
}

// Diff lists what after has that f (taken before) had not, or the other
// way round for sysctls: one line each, empty when the machine is as it
// was.
func (f Footprint) Diff(after Footprint) []string {
	var out []string
	for k, v := range f.Sysctls {
		if after.Sysctls[k] != v {
			out = append(out, fmt.Sprintf("sysctl %s: %s before, %s after", strings.ReplaceAll(k, "/", "."), v, after.Sysctls[k]))
		}
	}
	added := func(what string, before, now []string) {
		for _, x := range now {
			if !slices.Contains(before, x) {
				out = append(out, what+" left behind: "+x)
			}
		}
	}
	added("fixed path", f.Paths, after.Paths)
	added("network namespace", f.NetnsFiles, after.NetnsFiles)
	added("cgroup", f.Cgroups, after.Cgroups)
	added("mount", f.Mounts, after.Mounts)
	added("loop device", f.Loops, after.Loops)
	added("process", f.Processes, after.Processes)
	slices.Sort(out)
	return out
}
