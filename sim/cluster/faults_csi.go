package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/csisim/csisim/drivers/endpoint"
	"github.com/csisim/csisim/drivers/faultproxy"
	"k8s.io/klog/v2"

	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/trace"
)

// The CSI-layer faults. Every plugin has a fault proxy in front of it
// (driver.start); a CSI fault is a rule in the proxies of the plugins it
// names, so the components see exactly what a misbehaving driver would
// show them — an error code, a late answer, no answer until their own
// timeout, which passes on the virtual clock. Driver faults act on the
// plugin behind the proxy: its process is killed, started again, or kept
// from registering.

// canInjectCSI says whether the simulator can inject a CSI or driver
// fault, before the run.
func (c *Cluster) canInjectCSI(f fault.Fault) error {
	d, err := c.driverNamed(f.Driver)
	if err != nil {
		return err
	}
	if f.Node != "" && c.nodes[f.Node] == nil {
		return fmt.Errorf("there is no node %q (nodes: %v)", f.Node, c.cfg.Nodes)
	}
	if f.Plugin == fault.Controller && f.Node != "" {
		return fmt.Errorf("%s: the controller plugin runs on no node; leave out node: or say plugin: node", f.Kind)
	}
	switch f.Kind {
	case fault.CSIError, fault.CSIDelay, fault.CSIHang, fault.CSILostAnswer, fault.DriverCrashMidCall:
		_, err := faultproxy.RuleFor(f)
		return err
	case fault.CSIHeal:
		return nil
	case fault.NodePluginMissing:
		if f.Node == "" {
			return fmt.Errorf("%s needs the node whose plugin is missing", f.Kind)
		}
		return nil
	case fault.DriverCrash:
		return nil
	case fault.DriverRestart:
		if f.LoseState && d.dc.Mock {
			return fault.Unsupported(f.Kind, backendName+" with the mock driver",
				"the mock keeps its volumes in memory shared by all plugins; restarting one without its state needs a driver process (run without --mock-driver)")
		}
		return nil
	}
	return fault.Unsupported(f.Kind, backendName, "not a CSI or driver fault")
}

// injectCSIFault adds (csi-error, csi-delay, csi-hang, csi-lost-answer,
// driver-crash-mid-call) or removes
// (csi-heal) fault rules in the proxies of the plugins the fault names.
func (c *Cluster) injectCSIFault(_ context.Context, f fault.Fault) error {
	if err := c.canInjectCSI(f); err != nil {
		return err
	}
	plugins := c.pluginsFor(f)
	if f.Kind == fault.CSIHeal {
		return c.healCSI(f, plugins)
	}
	rule, err := faultproxy.RuleFor(f)
	if err != nil {
		return err
	}
	c.faultRules++
	rule.ID = fmt.Sprintf("%s-%d", f.Kind, c.faultRules)
	c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: c.faultActor(), Verb: string(f.Kind), Object: csiFaultObject(f),
		Detail: "on " + pluginNames(plugins) + ": " + rule.String()})
	for _, pl := range plugins {
		if _, err := pl.proxy.AddRule(rule); err != nil {
			return fmt.Errorf("%s on %s: %w", f.Kind, pl.name, err)
		}
	}
	return nil
}

// healCSI removes the fault rules the heal selects (faultproxy.Heals).
func (c *Cluster) healCSI(f fault.Fault, plugins []*plugin) error {
	c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: c.faultActor(), Verb: string(f.Kind), Object: csiFaultObject(f),
		Detail: "on " + pluginNames(plugins)})
	for _, pl := range plugins {
		for _, r := range pl.proxy.Rules() {
			if faultproxy.Heals(f, r.Rule) {
				pl.proxy.RemoveRule(r.ID)
			}
		}
	}
	return nil
}

// pluginsFor lists the plugins a CSI or driver fault acts on, of the
// driver it names (the first one if none): the one its plugin and node
// name, or, without either, every plugin of the driver (a CSI fault's
// method decides which of them ever see a matching call).
func (c *Cluster) pluginsFor(f fault.Fault) []*plugin {
	d, err := c.driverNamed(f.Driver)
	if err != nil {
		return nil // canInjectCSI refused it first
	}
	var out []*plugin
	for _, pl := range d.plugins {
		switch {
		case f.Plugin != "" && pl.role != f.Plugin:
		case f.Node != "" && pl.node != f.Node:
		default:
			out = append(out, pl)
		}
	}
	return out
}

func pluginNames(plugins []*plugin) string {
	names := make([]string, len(plugins))
	for i, pl := range plugins {
		names[i] = pl.name
	}
	return strings.Join(names, ", ")
}

