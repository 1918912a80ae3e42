package cluster

import (
	"context"
	"fmt"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/csiclient"
)

// askDriver asks the driver, once its controller plugin and the first
// node's plugin run and before any component starts, what it says of
// itself (driverinfo.Ask): its name, its capabilities and the first
// node's NodeGetInfo. It asks past the fault proxies, as csisim and not
// as a component, so the run's timeline does not show it: the components
// ask what they ask themselves (their Check, the kubelet's registration).
// The answers are the cluster's DriverInfo, from which a run decides the
// scenarios that apply, and Config.VerifyDriver may refuse them.
func (c *Cluster) askDriver(ctx context.Context) error {
	ctx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
	defer cancel()
	ctrl, err := csiclient.Dial(c.driver.controllerPlugin().driverEndpoint, "csisim", nil)
	if err != nil {
		return err
	}
	defer ctrl.Close()
	info, err := driverinfo.Ask(ctx, driverinfo.Plugin{Identity: ctrl.Identity, Controller: ctrl.Controller}, nil)
	if err != nil {
		return fmt.Errorf("asking the driver what it is: %w", err)
	}
	// The name the sidecars will take (askDriverName), already for the
	// first node's plugin directory.
	c.cfg.DriverName = info.Name
	first := c.cfg.Nodes[0]
	pl, err := c.driver.startNode(ctx, first)
	if err != nil {
		return err
	}
	node, err := csiclient.Dial(pl.driverEndpoint, "csisim", nil)
	if err != nil {
		return err
	}
	defer node.Close()
	if info.Node, err = driverinfo.AskNode(ctx, node.Node); err == nil {
		info.NodeInfo, err = driverinfo.AskNodeInfo(ctx, node.Node)
	}
	if err != nil {
		return fmt.Errorf("asking the node plugin on %s what it is: %w", first, err)
	}
	c.driverInfo = info
	if c.cfg.VerifyDriver != nil {
		return c.cfg.VerifyDriver(info)
	}
	return nil
}

// DriverInfo is what the driver said of itself at the start: its name,
// its capabilities and the first node's NodeGetInfo.
func (c *Cluster) DriverInfo() driverinfo.Info { return c.driverInfo }
