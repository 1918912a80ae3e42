package realcluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/drivers/hostpath"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/realnodes"
	"github.com/csisim/csisim/scenarios/apifaults"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/sim/kubelet"
	"github.com/csisim/csisim/trace"
)

// simNode is what makes up one of the cluster's nodes: its simulated
// kubelet (stopped by cancelling its context) and its CSI node plugin
// process, which faults act on. The real control plane only sees the
// consequences: no more Lease renewals, no more status updates.
type simNode struct {
	name string
	stop context.CancelFunc // stops the kubelet's heartbeats, informers and volume manager
	lost bool
	// isolated: the node plugin runs in a mount namespace of its own with
	// private propagation (missing-mount-propagation).
	isolated bool
	// kubelet and identity are the running kubelet and its client of the
	// plugin's identity service, to register the plugin again.
	kubelet  *kubelet.Kubelet
	identity csi.IdentityClient
	// real is the node's real kubelet and containerd, on a real node
	// (then kubelet is nil).
	real *realnodes.Node
}

// backendName names the real control plane in the faults it refuses.
const backendName = "the real control plane (--backend realkube)"

// CanInject says whether the cluster can inject f, before the run starts.
// The node faults act on the simulated nodes as in the simulator; the CSI
// faults go to the fault proxies in front of the controller plugin, one
// per sidecar, and in front of each node plugin (see proxiesFor); the API
// server faults to the reverse proxy in front of kube-apiserver
// (faults_apiserver.go); the rest would need a real component changed,
// and are refused.
func (c *Cluster) CanInject(f fault.Fault) error {
	if f.Driver != "" && f.Driver != c.cfg.DriverName {
		return fault.Unsupported(f.Kind, backendName, fmt.Sprintf("it runs one CSI driver, %s, and the fault names driver %s", c.cfg.DriverName, f.Driver))
	}
	switch f.Kind {
	case fault.NodeLoss, fault.NodeReturn, fault.OutOfService, fault.MissingMountPropagation, fault.KubeletRestart,
		fault.StaleVolumeAttachment, fault.ControllerManagerRestart:
		return nil
	case fault.CSIError, fault.CSIDelay, fault.CSIHang, fault.CSILostAnswer, fault.DriverCrashMidCall, fault.CSIHeal:
		_, err := c.proxiesFor(f)
		return err
	case fault.DriverCrash, fault.DriverRestart, fault.NodePluginMissing:
		return c.canInjectDriver(f)
	case fault.SidecarRestart:
		return c.canRestartSidecar(f.Component)
	case fault.NodeVolumeLimit:
		if !slices.Contains(c.cfg.Nodes, f.Node) {
			return fmt.Errorf("there is no node %q (nodes: %v)", f.Node, c.cfg.Nodes)
		}
		return nil
	case fault.VolumeHealth:
		return nil
	case fault.APIConflict, fault.WatchDrop:
		return fault.Unsupported(f.Kind, backendName, "the components are real processes talking to a real API server, which csisim cannot make answer 409 or drop watch events for one of them")
	case fault.APIServerDown, fault.APISlowWrites, fault.APIThrottle:
		return c.canInjectAPIServer(f)
	case fault.MountBusy:
		return fault.Unsupported(f.Kind, backendName, "holding a pod's mount busy is built only into the simulator, "+
			"which finds the mount through its own kubelet and lets it go on its virtual clock; run the scenario on the simulator")
	}
	return fault.Unsupported(f.Kind, backendName, "it is not a fault csisim knows")
}

