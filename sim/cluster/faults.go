package cluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/fault"
	scenario "github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/kubelet"
	"github.com/csisim/csisim/sim/nodelifecycle"
	"github.com/csisim/csisim/trace"
)

// nodeParts is what makes up a simulated node: its kubelet and its CSI
// node plugin process, and how to start the plugin again.
type nodeParts struct {
	name     string
	template launch.Template
	vars     launch.Vars
	process  *launch.Process
	kubelet  *kubelet.Kubelet
	lost     bool
}

// InjectFault makes a fault happen to the simulated cluster; it is what
// the scenario runner calls for fault steps.
func (c *Cluster) InjectFault(ctx context.Context, f scenario.Fault) error {
	switch f.Type {
	case scenario.FaultStaleVolumeAttachment:
		return c.staleVolumeAttachment(ctx, f)
	case scenario.FaultControllerManagerRestart:
		return c.restartControllerManager()
	case scenario.FaultAPIConflict, scenario.FaultWatchDrop:
		// Temporary, until the migration to package fault (helper
		// "faults") dispatches fault.Fault here.
		return c.injectAPIFault(ctx, fault.Fault{Kind: fault.Kind(f.Type), Component: f.Component, Resource: f.Resource, Times: f.Times})
	}
	parts := c.nodes[f.Node]
	if parts == nil {
		return fmt.Errorf("there is no node %q (nodes: %v)", f.Node, c.cfg.Nodes)
	}
	c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: f.Type, Object: "Node " + f.Node})
	switch f.Type {
	case scenario.FaultNodeLoss:
		return c.loseNode(parts, f.Node)
	case scenario.FaultNodeReturn:
		return c.returnNode(ctx, parts, f.Node)
	case scenario.FaultOutOfService:
		return c.taintOutOfService(ctx, f.Node)
	case scenario.FaultMissingMountPropagation:
		return c.isolateNodePlugin(ctx, parts, f.Node)
	case scenario.FaultKubeletRestart:
		return c.restartKubelet(ctx, parts, f.Node)
	}
	return fmt.Errorf("fault %q is not known to the simulator", f.Type)
}

// loseNode stops the node's kubelet and kills its node plugin; mounts and
// attachments stay, as when a machine drops off the network or dies.
func (c *Cluster) loseNode(parts *nodeParts, node string) error {
	if parts.lost {
		return fmt.Errorf("node %s is already lost", node)
	}
	parts.lost = true
	if parts.kubelet != nil {
		parts.kubelet.Stop(true)
	}
	c.loop.Pause("kubelet-"+node, true)
	if parts.process != nil {
		return parts.process.Kill()
	}
	return nil
}

// returnNode starts the node plugin again and lets the kubelet go on from
// the state it had: the node comes back as from a network partition.
func (c *Cluster) returnNode(ctx context.Context, parts *nodeParts, node string) error {
	if !parts.lost {
		return fmt.Errorf("node %s is not lost", node)
	}
	if parts.process != nil {
		if err := c.launch(ctx, parts.name, parts.template, parts.vars, node); err != nil {
			return err
		}
	}
	parts.lost = false
	if parts.kubelet != nil {
		parts.kubelet.Stop(false)
		parts.kubelet.Heartbeat(ctx)
	}
	c.loop.Pause("kubelet-"+node, false)
	return nil
}

// taintOutOfService marks the node shut down for good, as an administrator
// does with kubectl taint for the non-graceful node shutdown.
func (c *Cluster) taintOutOfService(ctx context.Context, node string) error {
	cs := kubernetes.NewForConfigOrDie(c.RESTConfig())
	n, err := cs.CoreV1().Nodes().Get(ctx, node, metav1.GetOptions{})
	if err != nil {
		return err
	}
	if slices.ContainsFunc(n.Spec.Taints, func(t corev1.Taint) bool { return t.Key == nodelifecycle.TaintOutOfService }) {
		return nil
	}
	now := metav1.NewTime(c.clock.Now().Truncate(time.Second))
	n.Spec.Taints = append(n.Spec.Taints, corev1.Taint{Key: nodelifecycle.TaintOutOfService, Value: "nodeshutdown",
		Effect: corev1.TaintEffectNoExecute, TimeAdded: &now})
	_, err = cs.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
	return err
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
	return c.launch(ctx, parts.name, isolated, parts.vars, node)
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
	return parts.kubelet.Restart(ctx)
}
