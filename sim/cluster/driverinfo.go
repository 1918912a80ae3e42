package cluster

import (
	"context"
	"fmt"

	"github.com/container-storage-interface/spec/lib/go/csi"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/csiclient"
)

// askDriver asks driver d, once its controller plugin runs and before
// any component starts, what it says of itself (driverinfo.Ask): the
// controller plugin its name and capabilities, and a node plugin its
// capabilities and NodeGetInfo. It asks as csisim, not as a component,
// past the fault proxies, so the run's timeline does not show it; the
// components ask what they ask themselves (their Check, the kubelet's
// registration). The first driver's answers are the cluster's DriverInfo,
// from which a run decides the scenarios that apply; the driver's
// VerifyDriver may refuse them.
func (c *Cluster) askDriver(ctx context.Context, d *driver, asked *plugin) error {
	defer d.stopAsked(asked)
	ctx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
	defer cancel()
	ctrl, err := csiclient.Dial(d.controllerPlugin().driverEndpoint, "csisim", nil)
	if err != nil {
		return err
	}
	defer ctrl.Close()
	info, err := driverinfo.Ask(ctx, driverinfo.Plugin{Identity: ctrl.Identity, Controller: ctrl.Controller, GroupController: ctrl.GroupController}, nil)
	if err != nil {
		return fmt.Errorf("asking the driver what it is: %w", err)
	}
	if info.Node, info.NodeInfo, err = c.askNode(ctx, d, asked); err != nil {
		return err
	}
	d.info = info
	if d.dc.VerifyDriver != nil {
		return d.dc.VerifyDriver(info)
	}
	return nil
}

// askNode asks a node plugin what the node service says of itself: one
// of its own, started as the first node's is (startAsked; askDriver stops
// it). The sidecars all ask the controller plugin at start, so one more
// question there is one more sidecar; a node plugin is asked by its
// kubelet alone, and a driver whose answers depend on what it was asked
// before (a faulty one) must answer the kubelet's first question as it
// would on a real node.
func (c *Cluster) askNode(ctx context.Context, d *driver, pl *plugin) (map[csi.NodeServiceCapability_RPC_Type]bool, *driverinfo.NodeInfo, error) {
	if pl.process != nil {
		if err := d.waitReady(ctx, pl); err != nil {
			return nil, nil, err
		}
	}
	conn, err := csiclient.Dial(pl.driverEndpoint, "csisim", nil)
	if err != nil {
		return nil, nil, err
	}
	defer conn.Close()
	caps, err := driverinfo.AskNode(ctx, conn.Node)
	var info *driverinfo.NodeInfo
	if err == nil {
		info, err = driverinfo.AskNodeInfo(ctx, conn.Node)
	}
	if err != nil {
		return nil, nil, fmt.Errorf("asking the node plugin on %s what it is: %w", pl.node, err)
	}
	return caps, info, nil
}

// DriverInfo is what the first driver said of itself at the start: its
// name, its capabilities and the first node's NodeGetInfo.
func (c *Cluster) DriverInfo() driverinfo.Info { return c.driver.info }
