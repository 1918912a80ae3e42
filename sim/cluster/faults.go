package cluster

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/scenarios/apifaults"
	"github.com/csisim/csisim/sim/kubelet"
	"github.com/csisim/csisim/trace"
)

// nodeParts is what makes up a simulated node: its kubelet and its CSI
// node plugin (process or mock, with the fault proxy in front of it), and
// those of the extra drivers (drivers.go).
type nodeParts struct {
	*plugin
	extra   []*plugin
	kubelet *kubelet.Kubelet
	lost    bool
}

// all are the node's plugins, the first driver's first.
func (n *nodeParts) all() []*plugin { return append([]*plugin{n.plugin}, n.extra...) }

// backendName names the simulator in the faults it refuses.
const backendName = "the simulator"

// CanInject says whether the simulator can inject f; the scenario runner
// asks for every fault step before the run starts. The CSI and driver
// faults are judged by canInjectCSI, the API faults by canInjectAPI.
func (c *Cluster) CanInject(f fault.Fault) error {
	switch f.Kind {
	case fault.NodeLoss, fault.NodeReturn, fault.OutOfService, fault.KubeletRestart, fault.StaleVolumeAttachment:
		return nil
	case fault.MissingMountPropagation:
		if f.Driver != "" {
			return fmt.Errorf("%s isolates the first driver's node plugin, not one of driver %s", f.Kind, f.Driver)
		}
		if c.cfg.Mock {
			return fault.Unsupported(f.Kind, backendName+" with the mock driver", "the mock driver mounts nothing, so a private mount namespace changes nothing")
		}
		return nil
	case fault.ControllerManagerRestart:
		if len(c.components.restartable(kubeControllerManager)) == 0 {
			return fault.Unsupported(f.Kind, backendName, fmt.Sprintf("kube-controller-manager's controllers are not simulated here (left out: %v)", c.cfg.Without))
		}
		return nil
	case fault.CSIError, fault.CSIDelay, fault.CSIHang, fault.CSILostAnswer, fault.DriverCrashMidCall, fault.CSIHeal,
		fault.DriverCrash, fault.DriverRestart, fault.NodePluginMissing:
		return c.canInjectCSI(f)
	case fault.APIConflict, fault.WatchDrop:
		return c.canInjectAPI(f)
	case fault.APIServerDown, fault.APISlowWrites, fault.APIThrottle:
		return c.canInjectAPIServer(f)
	case fault.SidecarRestart:
		return c.canRestartSidecar(f)
	case fault.NodeVolumeLimit:
		return c.canInjectBackend(f)
	case fault.VolumeHealth:
		return c.canSetVolumeHealth(f)
	case fault.MountBusy:
		return c.canHoldMount(f)
	}
	return fault.Unsupported(f.Kind, backendName, "it is not a fault the simulator knows")
}

// InjectFault makes a fault happen to the simulated cluster; it is what
// the scenario runner calls for fault steps.
func (c *Cluster) InjectFault(ctx context.Context, f fault.Fault) error {
	switch f.Kind {
	case fault.StaleVolumeAttachment:
		return c.staleVolumeAttachment(ctx, f)
	case fault.ControllerManagerRestart:
		return c.restartControllerManager()
	case fault.CSIError, fault.CSIDelay, fault.CSIHang, fault.CSILostAnswer, fault.DriverCrashMidCall, fault.CSIHeal:
		return c.injectCSIFault(ctx, f)
	case fault.DriverCrash, fault.DriverRestart, fault.NodePluginMissing:
		return c.injectDriverFault(ctx, f)
	case fault.APIConflict, fault.WatchDrop:
		return c.injectAPIFault(ctx, f)
	case fault.APIServerDown, fault.APISlowWrites, fault.APIThrottle:
		return c.injectAPIServerFault(ctx, f)
	case fault.SidecarRestart:
		return c.restartSidecar(f)
	case fault.NodeVolumeLimit:
		return c.setNodeVolumeLimit(f)
	case fault.VolumeHealth:
		return c.setVolumeHealth(ctx, f)
	case fault.MountBusy:
		return c.holdMount(ctx, f)
	}
	parts := c.nodes[f.Node]
	if parts == nil {
		return fmt.Errorf("there is no node %q (nodes: %v)", f.Node, c.cfg.Nodes)
	}
	c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: c.faultActor(), Verb: string(f.Kind), Object: "Node " + f.Node})
	switch f.Kind {
	case fault.NodeLoss:
		return c.loseNode(parts, f.Node)
	case fault.NodeReturn:
		return c.returnNode(ctx, parts, f.Node)
	case fault.OutOfService:
		cs, err := kubernetes.NewForConfig(c.RESTConfig())
		if err != nil {
			return err
		}
		return apifaults.OutOfService(ctx, cs, f.Node, c.clock.Now())
	case fault.MissingMountPropagation:
		return c.isolateNodePlugin(ctx, parts, f.Node)
	case fault.KubeletRestart:
		return c.restartKubelet(ctx, parts, f.Node)
	}
	return fault.Unsupported(f.Kind, backendName, "it is not a fault the simulator knows")
}

