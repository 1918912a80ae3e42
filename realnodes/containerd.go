package realnodes

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// containerdConfig is the configuration of one node's containerd: every
// directory and socket below dir, the CRI plugin set up as the kubelet
// needs it on these machines.
//   - restrict_oom_score_adj: the VMs lack CAP_SYS_RESOURCE, so runc
//     cannot lower a sandbox's oom_score_adj and every sandbox fails
//     ("can't get final child's PID from pipe") unless containerd keeps
//     the adjustment at or above its own.
//   - no AppArmor, no hugetlb controller (neither is there), cgroupfs.
//   - the pause image is the one imported at start; nothing is pulled.
//   - the opt plugin would otherwise write /opt/containerd, runc its state
//     to /run/containerd/runc; only the shims' sockets stay in the fixed
//     /run/containerd/s (Host restores it).
func containerdConfig(dir, pauseImage, cniConfDir, cniBinDir string) string {
	q := strconv.Quote
	return `version = 2
root = ` + q(filepath.Join(dir, "root")) + `
state = ` + q(filepath.Join(dir, "state")) + `
temp = ` + q(filepath.Join(dir, "tmp")) + `
disabled_plugins = ["io.containerd.snapshotter.v1.btrfs", "io.containerd.snapshotter.v1.zfs", "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.aufs", "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = ` + q(filepath.Join(dir, "containerd.sock")) + `

[ttrpc]
  address = ` + q(filepath.Join(dir, "containerd.sock.ttrpc")) + `

[debug]
  level = "info"

[plugins."io.containerd.internal.v1.opt"]
  path = ` + q(filepath.Join(dir, "opt")) + `

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = ` + q(pauseImage) + `
  restrict_oom_score_adj = true
  disable_apparmor = true
  disable_hugetlb_controller = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        SystemdCgroup = false
        Root = ` + q(filepath.Join(dir, "runc")) + `
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = ` + q(cniBinDir) + `
    conf_dir = ` + q(cniConfDir) + `
`
}

// containerdSocket is the socket of the containerd whose directory is dir.
func containerdSocket(dir string) string { return filepath.Join(dir, "containerd.sock") }

// ctr runs containerd's own client against the containerd at socket, in
// the CRI plugin's namespace.
func ctr(ctx context.Context, socket string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, "ctr", append([]string{"--address", socket, "--namespace", "k8s.io"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return out.String(), fmt.Errorf("ctr %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(out.String()))
	}
	return out.String(), nil
}

// waitContainerd waits until the containerd at socket answers, or exited
// is closed.
func waitContainerd(ctx context.Context, socket string, exited <-chan struct{}) error {
	for {
		callCtx, cancel := context.WithTimeout(ctx, 2*time.Second)
		_, err := ctr(callCtx, socket, "version")
		cancel()
		if err == nil {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("containerd at %s did not answer: %w (last: %v)", socket, ctx.Err(), err)
		case <-exited:
			return fmt.Errorf("containerd at %s exited at start", socket)
		case <-time.After(100 * time.Millisecond):
		}
	}
}

// killShims kills the runc shims of the containerds whose socket matches: containerd
// starts each in a session of its own, so they outlive containerd and are
// not in its process group. The containers themselves are in the node's
// cgroups, which Host.Restore empties.
func killShims(matches func(address string) bool) []int {
	var killed []int
	entries, _ := os.ReadDir("/proc")
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		cmdline, err := os.ReadFile(filepath.Join("/proc", e.Name(), "cmdline"))
		if err != nil {
			continue
		}
		args := strings.Split(strings.TrimRight(string(cmdline), "\x00"), "\x00")
		if len(args) == 0 || !strings.HasPrefix(filepath.Base(args[0]), "containerd-shim") {
			continue
		}
		for i, a := range args {
			if a == "-address" && i+1 < len(args) && matches(args[i+1]) {
				if syscall.Kill(pid, syscall.SIGKILL) == nil {
					killed = append(killed, pid)
				}
			}
		}
	}
	waitGone(killed, 5*time.Second)
	return killed
}

// waitGone waits, up to limit, until each process has exited: gone from
// /proc, or a zombie waiting for its parent. A shim is not our child, so
// SIGKILL returns before it is dead.
func waitGone(pids []int, limit time.Duration) {
	deadline := time.Now().Add(limit)
	for _, pid := range pids {
		for time.Now().Before(deadline) {
			stat, err := os.ReadFile(filepath.Join("/proc", strconv.Itoa(pid), "stat"))
			// The state follows the command in parentheses: "pid (comm) S ...".
			if err != nil {
				break
			}
			if i := strings.LastIndexByte(string(stat), ')'); i >= 0 && i+2 < len(stat) && stat[i+2] == 'Z' {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
}