func csiFaultObject(f fault.Fault) string {
	o := f.CSI.Method
	if o == "" {
		o = "*"
	}
	if f.CSI.Volume != "" {
		o += " " + f.CSI.Volume
	}
	return o
}

// injectDriverFault carries out driver-crash, driver-restart and
// node-plugin-missing.
func (c *Cluster) injectDriverFault(ctx context.Context, f fault.Fault) error {
	if err := c.canInjectCSI(f); err != nil {
		return err
	}
	if f.Kind == fault.NodePluginMissing {
		f.Plugin = fault.Node
	}
	plugins := c.pluginsFor(f)
	if len(plugins) == 0 {
		return fmt.Errorf("%s: no plugin matches", f.Describe())
	}
	var errs []error
	for _, pl := range plugins {
		if pl.host != nil && slices.Contains(plugins, pl.host) && f.Kind != fault.NodePluginMissing {
			continue // the combined layout's controller plugin goes with its host
		}
		c.rec.Add(trace.Entry{Kind: trace.Fault, Actor: c.faultActor(), Verb: string(f.Kind), Object: pl.name})
		switch f.Kind {
		case fault.DriverCrash:
			errs = append(errs, c.crashPlugin(pl))
		case fault.DriverRestart:
			errs = append(errs, c.restartPlugin(ctx, pl, f.LoseState))
		case fault.NodePluginMissing:
			errs = append(errs, c.crashPlugin(pl), c.nodes[pl.node].kubelet.UnregisterDriver(ctx, pl.drv.name()))
		}
	}
	return errors.Join(errs...)
}

// crashPlugin kills the plugin's driver (SIGKILL for a process) and removes
// its socket, as a dead container's socket goes with its directory; calls
// in flight get Unavailable, later ones fail to connect. The proxy stays:
// it is the socket the callers know, as the kubelet keeps the plugin's
// registration while node-driver-registrar runs.
func (c *Cluster) crashPlugin(pl *plugin) error {
	if pl.host != nil {
		defer pl.proxy.InterruptParked()
		return c.crashPlugin(pl.host)
	}
	if pl.crashed {
		return nil
	}
	pl.crashed = true
	defer pl.proxy.InterruptParked()
	if pl.mockServer != nil {
		if err := pl.mockServer.Stop(); err != nil {
			return err
		}
		return c.waitProxiesDisconnected(pl)
	}
	if pl.process == nil {
		return fmt.Errorf("%s has no driver process", pl.name)
	}
	if err := pl.process.Kill(); err != nil {
		return fmt.Errorf("crashing %s: %w", pl.name, err)
	}
	socket, err := endpoint.SocketPath(pl.driverEndpoint)
	if err != nil {
		return err
	}
	if err := os.Remove(socket); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("crashing %s: removing its socket: %w", pl.name, err)
	}
	return c.waitProxiesDisconnected(pl)
}

// waitProxiesDisconnected waits until every proxy in front of the crashed
// driver (its own, and in the combined layout those of the plugins it
// hosts) has seen its connection to the driver end, so that the next call
// through any of them fails as a call to a dead driver does — it finds no
// socket — however late this machine let the proxy read the end.
func (c *Cluster) waitProxiesDisconnected(driver *plugin) error {
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.StartTimeout)
	defer cancel()
	for _, pl := range append([]*plugin{driver}, driver.drv.plugins...) {
		if (pl != driver && pl.host != driver) || pl.proxy == nil {
			continue
		}
		if err := pl.proxy.WaitDisconnected(ctx); err != nil {
			return fmt.Errorf("crashing %s: %w", driver.name, err)
		}
	}
	return nil
}

// restartPlugin starts the plugin's driver again (killing it first if it
// runs), with its state directory or, with loseState, an empty one; a
// node plugin then registers with its kubelet again, as a restarted plugin
// pod's node-driver-registrar does.
func (c *Cluster) restartPlugin(ctx context.Context, pl *plugin, loseState bool) error {
	if err := c.relaunch(ctx, pl, loseState); err != nil {
		return err
	}
	if d := pl.drv; len(d.connecting) > 0 && !d.controllerDown() {
		if err := c.startConnecting(d); err != nil {
			return err
		}
	}
	if pl.host != nil {
		pl = pl.host
	}
	if pl.role != fault.Node {
		return nil
	}
	parts := c.nodes[pl.node]
	if parts.kubelet == nil || parts.lost {
		return nil
	}
	// The plugin's registration socket appears again: the kubelet asks
	// for its name and node info and records them (unchanged, usually).
	regCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	if err := parts.kubelet.RegisterDriver(regCtx, pl.drv.name(), pl.identity); err != nil {
		// The kubelet could not record the plugin (the API server is
		// down, say): node-driver-registrar exits ("Registration process
		// failed with error: ..., restarting registration container") and
		// its container, restarted by the kubelet, registers again.
		klog.Background().V(2).Info("plugin registration failed; the registrar restarts", "plugin", pl.name, "err", err)
		c.registerAgain(pl)
	}
	return nil
}

