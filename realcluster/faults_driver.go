package realcluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/trace"
)

// The driver faults on the real control plane act on csisim's driver
// processes, which this cluster runs itself as the simulator does: the
// real sidecars see their controller plugin go (Unavailable through their
// proxies) and come back; a node plugin that goes is unregistered from its
// simulated kubelet, and registers again when it returns.

// driverPlugin is one plugin a driver fault acts on.
type driverPlugin struct {
	mode string // controller or node
	node string // "" for the controller plugin
}

func (p driverPlugin) process() string {
	if p.mode == "controller" {
		return "driver-controller"
	}
	return "driver-node-" + p.node
}

func (p driverPlugin) String() string {
	if p.mode == "controller" {
		return "controller plugin"
	}
	return "node plugin on " + p.node
}

// canInjectDriver says whether the fault names plugins this cluster has.
func (c *Cluster) canInjectDriver(f fault.Fault) error {
	if f.Node != "" && !slices.Contains(c.cfg.Nodes, f.Node) {
		return fmt.Errorf("there is no node %q (nodes: %v)", f.Node, c.cfg.Nodes)
	}
	if f.Kind == fault.NodePluginMissing && f.Node == "" {
		return fmt.Errorf("%s needs the node whose plugin is missing", f.Kind)
	}
	return nil
}

// driverPlugins are the plugins a driver fault names: the controller
// plugin, a node's, or every node's.
func (c *Cluster) driverPlugins(f fault.Fault) []driverPlugin {
	if f.Plugin == fault.Controller {
		return []driverPlugin{{mode: "controller"}}
	}
	var out []driverPlugin
	for _, node := range c.cfg.Nodes {
		if f.Node == "" || f.Node == node {
			out = append(out, driverPlugin{mode: "node", node: node})
		}
	}
	return out
}

// injectDriverFault carries out driver-crash, driver-restart and
// node-plugin-missing.
func (c *Cluster) injectDriverFault(ctx context.Context, f fault.Fault) error {
	if err := c.canInjectDriver(f); err != nil {
		return err
	}
	var errs []error
	for _, p := range c.driverPlugins(f) {
		c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: "scenario", Verb: string(f.Kind), Object: p.String()})
		switch f.Kind {
		case fault.DriverCrash:
			errs = append(errs, c.crashPlugin(p))
		case fault.DriverRestart:
			errs = append(errs, c.restartPlugin(ctx, p, f.LoseState))
		case fault.NodePluginMissing:
			errs = append(errs, c.crashPlugin(p))
			if n := c.nodes[p.node]; n != nil && n.real != nil {
				// The real kubelet's plugin watcher unregisters the
				// driver when the registration socket goes.
				errs = append(errs, c.stopRegistrar(p.node))
			}
			if n := c.nodes[p.node]; n != nil && n.kubelet != nil {
				errs = append(errs, n.kubelet.UnregisterDriver(ctx, c.cfg.DriverName))
			}
		}
	}
	return errors.Join(errs...)
}

// crashPlugin kills the plugin's process (if it runs) and removes its
// socket, as a dead container's goes with it.
func (c *Cluster) crashPlugin(p driverPlugin) error {
	i := slices.IndexFunc(c.procs, func(np namedProcess) bool { return np.name == p.process() })
	if i < 0 {
		return nil // crashed already
	}
	proc := c.procs[i]
	c.procs = slices.Delete(c.procs, i, i+1)
	if err := proc.Kill(); err != nil {
		return fmt.Errorf("crashing the %s: %w", p, err)
	}
	if err := os.Remove(c.pluginSocket(p.mode, p.node)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("crashing the %s: removing its socket: %w", p, err)
	}
	return nil
}

// restartPlugin starts the plugin again, killing it first if it runs,
// with its state directory or an empty one; a node plugin registers with
// its kubelet again.
func (c *Cluster) restartPlugin(ctx context.Context, p driverPlugin, loseState bool) error {
	if err := c.relaunch(ctx, p, loseState); err != nil {
		return err
	}
	n := c.nodes[p.node]
	if p.mode != "node" || n == nil || n.lost || n.kubelet == nil {
		return nil
	}
	return n.kubelet.RegisterDriver(ctx, c.cfg.DriverName, n.identity)
}

// relaunch kills the plugin's process if it runs and starts it again,
// with its state directory or an empty one, and waits until the proxies
// in front of it reach it.
func (c *Cluster) relaunch(ctx context.Context, p driverPlugin, loseState bool) error {
	if err := c.crashPlugin(p); err != nil {
		return err
	}
	if loseState {
		dir := c.pluginStateDir(p.mode, p.node)
		if err := os.RemoveAll(dir); err != nil {
			return fmt.Errorf("restarting the %s without its state: %w", p, err)
		}
	}
	if _, err := c.startDriver(ctx, p.mode, p.node); err != nil {
		return fmt.Errorf("restarting the %s: %w", p, err)
	}
	// The proxies in front of it reach it again before anyone calls.
	connCtx, cancel := context.WithTimeout(ctx, c.driverTimeout())
	defer cancel()
	for _, proxy := range c.proxies {
		if proxy.Target() != "unix://"+c.pluginSocket(p.mode, p.node) {
			continue
		}
		if err := proxy.WaitConnected(connCtx); err != nil {
			return fmt.Errorf("restarting the %s: %w", p, err)
		}
	}
	return nil
}

// crashHook is the Crash of a proxy in front of plugin p: a
// driver-crash-mid-call rule calls it once the driver has answered, from
// the proxy's goroutine, and the real sidecar or the kubelet waiting for
// the answer sees the connection go. The driver is started again at once
// with its state, as the kubelet restarts a crashed container the first
// time; a node plugin does not register again (node-driver-registrar, a
// container of its own, kept the registration).
func (c *Cluster) crashHook(p driverPlugin) func() error {
	return func() error {
		c.driverMu.Lock()
		defer c.driverMu.Unlock()
		if c.closing {
			return fmt.Errorf("the cluster is closing: the %s stays down", p)
		}
		if !slices.ContainsFunc(c.procs, func(np namedProcess) bool { return np.name == p.process() }) {
			return fmt.Errorf("the %s is not running: nothing to crash", p)
		}
		if n := c.nodes[p.node]; n != nil && n.lost {
			return fmt.Errorf("node %s is lost: its plugin stays down", p.node)
		}
		ctx, cancel := context.WithTimeout(context.Background(), c.driverTimeout())
		defer cancel()
		return c.relaunch(ctx, p, false)
	}
}
