package realcluster

import (
	"context"
	"fmt"
	"time"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/csiclient"
)

// askDriver asks csisim's driver what it says of itself, as the simulator
// does (sim/cluster askDriver): the controller plugin's name and
// capabilities and the first node's plugin's, past the proxies, so that
// the timeline does not show it. A run decides from the answers which
// scenarios apply (scenarios.DriverReporter).
func (c *Cluster) askDriver(ctx context.Context, controllerEndpoint string) error {
	ctx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	var plugins []driverinfo.Plugin
	for _, endpoint := range []string{controllerEndpoint, "unix://" + c.pluginSocket("node", c.cfg.Nodes[0])} {
		conn, err := csiclient.Dial(endpoint, "csisim", nil)
		if err != nil {
			return err
		}
		defer conn.Close()
		plugins = append(plugins, driverinfo.Plugin{Identity: conn.Identity, Controller: conn.Controller, GroupController: conn.GroupController, Node: conn.Node})
	}
	info, err := driverinfo.Ask(ctx, plugins[0], &plugins[1])
	if err != nil {
		return fmt.Errorf("asking the driver what it is: %w", err)
	}
	c.driverInfo = info
	return nil
}

// DriverInfo is what the driver said of itself at the start.
func (c *Cluster) DriverInfo() driverinfo.Info { return c.driverInfo }
