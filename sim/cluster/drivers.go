package cluster

import (
	"context"
	"fmt"
	"slices"
	"strconv"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/fault"
)

// Several CSI drivers in one cluster, as a real cluster runs a block
// driver beside a file driver. Each driver is deployed as its own: a
// controller plugin with its own external-provisioner, external-attacher,
// external-resizer and csi-snapshotter, each of which acts only on its
// driver's objects (the real ones filter by driver name); a node plugin on
// every node, registered with the node's kubelet beside the others (the
// CSINode lists each, the Node's csi.volume.kubernetes.io/nodeid
// annotation maps each to its node ID); and a fault proxy in front of
// each plugin, so that a fault names the driver it hits. The kubelet and
// the attach/detach controller already go by the volume's driver. The
// first driver (Config's own fields) is laid out and named as in a
// cluster of one, so a run with one driver writes the timeline it always
// wrote; only with several do the CSI entries say which driver each call
// went to (trace.Entry's Driver).

// newDrivers makes the cluster's drivers from its configuration, the
// first first.
func (c *Cluster) newDrivers() {
	configs := append([]DriverConfig{c.cfg.FirstDriver()}, c.cfg.ExtraDrivers...)
	for i, dc := range configs {
		d := &driver{cfg: &c.cfg, dc: dc, root: c.root, rec: c.rec, loop: c.loop}
		if i > 0 {
			d.dir = []string{"drivers", strconv.Itoa(i)}
		}
		d.crashMidCall = c.crashMidCall
		c.drivers = append(c.drivers, d)
	}
	c.driver = c.drivers[0]
}

// startDriver starts d's controller plugin and asks the driver what it
// says of itself (askDriver); the node plugin the cluster asks starts
// while the controller plugin does.
func (c *Cluster) startDriver(ctx context.Context, d *driver) error {
	asked, err := d.startAsked(c.cfg.Nodes[0])
	if err != nil {
		return err
	}
	if _, err := d.startController(ctx); err != nil {
		d.stopAsked(asked)
		return err
	}
	return c.askDriver(ctx, d, asked)
}

// driverNamed is the driver a fault names (fault.Fault's Driver): the
// first one for "".
func (c *Cluster) driverNamed(name string) (*driver, error) {
	if name == "" {
		return c.driver, nil
	}
	for _, d := range c.drivers {
		if d.name() == name {
			return d, nil
		}
	}
	return nil, fmt.Errorf("there is no driver %q in this cluster (drivers: %v)", name, c.DriverNames())
}

// traceName is what the CSI entries of d's calls say of their driver:
// its name in a cluster of several drivers, nothing in a cluster of one.
func (c *Cluster) traceName(d *driver) string {
	if len(c.drivers) < 2 {
		return ""
	}
	return d.name()
}

// DriverNames are the names of the cluster's drivers, the first first.
func (c *Cluster) DriverNames() []string {
	names := make([]string, len(c.drivers))
	for i, d := range c.drivers {
		names[i] = d.name()
	}
	return names
}

// DriverInfoOf is what the driver of that name said of itself at the
// start, and whether the cluster runs it.
func (c *Cluster) DriverInfoOf(name string) (driverinfo.Info, bool) {
	i := slices.IndexFunc(c.drivers, func(d *driver) bool { return d.name() == name })
	if i < 0 {
		return driverinfo.Info{}, false
	}
	return c.drivers[i].info, true
}

// mountsNothing says whether a driver of the cluster mounts nothing (the
// mock, or a driver profile without realMounts): the kubelets then take
// every driver's word that a volume is mounted (kubelet.Config's
// SkipMountCheck), as they look for no mount of that one's, and a
// kubelet's checks are not per driver.
func (c *Cluster) mountsNothing() bool {
	return slices.ContainsFunc(c.drivers, func(d *driver) bool { return d.dc.Mock || d.dc.NoMounts })
}

// allPlugins are the plugins of every driver.
func (c *Cluster) allPlugins() []*plugin {
	var out []*plugin
	for _, d := range c.drivers {
		out = append(out, d.plugins...)
	}
	return out
}

// startExtraNodePlugins starts the node plugin of every extra driver on
// the node and registers each with the node's kubelet, as each driver's
// node-driver-registrar does, after the first driver's.
func (c *Cluster) startExtraNodePlugins(ctx context.Context, node string, parts *nodeParts) error {
	for _, d := range c.drivers[1:] {
		pl, err := d.startNode(ctx, node)
		if err != nil {
			return err
		}
		conn, err := c.clients.dial(pl.proxy.Endpoint(), fault.KubeletComponent(node), c.traceName(d))
		if err != nil {
			return err
		}
		pl.identity = conn.Identity
		parts.kubelet.AddDriver(d.name(), conn.Node)
		if err := parts.kubelet.RegisterDriver(ctx, d.name(), conn.Identity); err != nil {
			return err
		}
		parts.extra = append(parts.extra, pl)
	}
	return nil
}
