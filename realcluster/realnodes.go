package realcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/drivers/faultproxy"
	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/realkube"
	"github.com/csisim/csisim/realnodes"
)

// Real nodes: a node listed in Config.RealNodes runs a real kubelet and
// containerd (package realnodes) instead of a simulated kubelet. csisim's
// node plugin runs beside it as on a simulated node, registered through
// the kubelet's plugin watcher by `csisim registrar`, as
// node-driver-registrar would; the kubelet calls it through a fault proxy,
// which records the calls (the real kubelet has no recording client).

// realNodeStartTimeout bounds a real node's start: containerd, the image
// import, the kubelet's registration and its first Ready.
const realNodeStartTimeout = 3 * time.Minute

// isReal says whether node runs a real kubelet.
func (c *Cluster) isReal(node string) bool { return slices.Contains(c.cfg.RealNodes, node) }

// prepareRealNodes takes the host (one run with real nodes at a time on a
// machine: realnodes/hostlock.go), records its state and writes the
// images, once, before the first real node starts.
func (c *Cluster) prepareRealNodes(ctx context.Context) error {
	if c.host != nil {
		return nil
	}
	if err := realkube.Available(c.cfg.BinDir, realnodes.Kubelet); err != nil {
		return err
	}
	// A cgroup name of the run's own, in every hierarchy, below which each
	// node's kubelet has its cgroup root.
	host, err := realnodes.CaptureHost(ctx, c.root.Path(), "/csisim-"+filepath.Base(c.root.Path()), c.hostLog)
	if err != nil {
		return err
	}
	c.host = host
	workloadBin := c.cfg.WorkloadBinary
	if workloadBin == "" {
		workloadBin = filepath.Join(filepath.Dir(c.cfg.DriverBinary), "csisim-workload")
	}
	if _, err := os.Stat(workloadBin); err != nil {
		return fmt.Errorf("real nodes run pods of csisim's workload image, made from %s: %w (make build makes it)", workloadBin, err)
	}
	c.images = c.root.Path("images.tar")
	if err := realnodes.WriteImages(c.images, workloadBin); err != nil {
		return fmt.Errorf("writing the real nodes' images: %w", err)
	}
	return nil
}

// hostLog says what the host lock waits for: on the cluster's log, else
// on stderr, so that a run waiting for another is not taken for hung.
func (c *Cluster) hostLog(format string, args ...any) {
	w := c.cfg.Log
	if w == nil {
		w = os.Stderr
	}
	fmt.Fprintf(w, "realcluster: "+format+"\n", args...)
}

// startRealNode starts node's plugin, its containerd and kubelet, and the
// registrar, and waits until the Node is Ready with the driver on its
// CSINode.
func (c *Cluster) startRealNode(ctx context.Context, index int, node string) error {
	if err := c.prepareRealNodes(ctx); err != nil {
		return err
	}
	endpoint, err := c.startDriver(ctx, "node", node)
	if err != nil {
		return err
	}
	actor := "kubelet:" + node
	p, err := faultproxy.Start(context.Background(), faultproxy.Config{Name: nodeProxy(node),
		Listen: "unix://" + c.nodeSocket(node), Target: endpoint, NodeID: node, Recorder: c.rec,
		Crash: c.crashHook(driverPlugin{mode: "node", node: node}),
		OnCall: func(call faultproxy.Call) {
			e := callEntry(actor, call, c.rec)
			// The kubelet's node service calls are this node's, as
			// csisim's recording client says of the simulated kubelets'.
			if e.Call != nil && strings.HasPrefix(call.Method, "Node") {
				e.Call.Node = node
			}
			c.rec.Add(e)
		}})
	if err != nil {
		return fmt.Errorf("proxy for the node plugin of %s: %w", node, err)
	}
	c.proxies = append(c.proxies, p)
	kubeconfig, err := c.kube.NodeKubeconfig(node)
	if err != nil {
		return err
	}
	log, err := c.logWriter("node-" + node)
	if err != nil {
		return err
	}
	labels := map[string]string{}
	if zone := c.cfg.Zones[node]; zone != "" {
		labels[corev1.LabelTopologyZone] = zone
	}
	rn, err := realnodes.Start(ctx, realnodes.Config{Name: node, Dir: c.root.Path("nodes", node), BinDir: c.cfg.BinDir,
		Kubeconfig: kubeconfig, CgroupRoot: c.host.CgroupRoot + "/" + node,
		Images: c.images, PauseImage: realnodes.PauseImage, Subnet: fmt.Sprintf("10.88.%d.0/24", index+1),
		CSISim: c.cfg.DriverBinary, Labels: labels, Log: log, Timing: c.cfg.Timing,
		Started: func(pid int) { _ = c.root.RecordProcess(pid) }})
	if err != nil {
		return err
	}
	n := c.nodes[node]
	if n == nil {
		n = &simNode{name: node}
		c.nodes[node] = n
	}
	n.real = rn
	n.stop = func() { _ = rn.StopKubelet(10 * time.Second) }
	if err := c.startRegistrar(node); err != nil {
		return err
	}
	return c.waitRealNode(ctx, node)
}

