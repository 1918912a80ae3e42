package cluster

import (
	"context"
	"fmt"
	"strings"

	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/csisim/csisim/drivers/hostpath"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/scenarios/apifaults"
	"github.com/csisim/csisim/trace"
)

// The faults of the driver's storage backend: what changes under csisim's
// driver while it runs, as a cloud's limits change under a real one. They
// act on the backend below the run's root, which the driver's processes
// share (drivers/hostpath/backend.go), and need a driver whose backend
// that is: the scenario's needs (changingVolumeLimits, changingVolumeHealth)
// skip other drivers.

// canInjectBackend says whether the simulator can inject a backend fault.
func (c *Cluster) canInjectBackend(f fault.Fault) error {
	if c.cfg.Mock {
		return fault.Unsupported(f.Kind, backendName+" with the mock driver", "the mock keeps no storage backend below the run's root; run csisim's driver")
	}
	if c.nodes[f.Node] == nil {
		return fmt.Errorf("there is no node %q (nodes: %v)", f.Node, c.cfg.Nodes)
	}
	return nil
}

// setNodeVolumeLimit is node-volume-limit: the node's limit in the
// backend, which its plugin's NodeGetInfo reports from now on.
func (c *Cluster) setNodeVolumeLimit(f fault.Fault) error {
	if err := c.canInjectBackend(f); err != nil {
		return err
	}
	c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: c.faultActor(), Verb: string(f.Kind), Object: "Node " + f.Node,
		Detail: fmt.Sprintf("volume limit %d", f.Limit)})
	return hostpath.SetNodeVolumeLimit(c.driver.root.Path("storage"), f.Node, f.Limit)
}

// canSetVolumeHealth says whether the simulator can inject volume-health:
// not into the mock, which keeps no backend below the run's root.
func (c *Cluster) canSetVolumeHealth(f fault.Fault) error {
	if c.cfg.Mock {
		return fault.Unsupported(f.Kind, backendName+" with the mock driver", "the mock keeps no storage backend below the run's root; run csisim's driver")
	}
	return nil
}

// setVolumeHealth is volume-health: the condition of the claim's volume in
// the backend of the driver the volume is of, which the driver's health
// calls report from now on.
func (c *Cluster) setVolumeHealth(ctx context.Context, f fault.Fault) error {
	return InjectVolumeHealth(ctx, c.RESTConfig(), f, func(name string) (string, error) {
		d, err := c.driverNamed(name)
		if err != nil {
			return "", err
		}
		if d.dc.Mock {
			return "", fault.Unsupported(f.Kind, backendName+" with the mock driver", "the mock keeps no storage backend below the run's root")
		}
		return d.path("storage"), nil
	}, func(e trace.Entry) { e.Actor = c.faultActor(); c.rec.Add(e) })
}

// InjectVolumeHealth is volume-health on any backend that runs csisim's
// driver: it finds the claim's volume, records the fault (add) and sets
// the volume's condition in the backend storage(driver) names, the
// storage root of the volume's driver.
func InjectVolumeHealth(ctx context.Context, cfg *rest.Config, f fault.Fault, storage func(driver string) (string, error), add func(trace.Entry)) error {
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return err
	}
	pv, err := apifaults.ClaimVolume(ctx, cs, f.Namespace, f.Claim)
	if err != nil {
		return err
	}
	root, err := storage(pv.Spec.CSI.Driver)
	if err != nil {
		return err
	}
	add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: string(f.Kind), Object: "PersistentVolume " + pv.Name, Detail: healthDetail(f.Health)})
	return hostpath.SetVolumeHealth(root, pv.Spec.CSI.VolumeHandle, healthCondition(f.Health))
}

// healthCondition is what the backend of csisim's driver is told for a
// volume-health fault: nil for Healthy.
func healthCondition(h fault.Health) *hostpath.HealthCondition {
	if h.Status == fault.Healthy {
		return nil
	}
	return &hostpath.HealthCondition{Status: h.Status, Reason: h.Reason, Message: h.Message}
}

// healthDetail is a volume-health fault's timeline detail.
func healthDetail(h fault.Health) string {
	s := strings.TrimSpace(h.Status + " " + h.Reason)
	if h.Message != "" {
		s += ": " + h.Message
	}
	return s
}