// registrarRestartDelay is when a node-driver-registrar that exited is
// running again: the kubelet's first container restart back-off, 10 s
// (kubernetes pkg/kubelet/kubelet.go, backOffPeriod). The real back-off
// doubles on each further exit; here each retry waits the first one.
const registrarRestartDelay = 10 * time.Second

// registerAgain registers the node plugin pl with its kubelet every
// registrarRestartDelay until that succeeds, as a restarted
// node-driver-registrar does, unless the plugin or its node is gone
// meanwhile.
func (c *Cluster) registerAgain(pl *plugin) {
	var stop func()
	stop = c.loop.Every(registrarRestartDelay, func(ctx context.Context) {
		parts := c.nodes[pl.node]
		if pl.crashed || parts == nil || parts.kubelet == nil || parts.lost {
			stop()
			return
		}
		regCtx, cancel := context.WithTimeout(ctx, time.Minute)
		defer cancel()
		if err := parts.kubelet.RegisterDriver(regCtx, pl.drv.name(), pl.identity); err == nil {
			stop()
		}
	})
}

// relaunch kills the plugin's driver if it runs and starts it again, with
// its state directory or, with loseState, an empty one, and waits until
// the proxies in front of it reach it.
func (c *Cluster) relaunch(ctx context.Context, pl *plugin, loseState bool) error {
	if pl.host != nil {
		if err := c.relaunch(ctx, pl.host, loseState); err != nil {
			return err
		}
		connCtx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
		defer cancel()
		return pl.proxy.WaitConnected(connCtx)
	}
	if err := c.crashPlugin(pl); err != nil {
		return err
	}
	if loseState {
		if pl.vars.StateDir == "" {
			return fmt.Errorf("%s keeps no state directory", pl.name)
		}
		if err := os.RemoveAll(pl.vars.StateDir); err != nil {
			return fmt.Errorf("restarting %s without its state: %w", pl.name, err)
		}
		if err := os.MkdirAll(pl.vars.StateDir, 0o750); err != nil {
			return fmt.Errorf("restarting %s without its state: %w", pl.name, err)
		}
	}
	if err := pl.drv.startPlugin(ctx, pl); err != nil {
		return fmt.Errorf("restarting %s: %w", pl.name, err)
	}
	pl.crashed = false
	connCtx, cancelConn := context.WithTimeout(ctx, c.cfg.StartTimeout)
	defer cancelConn()
	if err := pl.proxy.WaitConnected(connCtx); err != nil {
		return fmt.Errorf("restarting %s: %w", pl.name, err)
	}
	return nil
}

// crashMidCall is the Crash of pl's proxy, which a driver-crash-mid-call
// rule calls once the driver has answered: the driver dies and is started
// again with its state, as the kubelet restarts a crashed container — at
// once after a first crash; its CrashLoopBackOff delays only the restarts
// after that (kubernetes pkg/kubelet/kuberuntime/kuberuntime_manager.go,
// doBackOff). The plugin does not register again: node-driver-registrar, a
// container of its own, kept the registration. It runs while the caller's
// job waits for its call, so the virtual clock stands still meanwhile.
func (c *Cluster) crashMidCall(pl *plugin) error {
	driver := pl
	if pl.host != nil {
		driver = pl.host
	}
	if driver.crashed || (driver.role == fault.Node && c.nodes[driver.node] != nil && c.nodes[driver.node].lost) {
		return fmt.Errorf("%s is not running: nothing to crash", driver.name)
	}
	// In the combined layout the controller plugin's proxy is in front
	// of this driver too: its held calls are cut off as well, and it must
	// reach the driver again before anyone calls.
	var hosted []*plugin
	for _, other := range driver.drv.plugins {
		if other.host == driver {
			hosted = append(hosted, other)
			other.proxy.InterruptParked()
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.StartTimeout)
	defer cancel()
	if err := c.relaunch(ctx, driver, false); err != nil {
		return err
	}
	for _, other := range hosted {
		if err := other.proxy.WaitConnected(ctx); err != nil {
			return fmt.Errorf("restarting %s: %w", other.name, err)
		}
	}
	return nil
}
