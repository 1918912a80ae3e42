package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/csisim/csisim/fault"
)

// Layout is how a driver's processes are laid out in the cluster.
type Layout string

const (
	// LayoutSplit runs the controller plugin as a process of its own,
	// with {nodeID} "controller" and a state directory of its own, and a
	// node plugin on every node. Controller and node plugins share state
	// only through the storage backend under {root}, as a network storage
	// driver's do (csisim's own driver).
	LayoutSplit Layout = "split"
	// LayoutCombined runs one process per node that serves the identity,
	// controller and node services, as csi-driver-host-path's single pod
	// and most test drivers do. The first node's process is also the
	// controller plugin: the controller plugin's fault proxy points at
	// that node's driver socket, and there is no controller process. A
	// volume the controller service makes is therefore the first node's,
	// in the state the driver keeps for it there.
	LayoutCombined Layout = "combined"
)

// checkDriver refuses a driver configuration that would silently drop
// something the cluster was asked for.
func (cfg *Config) checkDriver() error {
	switch cfg.Layout {
	case "", LayoutSplit, LayoutCombined:
	default:
		return fmt.Errorf("driver layout %q: want %s or %s", cfg.Layout, LayoutSplit, LayoutCombined)
	}
	if len(cfg.DriverArgs) > 0 && (cfg.Driver.Path != "" || cfg.Mock) {
		driver := "the in-memory mock driver"
		if !cfg.Mock {
			driver = cfg.Driver.Path
		}
		return fmt.Errorf("driver arguments %q are flags of csisim's own driver, but the driver here is %s, which would not get them; "+
			"a driver profile's flags (zone, capacity, volumeLimit, multiNode, extra) say how to ask another driver for the same", cfg.DriverArgs, driver)
	}
	if cfg.ControllerDriver.Path != "" && cfg.Layout == LayoutCombined {
		return errors.New("a controller driver command is for the split layout; the combined layout's first node plugin is the controller plugin")
	}
	return nil
}

// controllerHost is, for the controller plugin of the combined layout,
// the first node's plugin, whose driver it is; nil otherwise.
func (c *Cluster) controllerHost(role fault.Plugin) *plugin {
	if role != fault.Controller || c.cfg.Layout != LayoutCombined {
		return nil
	}
	return c.nodes[c.cfg.Nodes[0]].plugin
}

// startControllerPlugin starts the controller plugin and returns its
// endpoint; in the combined layout it starts the first node's plugin
// first, whose driver the controller plugin is.
func (c *Cluster) startControllerPlugin(ctx context.Context) (string, error) {
	if c.cfg.Layout == LayoutCombined {
		if _, err := c.startDriver(ctx, fault.Node, c.cfg.Nodes[0]); err != nil {
			return "", err
		}
	}
	return c.startDriver(ctx, fault.Controller, "")
}

// nodePluginEndpoint starts the node's plugin, unless it runs already (the
// first node's, in the combined layout), and returns its endpoint.
func (c *Cluster) nodePluginEndpoint(ctx context.Context, node string) (string, error) {
	if parts := c.nodes[node]; parts != nil && parts.plugin != nil && parts.proxy != nil {
		return parts.proxy.Endpoint(), nil
	}
	return c.startDriver(ctx, fault.Node, node)
}

// zoneArgs are the arguments that tell a node plugin its zone.
func (c *Cluster) zoneArgs() []string {
	if c.cfg.Driver.Path == "" && len(c.cfg.ZoneArgs) == 0 {
		return []string{"--zone", "{zone}"}
	}
	return c.cfg.ZoneArgs
}

// csisimBinary is the csisim binary: Config.DriverBinary, else this
// executable.
func (c *Cluster) csisimBinary() (string, error) {
	if c.cfg.DriverBinary != "" {
		return c.cfg.DriverBinary, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the csisim binary for the driver: %w", err)
	}
	return exe, nil
}

// Layout is how the cluster's driver processes are laid out.
func (c *Cluster) Layout() Layout {
	if c.cfg.Layout == "" {
		return LayoutSplit
	}
	return c.cfg.Layout
}

// controllerPlugin is the cluster's controller plugin.
func (c *Cluster) controllerPlugin() *plugin {
	for _, pl := range c.plugins {
		if pl.role == fault.Controller {
			return pl
		}
	}
	return nil
}
