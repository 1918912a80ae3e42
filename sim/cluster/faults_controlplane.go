package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/scenarios/apifaults"
	"github.com/csisim/csisim/trace"
)

// staleVolumeAttachment creates, as the scenario and not as the
// attach/detach controller, the VolumeAttachment the controller would make
// for the claim's volume on the node (see apifaults.StaleVolumeAttachment).
func (c *Cluster) staleVolumeAttachment(ctx context.Context, f fault.Fault) error {
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		return err
	}
	return apifaults.StaleVolumeAttachment(ctx, cs, f.Namespace, f.Claim, f.Node, func(name string) {
		c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: c.faultActor(), Verb: string(f.Kind), Object: "VolumeAttachment " + name})
	})
}

// restartControllerManager restarts the simulated kube-controller-manager's
// controllers that keep state in memory: the attach/detach controller
// rebuilds its actual state of the world from the API; the node lifecycle
// controller registers the nodes again and the pod garbage collector
// starts its quarantine of missing nodes over.
func (c *Cluster) restartControllerManager() error {
	c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: c.faultActor(), Verb: string(fault.ControllerManagerRestart), Object: "kube-controller-manager"})
	restartable := c.components.restartable(kubeControllerManager)
	if len(restartable) == 0 {
		return fmt.Errorf("kube-controller-manager's controllers are not simulated here (left out: %v)", c.cfg.Without)
	}
	for _, rc := range restartable {
		rc.comp.Restart()
	}
	return nil
}

// canRestartSidecar says whether sidecar-restart can restart the component
// of the driver f names (the first one if none): one of fault.Sidecars
// that runs here (not left out, and not exited at start for want of a
// driver capability).
func (c *Cluster) canRestartSidecar(f fault.Fault) error {
	name := f.Component
	if !slices.Contains(fault.Sidecars, name) {
		return fmt.Errorf("%s is not a sidecar sidecar-restart restarts (%v)", name, fault.Sidecars)
	}
	d, err := c.driverNamed(f.Driver)
	if err != nil {
		return err
	}
	if !c.components.isRunning(c.componentKey(name, d)) && !slices.Contains(d.connecting, name) {
		return fault.Unsupported(fault.SidecarRestart, backendName, fmt.Sprintf("%s is not running here (left out: %v, or it exited at start: the driver lacks what it serves)", name, c.cfg.Without))
	}
	return nil
}

// restartSidecar restarts the component as a container restart does: the
// run it was in ends (a sync of it still waiting for a CSI answer finishes
// in a process that is gone, see process), and a new one starts from the
// component's row with empty memory — claims in progress, caches,
// backoffs, workqueue — asks the driver again, and lists everything anew.
func (c *Cluster) restartSidecar(f fault.Fault) error {
	if err := c.canRestartSidecar(f); err != nil {
		return err
	}
	d, _ := c.driverNamed(f.Driver)
	key := c.componentKey(f.Component, d)
	c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: c.faultActor(), Verb: string(fault.SidecarRestart), Object: key})
	return c.restartComponent(f.Component, d)
}

// startConnecting starts the sidecars of d that were restarted while its
// controller plugin was down, now that it is back, in the order they
// restarted.
func (c *Cluster) startConnecting(d *driver) error {
	waiting := d.connecting
	d.connecting = nil
	var errs []error
	for _, name := range waiting {
		errs = append(errs, c.restartComponent(name, d))
	}
	return errors.Join(errs...)
}
