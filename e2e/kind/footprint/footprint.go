package main

import (
	"bytes"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
)

// Footprint is what of the machine a kind run could leave changed.
type Footprint struct {
	Sysctls   map[string]string // "kernel/panic" -> "0"
	IPTables  []string          // rules and chain policies, without counters
	Links     []string          // br-*, docker*, veth*
	Mounts    []string          // mount points
	Loops     []string          // "/dev/loop3 /backing/file"
	Processes []string          // "pid comm"
	Owned     []string          // the run's directories
	OwnedSize map[string]int64  // bytes below each owned directory
}

// Host is the machine a footprint is taken of: its file systems below
// Root ("" is /, tests give a directory laid out like /proc and /sys) and
// its commands (iptables-save).
type Host struct {
	Root string
	// Run runs a command and returns its output; nil runs it with os/exec.
	Run func(name string, args ...string) ([]byte, error)
}

func (h Host) path(p string) string {
	if h.Root == "" {
		return p
	}
	return filepath.Join(h.Root, p)
}

func (h Host) run(name string, args ...string) ([]byte, error) {
	if h.Run != nil {
		return h.Run(name, args...)
	}
	return exec.Command(name, args...).Output()
}

// grownLimit is how much an owned directory may grow before it counts as
// something left behind (logs, a daemon's bookkeeping).
const grownLimit = 64 << 20

// Take reads the footprint of h; owned are the run's directories.
func Take(h Host, owned []string) (Footprint, error) {
	fp := Footprint{Owned: owned, OwnedSize: map[string]int64{}}
	var err error
	if fp.Sysctls, err = sysctls(h); err != nil {
		return fp, err
	}
	fp.IPTables = iptables(h)
	fp.Links = links(h)
	if fp.Mounts, err = mounts(h); err != nil {
		return fp, err
	}
	fp.Loops = loops(h)
	fp.Processes = processes(h, owned)
	for _, d := range owned {
		fp.OwnedSize[d] = size(d)
	}
	return fp, nil
}

// sysctlWatched says whether the sysctl at rel (below /proc/sys) is one a
// kind node's kubelet or kube-proxy could change on the host and that
// does not change on its own.
func sysctlWatched(rel string) bool {
	dir, name := path.Split(rel)
	dir = strings.TrimSuffix(dir, "/")
	switch rel {
	case "kernel/ns_last_pid", "kernel/tainted", "fs/dentry-state", "fs/file-nr", "fs/inode-nr", "fs/inode-state", "fs/aio-nr",
		"fs/dentry-negative", "net/netfilter/nf_conntrack_count", "vm/stat_refresh", "vm/drop_caches", "vm/compact_memory":
		return false
	}
	switch dir {
	case "kernel", "kernel/keys", "vm", "fs", "net/core", "net/ipv4", "net/netfilter", "net/bridge",
		"net/ipv4/conf/all", "net/ipv4/conf/default", "net/ipv4/neigh/default", "net/ipv6/conf/all", "net/ipv6/conf/default":
		return name != ""
	}
	return false
}

func sysctls(h Host) (map[string]string, error) {
	root := h.path("/proc/sys")
	out := map[string]string{}
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			if p == root {
				return err
			}
			return nil // a directory this user may not read
		}
		rel, _ := filepath.Rel(root, p)
		rel = filepath.ToSlash(rel)
		if d.IsDir() || !sysctlWatched(rel) {
			return nil
		}
		info, err := d.Info()
		if err != nil || info.Mode().Perm()&0o444 == 0 {
			return nil // write-only
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return nil
		}
		out[rel] = strings.TrimSpace(string(b))
		return nil
	})
	return out, err
}

// iptables lists the rules and chain policies of iptables-save and
// ip6tables-save, without counters and comments; a missing command lists
// nothing.
func iptables(h Host) []string {
	var out []string
	for _, cmd := range []string{"iptables-save", "ip6tables-save"} {
		b, err := h.run(cmd)
		if err != nil {
			continue
		}
		table := ""
		for _, line := range strings.Split(string(b), "\n") {
			switch {
			case line == "" || strings.HasPrefix(line, "#") || line == "COMMIT":
			case strings.HasPrefix(line, "*"):
				table = line[1:]
			case strings.HasPrefix(line, ":"):
				// ":CHAIN POLICY [packets:bytes]"
				f := strings.Fields(line)
				if len(f) >= 2 {
					out = append(out, cmd+" "+table+" "+f[0]+" "+f[1])
				}
			default:
				out = append(out, cmd+" "+table+" "+line)
			}
		}
	}
	slices.Sort(out)
	return out
}

func links(h Host) []string {
	entries, _ := os.ReadDir(h.path("/sys/class/net"))
	var out []string
	for _, e := range entries {
		n := e.Name()
		if strings.HasPrefix(n, "br-") || strings.HasPrefix(n, "docker") || strings.HasPrefix(n, "veth") {
			out = append(out, n)
		}
	}
	return out
}

// mounts lists the mount points of /proc/self/mountinfo (its fifth field).
func mounts(h Host) ([]string, error) {
	b, err := os.ReadFile(h.path("/proc/self/mountinfo"))
	if err != nil {
		return nil, err
	}
	var out []string
	for _, line := range strings.Split(string(b), "\n") {
		if f := strings.Fields(line); len(f) > 4 && !inOtherRun(f[4]) {
			out = append(out, f[4])
		}
	}
	slices.Sort(out)
	return slices.Compact(out), nil
}

// otherRuns are the temporary roots (package runroot) of csisim's other
// runs — the simulator's (csisim run), csisim test's and sanity's, a real
// control plane's (csisim diff, make e2e-here) — which another session on
// this machine may have while the kind run goes on. They are never the kind
// run's: what such a run mounts or attaches below its root it takes down
// itself, and its own leftover check judges it.
var otherRuns = []string{"csisim-run-", "csisim-test-", "csisim-sanity-", "csisim-real-"}

