package cluster

import (
	"fmt"

	"github.com/csisim/csisim/drivers/hostpath"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/trace"
)

// The faults of the driver's storage backend: what changes under csisim's
// driver while it runs, as a cloud's limits change under a real one. They
// act on the backend below the run's root, which the driver's processes
// share (drivers/hostpath/backend.go), and need a driver whose backend
// that is: the scenario's needs (changingVolumeLimits) skip other drivers.

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
