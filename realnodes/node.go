// Package realnodes runs real Kubernetes nodes on this machine: for each,
// a containerd (Debian's 1.6) and a real kubelet v1.37.2 (built by
// realkube's build into the same cache), joined to a real control plane,
// running pods from images imported at start — nothing is pulled — with
// csisim's CNI plugin giving each pod a network namespace of its own.
//
// Everything a node writes is below its directory in the run's root.
// What a kubelet and containerd insist on writing elsewhere (a few fixed
// paths, kernel sysctls, cgroups) is recorded before the first node
// starts (CaptureHost) and put back after the last one stops
// (Host.Restore). realcluster composes these nodes with the control plane
// and csisim's driver.
package realnodes

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"time"

	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/internal/freeport"
	"github.com/csisim/csisim/timing"
)

// Kubelet is the kubelet binary's name in realkube's binary directory.
const Kubelet = "kubelet"

// Config describes one real node.
type Config struct {
	// Name is the node's name (the kubelet's --hostname-override).
	Name string
	// Dir is the node's directory; everything it writes goes below it.
	Dir string
	// BinDir holds the kubelet binary.
	BinDir string
	// Kubeconfig is the kubelet's credentials (system:node:<Name>).
	Kubeconfig string
	// CgroupRoot is the kubelet's cgroup root: a cgroup below the run's
	// (Host.CgroupRoot), made in every hierarchy by Start.
	CgroupRoot string
	// Images is a docker-archive with every image the node's pods and
	// sandboxes use, imported into containerd at start; PauseImage is the
	// sandbox image's reference in it.
	Images, PauseImage string
	// Subnet is where the node's pods get their addresses (10.88.1.0/24).
	Subnet string
	// CSISim is the csisim executable, which is also the CNI plugin.
	CSISim string
	// Labels are the node's labels the kubelet registers it with.
	Labels map[string]string
	// Log receives containerd's and the kubelet's output; also written
	// to files below Dir/logs.
	Log io.Writer
	// Started, if set, is told every process the node starts, so that a
	// sweep after a crash can find them.
	Started func(pid int)
	// Timing is the cluster's timing of node loss: the kubelet's node
	// status and lease periods come from it (zero: v1.37's defaults).
	Timing timing.Timing
}

// Node is a running real node.
type Node struct {
	cfg        Config
	containerd *launch.Process
	kubelet    *launch.Process
	logs       []*os.File
}

// Start starts the node's containerd, imports the images and starts its
// kubelet. It does not wait for the Node object to become Ready: the
// kubelet needs the API server for that, and the caller watches it.
func Start(ctx context.Context, cfg Config) (n *Node, err error) {
	n = &Node{cfg: cfg}
	defer func() {
		if err != nil {
			err = errors.Join(err, n.Stop())
			n = nil
		}
	}()
	if err := realnodeTools(); err != nil {
		return n, err
	}
	hierarchies, err := cgroupHierarchies()
	if err != nil {
		return n, err
	}
	for _, h := range hierarchies {
		if err := os.MkdirAll(filepath.Join(h, cfg.CgroupRoot), 0o755); err != nil {
			return n, fmt.Errorf("node %s: creating its cgroup in %s: %w", cfg.Name, h, err)
		}
	}
	for _, d := range []string{n.path("logs"), n.KubeletDir(), n.path("pod-logs"), n.path("volume-plugins"), n.containerdDir()} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			return n, fmt.Errorf("node %s: %w", cfg.Name, err)
		}
	}
	if err := writeCNIConfig(n.path("cni", "conf"), n.path("cni", "bin"), n.path("cni", "ipam"), cfg.Subnet, cfg.CSISim); err != nil {
		return n, fmt.Errorf("node %s: CNI configuration: %w", cfg.Name, err)
	}
	if err := n.startContainerd(ctx); err != nil {
		return n, err
	}
	return n, n.StartKubelet(ctx)
}

