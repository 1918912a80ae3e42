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
		return c.InjectFault(ctx, f)
	})
}

// Nodes are the cluster's node names.
func (c *Cluster) Nodes() []string { return slices.Clone(c.cfg.Nodes) }
