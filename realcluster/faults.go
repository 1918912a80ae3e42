package realcluster

import (
	"context"
	"fmt"
	"slices"
	"time"

	"k8s.io/client-go/kubernetes"

	scenario "github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/scenarios/apifaults"
	"github.com/csisim/csisim/sim/nodelifecycle"
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
}

// InjectFault makes a fault happen to the cluster's nodes, as the
// simulator does; it is what the scenario runner calls for fault steps.
// The control plane is real, so what follows — the node controller's
// taints and evictions, the attach/detach controller's force detach, the
// pod garbage collector — is the real components' doing, on wall time.
func (c *Cluster) InjectFault(ctx context.Context, f scenario.Fault) error {
	switch f.Type {
	case scenario.FaultStaleVolumeAttachment:
		cs, err := kubernetes.NewForConfig(c.RESTConfig())
		if err != nil {
			return err
		}
		return apifaults.StaleVolumeAttachment(ctx, cs, f.Namespace, f.Claim, f.Node, func(name string) {
			c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: f.Type, Object: "VolumeAttachment " + name})
		})
	case scenario.FaultControllerManagerRestart:
		c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: f.Type, Object: "kube-controller-manager"})
		return c.kube.RestartControllerManager(ctx)
	}
	n := c.nodes[f.Node]
	if n == nil {
		return fmt.Errorf("there is no node %q (nodes: %v)", f.Node, c.cfg.Nodes)
	}
	c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: f.Type, Object: "Node " + f.Node})
	switch f.Type {
	case scenario.FaultNodeLoss:
		return c.loseNode(n)
	case scenario.FaultNodeReturn:
		return c.returnNode(ctx, n)
	case scenario.FaultOutOfService:
		cs, err := kubernetes.NewForConfig(c.RESTConfig())
		if err != nil {
			return err
		}
		return nodelifecycle.MarkOutOfService(ctx, cs, f.Node, time.Now())
	case scenario.FaultMissingMountPropagation:
		return c.isolateNodePlugin(ctx, n)
	case scenario.FaultKubeletRestart:
		return c.restartKubelet(ctx, n)
	}
	return fmt.Errorf("fault %q is not supported on the real control plane", f.Type)
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
	endpoint, err := c.startDriver(ctx, "node", n.name)
	if err != nil {
		return err
	}
	n.lost = false
	return c.startKubelet(ctx, c.kubeletCtx, n.name, endpoint, true)
}

// restartKubelet stops the node's kubelet and starts a new one, which
// finds the node's volumes mounted and takes them up again; the node
// plugin keeps running, as on a real node whose kubelet restarts.
func (c *Cluster) restartKubelet(ctx context.Context, n *simNode) error {
	if n.lost {
		return fmt.Errorf("node %s is lost; it has no kubelet to restart", n.name)
	}
	n.stop()
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