// inOtherRun says whether p lies below another run's root.
func inOtherRun(p string) bool {
	for _, prefix := range otherRuns {
		if strings.HasPrefix(p, filepath.Join(os.TempDir(), prefix)) {
			return true
		}
	}
	return false
}

func loops(h Host) []string {
	matches, _ := filepath.Glob(h.path("/sys/block/loop*/loop/backing_file"))
	var out []string
	for _, m := range matches {
		b, err := os.ReadFile(m)
		if err != nil {
			continue
		}
		backing := strings.TrimSpace(string(b))
		if inOtherRun(backing) {
			continue
		}
		out = append(out, "/dev/"+filepath.Base(filepath.Dir(filepath.Dir(m)))+" "+backing)
	}
	slices.Sort(out)
	return out
}

// processes lists the processes a Docker daemon and its containers run,
// and those naming an owned directory.
func processes(h Host, owned []string) []string {
	entries, _ := os.ReadDir(h.path("/proc"))
	// This process and those it runs under (`go run` names the owned
	// directories in its arguments too) are the check, not the run.
	self := ancestors(h, os.Getpid())
	var out []string
	for _, e := range entries {
		pid := e.Name()
		if _, err := strconv.Atoi(pid); err != nil || self[pid] {
			continue
		}
		comm, err := os.ReadFile(h.path("/proc/" + pid + "/comm"))
		if err != nil {
			continue
		}
		cmdline, _ := os.ReadFile(h.path("/proc/" + pid + "/cmdline"))
		cgroup, _ := os.ReadFile(h.path("/proc/" + pid + "/cgroup"))
		name := strings.TrimSpace(string(comm))
		args := string(bytes.ReplaceAll(cmdline, []byte{0}, []byte{' '}))
		if ours(name, args, string(cgroup), owned) {
			out = append(out, pid+" "+name)
		}
	}
	slices.Sort(out)
	return out
}

// ancestors is pid and its parents up to init, as /proc/PID/status says.
func ancestors(h Host, pid int) map[string]bool {
	out := map[string]bool{}
	for p := strconv.Itoa(pid); p != "0" && p != "" && !out[p]; {
		out[p] = true
		status, err := os.ReadFile(h.path("/proc/" + p + "/status"))
		if err != nil {
			break
		}
		p = ""
		for _, line := range strings.Split(string(status), "\n") {
			if v, ok := strings.CutPrefix(line, "PPid:"); ok {
				p = strings.TrimSpace(v)
			}
		}
	}
	return out
}

func ours(comm, args, cgroup string, owned []string) bool {
	switch {
	case comm == "dockerd" || comm == "docker-proxy":
		return true
	case strings.Contains(args, "-namespace moby "):
		return true // a shim of the Docker daemon's containerd
	case strings.Contains(cgroup, "/docker/") || strings.Contains(cgroup, "/docker-"):
		return true // inside a container: a kind node's systemd, kubelet, ...
	}
	for _, d := range owned {
		if d != "" && strings.Contains(args, d) {
			return true
		}
	}
	return false
}

// size is the bytes of the regular files below dir (0 if it is gone).
func size(dir string) int64 {
	var n int64
	_ = filepath.WalkDir(dir, func(_ string, d fs.DirEntry, err error) error {
		if err != nil {
			return nil
		}
		if d.Type().IsRegular() {
			if info, err := d.Info(); err == nil {
				n += info.Size()
			}
		}
		return nil
	})
	return n
}

// Diff lists what after has that f (taken before) had not, sysctls that
// differ, and owned directories that grew, one line each; empty when the
// machine is as it was.
func (f Footprint) Diff(after Footprint) []string {
	var out []string
	for k, v := range f.Sysctls {
		if now, ok := after.Sysctls[k]; ok && now != v {
			out = append(out, fmt.Sprintf("sysctl %s: %s before, %s after", strings.ReplaceAll(k, "/", "."), v, now))
		}
	}
	added := func(what string, before, now []string) {
		for _, x := range now {
			if !slices.Contains(before, x) {
				out = append(out, what+": "+x)
			}
		}
	}
	added("iptables rule", f.IPTables, after.IPTables)
	added("network link", f.Links, after.Links)
	added("mount", f.Mounts, after.Mounts)
	added("loop device", f.Loops, after.Loops)
	added("process", f.Processes, after.Processes)
	for d, before := range f.OwnedSize {
		if now := after.OwnedSize[d]; now > before+grownLimit {
			out = append(out, fmt.Sprintf("disk: %s grew from %d MiB to %d MiB", d, before>>20, now>>20))
		}
	}
	slices.Sort(out)
	return out
}

// RestoreSysctls writes back the sysctls of before that differ now, and
// says what it did.
func RestoreSysctls(h Host, before Footprint) []string {
	now, err := sysctls(h)
	if err != nil {
		return []string{"cannot read sysctls: " + err.Error()}
	}
	var out []string
	for k, v := range before.Sysctls {
		if cur, ok := now[k]; ok && cur != v {
			if err := os.WriteFile(h.path("/proc/sys/"+k), []byte(v+"\n"), 0); err != nil {
				out = append(out, fmt.Sprintf("could not restore sysctl %s to %s: %v", strings.ReplaceAll(k, "/", "."), v, err))
				continue
			}
			out = append(out, fmt.Sprintf("restored sysctl %s: %s (the run had set %s)", strings.ReplaceAll(k, "/", "."), v, cur))
		}
	}
	slices.Sort(out)
	return out
}
