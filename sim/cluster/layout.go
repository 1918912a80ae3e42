package cluster

import (
	"errors"
	"fmt"
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

// check refuses a driver configuration that would silently drop
// something the cluster was asked for.
func (cfg DriverConfig) check() error {
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

// Layout is how the cluster's driver processes are laid out.
func (c *Cluster) Layout() Layout {
	if c.cfg.Layout == "" {
		return LayoutSplit
	}
	return c.cfg.Layout
}
