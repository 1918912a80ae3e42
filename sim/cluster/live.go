package cluster

import (
	"context"
	"errors"
	"slices"

	"github.com/csisim/csisim/fault"
)

// InjectFaultLive checks and injects f on a realtime cluster while its
// loop runs (csisim serve): as a job of the loop, so that the fault lands
// between two items of work, as a scenario's fault step lands between two
// runs of the loop.
func (c *Cluster) InjectFaultLive(ctx context.Context, f fault.Fault) error {
	if !c.cfg.Realtime {
		return errors.New("InjectFaultLive needs a realtime cluster; a scenario injects faults between runs with InjectFault")
	}
	return c.loop.Do(ctx, func() error {
		if err := c.CanInject(f); err != nil {
			return err
		}
		c.faultBy = LiveFaultActor
		defer func() { c.faultBy = "" }()
		return c.InjectFault(ctx, f)
	})
}

// LiveFaultActor is the actor of the FAULT entries of faults injected
// with InjectFaultLive (csisim fault): in a classroom's timeline, what a
// person did stands apart from what a scenario did.
const LiveFaultActor = "csisim fault"

// faultActor is the actor of a fault's timeline entry.
func (c *Cluster) faultActor() string {
	if c.faultBy != "" {
		return c.faultBy
	}
	return "scenario"
}

// Nodes are the cluster's node names.
func (c *Cluster) Nodes() []string { return slices.Clone(c.cfg.Nodes) }