// loseNode stops the node's kubelet and kills its node plugin; mounts and
// attachments stay, as when a machine drops off the network or dies.
func (c *Cluster) loseNode(parts *nodeParts, node string) error {
	if parts.lost {
		return fmt.Errorf("node %s is already lost", node)
	}
	c.nodesMu.Lock()
	parts.lost = true
	c.nodesMu.Unlock()
	if parts.kubelet != nil {
		parts.kubelet.Stop(true)
	}
	c.loop.Pause("kubelet-"+node, true)
	var errs []error
	for _, pl := range parts.all() {
		if pl.process != nil {
			errs = append(errs, pl.process.Kill())
		}
	}
	return errors.Join(errs...)
}

// returnNode starts the node plugin again and lets the kubelet go on from
// the state it had: the node comes back as from a network partition.
func (c *Cluster) returnNode(ctx context.Context, parts *nodeParts, node string) error {
	if !parts.lost {
		return fmt.Errorf("node %s is not lost", node)
	}
	for _, pl := range parts.all() {
		if pl.process != nil {
			if err := pl.drv.launch(ctx, pl); err != nil {
				return err
			}
		}
	}
	c.nodesMu.Lock()
	parts.lost = false
	c.nodesMu.Unlock()
	if parts.kubelet != nil {
		parts.kubelet.Stop(false)
		parts.kubelet.Heartbeat(ctx)
	}
	c.loop.Pause("kubelet-"+node, false)
	return nil
}

// isolateNodePlugin restarts the node's CSI plugin under unshare(1) in a
// new mount namespace with private propagation: a real separate process
// whose bind mounts the kubelet's namespace never sees. The mounts die with
// the namespace when the plugin stops, so nothing is left behind.
func (c *Cluster) isolateNodePlugin(ctx context.Context, parts *nodeParts, node string) error {
	if parts.process == nil {
		return fmt.Errorf("node %s has no plugin process to isolate (the mock driver mounts nothing)", node)
	}
	if err := parts.process.Stop(5 * time.Second); err != nil {
		return fmt.Errorf("stopping the node plugin of %s: %w", node, err)
	}
	isolated := launch.Template{Path: "unshare",
		Args: append([]string{"--mount", "--propagation", "private", parts.template.Path}, parts.template.Args...),
		Env:  parts.template.Env}
	parts.template = isolated
	return parts.drv.launch(ctx, parts.plugin)
}

// restartKubelet restarts the node's kubelet: it forgets what it had
// mounted and rebuilds that from its directory, as a new kubelet process
// does; the node plugin keeps running.
func (c *Cluster) restartKubelet(ctx context.Context, parts *nodeParts, node string) error {
	if parts.lost {
		return fmt.Errorf("node %s is lost; its kubelet is not running", node)
	}
	if parts.kubelet == nil {
		return fmt.Errorf("node %s has no kubelet", node)
	}
	old := parts.kubelet.ProcessID()
	err := parts.kubelet.Restart(ctx)
	// The calls the old process left waiting in the node's proxies end
	// with it, as the sidecars' do (restartComponent).
	for _, pl := range parts.all() {
		pl.proxy.InterruptParkedOf(old)
	}
	return err
}