// InjectFault makes a fault happen to the cluster's nodes, as the
// simulator does; it is what the scenario runner calls for fault steps.
// The control plane is real, so what follows — the node controller's
// taints and evictions, the attach/detach controller's force detach, the
// pod garbage collector — is the real components' doing, on wall time.
func (c *Cluster) InjectFault(ctx context.Context, f fault.Fault) error {
	if err := c.CanInject(f); err != nil {
		return err
	}
	// A proxy may be crashing and restarting a driver meanwhile
	// (driver-crash-mid-call).
	c.driverMu.Lock()
	defer c.driverMu.Unlock()
	switch f.Kind {
	case fault.StaleVolumeAttachment:
		cs, err := kubernetes.NewForConfig(c.RESTConfig())
		if err != nil {
			return err
		}
		return apifaults.StaleVolumeAttachment(ctx, cs, f.Namespace, f.Claim, f.Node, func(name string) {
			c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: string(f.Kind), Object: "VolumeAttachment " + name})
		})
	case fault.ControllerManagerRestart:
		c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: string(f.Kind), Object: "kube-controller-manager"})
		return c.kube.RestartControllerManager(ctx)
	case fault.CSIError, fault.CSIDelay, fault.CSIHang, fault.CSILostAnswer, fault.DriverCrashMidCall, fault.CSIHeal:
		return c.injectCSIFault(f)
	case fault.DriverCrash, fault.DriverRestart, fault.NodePluginMissing:
		return c.injectDriverFault(ctx, f)
	case fault.SidecarRestart:
		c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: string(f.Kind), Object: f.Component})
		return c.restartSidecar(ctx, f.Component)
	case fault.APIServerDown, fault.APISlowWrites, fault.APIThrottle:
		return c.injectAPIServerFault(f)
	case fault.NodeVolumeLimit:
		// In the backend of csisim's driver, as on the simulator
		// (sim/cluster/faults_backend.go).
		c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: string(f.Kind), Object: "Node " + f.Node,
			Detail: fmt.Sprintf("volume limit %d", f.Limit)})
		return hostpath.SetNodeVolumeLimit(c.root.Path("storage"), f.Node, f.Limit)
	case fault.VolumeHealth:
		return c.setVolumeHealth(ctx, f)
	}
	n := c.nodes[f.Node]
	if n == nil {
		return fmt.Errorf("there is no node %q (nodes: %v)", f.Node, c.cfg.Nodes)
	}
	c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: string(f.Kind), Object: "Node " + f.Node})
	switch f.Kind {
	case fault.NodeLoss:
		return c.loseNode(n)
	case fault.NodeReturn:
		return c.returnNode(ctx, n)
	case fault.OutOfService:
		cs, err := kubernetes.NewForConfig(c.RESTConfig())
		if err != nil {
			return err
		}
		return apifaults.OutOfService(ctx, cs, f.Node, time.Now())
	case fault.MissingMountPropagation:
		return c.isolateNodePlugin(ctx, n)
	case fault.KubeletRestart:
		return c.restartKubelet(ctx, n)
	}
	return fault.Unsupported(f.Kind, backendName, "it is not a fault csisim knows")
}

// loseNode stops the node's kubelet and kills its node plugin; mounts and
// attachments stay, as when a machine drops off the network or dies.
func (c *Cluster) loseNode(n *simNode) error {
	if n.lost {
		return fmt.Errorf("node %s is already lost", n.name)
	}
	n.lost = true
	n.stop()
	return c.stopNodePlugin(n.name, 0)
}

// returnNode starts the node plugin and a kubelet for the node again, as
// after a reboot: the new kubelet rebuilds its state from the mounts it
// finds, posts Ready, renews its Lease and takes up the node's pods.
func (c *Cluster) returnNode(ctx context.Context, n *simNode) error {
	if !n.lost {
		return fmt.Errorf("node %s is not lost", n.name)
	}
	if _, err := c.startDriver(ctx, "node", n.name); err != nil {
		return err
	}
	n.lost = false
	if n.real != nil {
		return n.real.StartKubelet(ctx)
	}
	return c.startKubelet(ctx, c.kubeletCtx, n.name, "unix://"+c.nodeSocket(n.name), true)
}

// restartKubelet stops the node's kubelet and starts a new one, which
// finds the node's volumes mounted and takes them up again; the node
// plugin keeps running, as on a real node whose kubelet restarts.
func (c *Cluster) restartKubelet(ctx context.Context, n *simNode) error {
	if n.lost {
		return fmt.Errorf("node %s is lost; it has no kubelet to restart", n.name)
	}
	n.stop()
	if n.real != nil {
		return n.real.StartKubelet(ctx)
	}
	return c.startKubelet(ctx, c.kubeletCtx, n.name, "unix://"+c.nodeSocket(n.name), true)
}

// isolateNodePlugin restarts the node's CSI plugin under unshare(1) in a
// new mount namespace with private propagation: its bind mounts succeed
// but the kubelet's namespace never sees them.
func (c *Cluster) isolateNodePlugin(ctx context.Context, n *simNode) error {
	if err := c.stopNodePlugin(n.name, 5*time.Second); err != nil {
		return err
	}
	n.isolated = true
	_, err := c.startDriver(ctx, "node", n.name)
	return err
}

// stopNodePlugin stops the node's plugin process — with SIGTERM and grace,
// or killed at once when grace is 0 — and forgets it.
func (c *Cluster) stopNodePlugin(node string, grace time.Duration) error {
	i := slices.IndexFunc(c.procs, func(p namedProcess) bool { return p.name == "driver-node-"+node })
	if i < 0 {
		return fmt.Errorf("node %s has no plugin process", node)
	}
	p := c.procs[i]
	c.procs = slices.Delete(c.procs, i, i+1)
	if grace == 0 {
		return p.Kill()
	}
	return p.Stop(grace)
}

// setVolumeHealth is volume-health in the backend of csisim's driver, as
// on the simulator (sim/cluster/faults_backend.go).
func (c *Cluster) setVolumeHealth(ctx context.Context, f fault.Fault) error {
	return cluster.InjectVolumeHealth(ctx, c.RESTConfig(), f, func(string) (string, error) { return c.root.Path("storage"), nil }, c.rec.Add)
}