// startRegistrar runs `csisim registrar` for node's plugin: the kubelet's
// plugin watcher finds its socket and registers the driver.
func (c *Cluster) startRegistrar(node string) error {
	n := c.nodes[node]
	log, err := c.logWriter("registrar-" + node)
	if err != nil {
		return err
	}
	tmpl := launch.Template{Path: c.cfg.DriverBinary, Args: []string{"registrar",
		"--driver-name=" + c.cfg.DriverName,
		"--csi-address=" + c.nodeSocket(node),
		"--registration-socket=" + filepath.Join(n.real.RegistrationDir(), c.cfg.DriverName+"-reg.sock")}}
	p, err := launch.Start(context.Background(), "registrar "+node, tmpl, launch.Vars{}, log)
	if err != nil {
		return fmt.Errorf("starting the registrar of %s: %w", node, err)
	}
	_ = c.root.RecordProcess(p.PID())
	c.procs = append(c.procs, namedProcess{name: "registrar-" + node, Process: p})
	return nil
}

// stopRegistrar stops node's registrar: the kubelet's plugin watcher sees
// its socket go and unregisters the driver.
func (c *Cluster) stopRegistrar(node string) error {
	i := slices.IndexFunc(c.procs, func(p namedProcess) bool { return p.name == "registrar-"+node })
	if i < 0 {
		return nil
	}
	p := c.procs[i]
	c.procs = slices.Delete(c.procs, i, i+1)
	return p.Stop(5 * time.Second)
}

// waitRealNode waits until node's Node is Ready and its CSINode lists the
// driver, or the start timeout passes.
func (c *Cluster) waitRealNode(ctx context.Context, node string) error {
	cs, err := kubernetes.NewForConfig(c.clientConfig("csisim-realnodes"))
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, realNodeStartTimeout)
	defer cancel()
	var last string
	for {
		ready, why, err := realNodeReady(ctx, cs, node, c.cfg.DriverName)
		if err != nil {
			return err
		}
		if ready {
			return nil
		}
		last = why
		select {
		case <-ctx.Done():
			return fmt.Errorf("real node %s did not become ready in %s: %s; see %s", node, realNodeStartTimeout, last,
				c.root.Path("nodes", node, "logs", "kubelet.log"))
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// realNodeReady says whether the Node is Ready and the driver registered
// on it, and if not, why not.
func realNodeReady(ctx context.Context, cs kubernetes.Interface, node, driver string) (bool, string, error) {
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return false, "the kubelet has not registered the Node", nil
	}
	if err != nil {
		return false, "", ignoreTimeout(ctx, err)
	}
	ready := false
	why := "no Ready condition"
	for _, cond := range n.Status.Conditions {
		if cond.Type == corev1.NodeReady {
			ready = cond.Status == corev1.ConditionTrue
			why = fmt.Sprintf("Ready=%s: %s", cond.Status, cond.Message)
		}
	}
	if !ready {
		return false, why, nil
	}
	cn, err := cs.StorageV1().CSINodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil && !apierrors.IsNotFound(err) {
		return false, "", ignoreTimeout(ctx, err)
	}
	if err == nil && slices.ContainsFunc(cn.Spec.Drivers, func(d storagev1.CSINodeDriver) bool { return d.Name == driver }) {
		return true, "", nil
	}
	return false, "driver " + driver + " not registered on the CSINode", nil
}

// ignoreTimeout turns an error caused by ctx's end into nil, so the
// caller reports its own reason.
func ignoreTimeout(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return nil
	}
	return err
}

// stopRealNodes stops every real node and puts the host back as it was.
func (c *Cluster) stopRealNodes() error {
	var errs []error
	for _, name := range c.cfg.Nodes {
		if n := c.nodes[name]; n != nil && n.real != nil {
			errs = append(errs, n.real.Stop())
		}
	}
	if c.host != nil {
		errs = append(errs, c.host.Restore())
	}
	return errors.Join(errs...)
}

// AdaptManifest runs every pod's containers as csisim's workload image when
// the cluster has a real node (realnodes.WorkloadPod): nothing can be
// pulled here. The simulator's containers run the same workload.
func (c *Cluster) AdaptManifest(obj *unstructured.Unstructured) error {
	if len(c.cfg.RealNodes) == 0 {
		return nil
	}
	return realnodes.WorkloadPod(obj)
}