// realnodeTools checks for the programs a node runs besides the kubelet.
func realnodeTools() error {
	var missing []string
	for _, t := range []string{"containerd", "containerd-shim-runc-v2", "runc", "ctr", "nsenter", "ip"} {
		if _, err := lookPath(t); err != nil {
			missing = append(missing, t)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("real nodes need %v, not found on PATH; install them with `apt-get install -y containerd runc` (or realnodes/install.sh)", missing)
	}
	return nil
}

func (n *Node) path(elem ...string) string {
	return filepath.Join(append([]string{n.cfg.Dir}, elem...)...)
}

func (n *Node) containerdDir() string { return n.path("containerd") }

// KubeletDir is the kubelet's --root-dir: pods/, plugins/,
// plugins_registry/ are below it.
func (n *Node) KubeletDir() string { return n.path("kubelet") }

// PluginDir is where a CSI driver's node plugin puts its socket, as the
// registrar's --kubelet-registration-path has it: <root>/plugins/<driver>.
func (n *Node) PluginDir(driver string) string {
	return filepath.Join(n.KubeletDir(), "plugins", driver)
}

// RegistrationDir is the kubelet's plugin watcher's directory.
func (n *Node) RegistrationDir() string { return filepath.Join(n.KubeletDir(), "plugins_registry") }

// Name is the node's name.
func (n *Node) Name() string { return n.cfg.Name }

// ContainerdSocket is the node's container runtime endpoint.
func (n *Node) ContainerdSocket() string { return containerdSocket(n.containerdDir()) }

// PIDs are the node's running processes, by name.
func (n *Node) PIDs() map[string]int {
	m := map[string]int{}
	for name, p := range map[string]*launch.Process{"containerd-" + n.cfg.Name: n.containerd, "kubelet-" + n.cfg.Name: n.kubelet} {
		if p != nil && !exited(p) {
			m[name] = p.PID()
		}
	}
	return m
}

func exited(p *launch.Process) bool {
	select {
	case <-p.Exited():
		return true
	default:
		return false
	}
}

func (n *Node) logWriter(name string) (io.Writer, error) {
	f, err := os.Create(n.path("logs", name+".log"))
	if err != nil {
		return nil, err
	}
	n.logs = append(n.logs, f)
	if n.cfg.Log == nil {
		return f, nil
	}
	return io.MultiWriter(f, n.cfg.Log), nil
}

func (n *Node) started(p *launch.Process) {
	if n.cfg.Started != nil {
		n.cfg.Started(p.PID())
	}
}

func (n *Node) startContainerd(ctx context.Context) error {
	dir := n.containerdDir()
	conf := filepath.Join(dir, "config.toml")
	if err := writeFile(conf, []byte(containerdConfig(dir, n.cfg.PauseImage, n.path("cni", "conf"), n.path("cni", "bin")))); err != nil {
		return fmt.Errorf("node %s: containerd configuration: %w", n.cfg.Name, err)
	}
	log, err := n.logWriter("containerd")
	if err != nil {
		return err
	}
	p, err := launch.Start(context.Background(), "containerd "+n.cfg.Name, launch.Template{Path: "containerd", Args: []string{"--config", conf}}, launch.Vars{}, log)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.cfg.Name, err)
	}
	n.containerd = p
	n.started(p)
	waitCtx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := waitContainerd(waitCtx, n.ContainerdSocket(), p.Exited()); err != nil {
		return fmt.Errorf("node %s: %w; see %s", n.cfg.Name, err, n.path("logs", "containerd.log"))
	}
	if n.cfg.Images != "" {
		importCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
		defer cancel()
		if _, err := ctr(importCtx, n.ContainerdSocket(), "images", "import", "--platform", "linux/amd64", n.cfg.Images); err != nil {
			return fmt.Errorf("node %s: importing the images: %w", n.cfg.Name, err)
		}
	}
	return nil
}

// StartKubelet starts the node's kubelet (again, after StopKubelet: a
// kubelet restart, which reconstructs its volumes from what is mounted).
func (n *Node) StartKubelet(ctx context.Context) error {
	if n.kubelet != nil && !exited(n.kubelet) {
		return fmt.Errorf("node %s: the kubelet is running", n.cfg.Name)
	}
	ports, err := freeport.Loopback(2)
	if err != nil {
		return fmt.Errorf("node %s: the kubelet's ports: %w", n.cfg.Name, err)
	}
	data, err := kubeletConfiguration(n, ports[0], ports[1])
	if err != nil {
		return fmt.Errorf("node %s: kubelet configuration: %w", n.cfg.Name, err)
	}
	conf := n.path("kubelet-config.yaml")
	if err := writeFile(conf, data); err != nil {
		return err
	}
	log, err := n.logWriter("kubelet")
	if err != nil {
		return err
	}
	p, err := launch.Start(context.Background(), "kubelet "+n.cfg.Name,
		launch.Template{Path: filepath.Join(n.cfg.BinDir, Kubelet), Args: kubeletArgs(n, conf)}, launch.Vars{}, log)
	if err != nil {
		return fmt.Errorf("node %s: %w", n.cfg.Name, err)
	}
	n.kubelet = p
	n.started(p)
	// A kubelet that cannot start (a bad flag, a refused configuration)
	// exits within a second or two; say so now, with its last words.
	select {
	case <-p.Exited():
		return fmt.Errorf("node %s: the kubelet exited at start; see %s", n.cfg.Name, n.path("logs", "kubelet.log"))
	case <-time.After(time.Second):
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// StopKubelet stops the kubelet, SIGTERM then SIGKILL after grace; pods
// and their containers keep running, as when a real kubelet stops.
func (n *Node) StopKubelet(grace time.Duration) error {
	if n.kubelet == nil {
		return nil
	}
	return n.kubelet.Stop(grace)
}

// KubeletRunning reports whether the kubelet process is running.
func (n *Node) KubeletRunning() bool { return n.kubelet != nil && !exited(n.kubelet) }

// Stop stops the kubelet, kills every process of the node's pods, its
// runc shims and containerd. What they leave mounted below the run root is
// the run root's to unmount; the fixed paths are Host.Restore's.
func (n *Node) Stop() error {
	var errs []error
	if n.kubelet != nil {
		errs = append(errs, n.kubelet.Stop(10*time.Second))
	}
	if n.cfg.CgroupRoot != "" {
		errs = append(errs, (&Host{CgroupRoot: n.cfg.CgroupRoot}).removeCgroups())
	}
	if n.containerd != nil {
		ours := func(address string) bool { return address == n.ContainerdSocket() }
		killShims(ours)
		errs = append(errs, n.containerd.Stop(10*time.Second))
		killShims(ours)
	}
	for _, f := range n.logs {
		errs = append(errs, f.Close())
	}
	n.logs = nil
	return errors.Join(errs...)
}

func sortedKeys(m map[string]string) []string { return slices.Sorted(maps.Keys(m)) }
