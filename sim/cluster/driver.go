package cluster

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"time"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/drivers/faultproxy"
	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/drivers/mock"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/runroot"
	"github.com/csisim/csisim/sim/loop"
	"github.com/csisim/csisim/trace"
)

// driver is one CSI driver of the cluster: its controller plugin and each
// node's, the driver processes (or mock servers) that serve them, and the
// fault proxies in front of them, through which every component reaches
// them. It starts and stops them; the faults act on them (faults_csi.go).
// A cluster runs one, or several (drivers.go).
type driver struct {
	cfg *Config // the cluster's: nodes, zones, seed, timeouts, logs
	// dc is the driver's command, layout and name; DriverName becomes
	// the name the driver answers GetPluginInfo with once asked.
	dc DriverConfig
	// dir is where the driver's own files go under the run's root:
	// nothing for the first driver, drivers/N for the Nth extra one.
	dir  []string
	root *runroot.Root
	// info is what the driver said of itself at the start (driverinfo.go).
	info driverinfo.Info
	rec  *trace.Recorder
	loop *loop.Loop // the proxies park held calls on its clock

	plugins   []*plugin         // the controller plugin, then each node's
	processes []*launch.Process // every driver process started, to stop them all
	backend   *mock.Backend     // the mock plugins' shared storage
	exits     exits             // processes that died unexpectedly (exits.go)
	// crashMidCall kills a plugin's driver and starts it again, for its
	// proxy's crash rules (driver-crash-mid-call).
	crashMidCall func(*plugin) error
	// connecting are the sidecars restarted while the controller plugin
	// was down, in the order they restarted: each waits to connect, and
	// starts once the plugin is back (faults_controlplane.go).
	connecting []string
}

// start starts one driver plugin — csisim's driver, any driver from a
// template, or the mock — with a fault proxy in front of it, and returns
// it; the proxy's endpoint is where the components find the plugin.
func (d *driver) start(ctx context.Context, role fault.Plugin, node string) (*plugin, error) {
	pl := &plugin{drv: d, role: role, node: node, name: "controller plugin" + d.of()}
	// The proxy listens where the components look for the plugin: for a
	// node plugin, where node-driver-registrar's driver socket lives on a
	// real node. The driver listens on a socket of its own beside it, laid
	// out as realcluster lays out its plugins, so that the paths in
	// messages compare (csisim diff).
	listen := d.path("controller", "faultproxy.sock")
	driverSocket := d.path("controller", "csi.sock")
	if role == fault.Node {
		pl.name = "node plugin" + d.of() + " on " + node
		listen = d.root.Path("nodes", node, "kubelet", "plugins", d.dc.DriverName, "csi.sock")
		driverSocket = d.path("nodes", node, "driver", "csi.sock")
	}
	d.plugins = append(d.plugins, pl)
	for _, socket := range []string{listen, driverSocket} {
		if err := checkSocket(node, socket); err != nil {
			return nil, err
		}
	}
	for _, dir := range []string{filepath.Dir(listen), filepath.Dir(driverSocket), d.path("storage")} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return nil, fmt.Errorf("preparing %s: %w", dir, err)
		}
	}
	pl.driverEndpoint = "unix://" + driverSocket
	if err := d.startServer(ctx, pl); err != nil {
		return nil, err
	}
	return pl, d.startProxy(ctx, pl, listen)
}

// startAsked starts a node plugin of node's, apart from the one its
// kubelet uses, for the cluster to ask what the node service says of
// itself (askNode): with a socket and a state directory of its own, no
// fault proxy, and its output in the driver log. A process is not waited
// for here: it starts while the controller plugin does (askNode waits).
func (d *driver) startAsked(node string) (*plugin, error) {
	pl := &plugin{drv: d, role: fault.Node, node: node, name: "node plugin" + d.of() + " asked at start"}
	socket := d.path("asked", "csi.sock")
	if err := os.MkdirAll(filepath.Dir(socket), 0o750); err != nil {
		return nil, fmt.Errorf("preparing %s: %w", filepath.Dir(socket), err)
	}
	pl.driverEndpoint = "unix://" + socket
	if d.dc.Mock {
		pl.mock = &mock.Config{Name: d.dc.DriverName, NodeID: node, Mode: mock.ModeNode, Backend: d.mockBackend()}
		return pl, d.startPlugin(context.Background(), pl) // a mock's server is ready once started
	}
	if err := d.prepareProcess(pl); err != nil {
		return nil, err
	}
	pl.vars.StateDir = d.path("asked", "state")
	if err := os.MkdirAll(pl.vars.StateDir, 0o750); err != nil {
		return nil, fmt.Errorf("preparing %s: %w", pl.vars.StateDir, err)
	}
	return pl, d.spawn(pl)
}

// stopAsked stops the plugin startAsked started, and forgets its process
// once it is gone (else stop stops it again at the end).
func (d *driver) stopAsked(pl *plugin) {
	if pl.mockServer != nil {
		_ = pl.mockServer.Stop()
	}
	if pl.process != nil && pl.process.Stop(5*time.Second) == nil {
		d.processes = slices.DeleteFunc(d.processes, func(p *launch.Process) bool { return p == pl.process })
	}
}

// startServer starts what serves the plugin: in the combined layout the
// controller plugin is the first node's driver, which runs already;
// otherwise the mock's server or a driver process.
func (d *driver) startServer(ctx context.Context, pl *plugin) error {
	if host := d.controllerHost(pl.role); host != nil {
		pl.host, pl.driverEndpoint = host, host.driverEndpoint
		pl.name = "controller plugin" + d.of() + " (the node plugin on " + host.node + ")"
		return nil
	}
	if d.dc.Mock {
		m := mock.ModeController
		if pl.role == fault.Node {
			m = mock.ModeNode
		}
		if d.dc.Layout == LayoutCombined && pl.node == d.cfg.Nodes[0] {
			m = mock.ModeAll
		}
		pl.mock = &mock.Config{Name: d.dc.DriverName, NodeID: pl.node, Mode: m, Backend: d.mockBackend()}
	} else if err := d.prepareProcess(pl); err != nil {
		return err
	}
	return d.startPlugin(ctx, pl)
}

// startProxy starts the plugin's fault proxy on listen and waits until it
// reaches the driver.
func (d *driver) startProxy(ctx context.Context, pl *plugin, listen string) error {
	proxyName := "faultproxy:" + d.proxyPrefix() + "controller"
	if pl.role == fault.Node {
		proxyName = "faultproxy:" + d.proxyPrefix() + pl.node
	}
	proxy, err := faultproxy.Start(context.Background(), faultproxy.Config{Name: proxyName, Listen: "unix://" + listen,
		Target: pl.driverEndpoint, Seed: d.cfg.Seed, NodeID: pl.node, Recorder: d.rec, Park: d.loop.Park,
		Crash: func() error { return d.crashMidCall(pl) }})
	if err != nil {
		return fmt.Errorf("%s: %w", pl.name, err)
	}
	pl.proxy = proxy
	// The first call must not meet a connection still being made (it
	// would fail as if the driver were down): wait, as
	// node-driver-registrar and the sidecars wait for the driver's socket.
	connCtx, cancel := context.WithTimeout(ctx, d.cfg.StartTimeout)
	defer cancel()
	if err := proxy.WaitConnected(connCtx); err != nil {
		return fmt.Errorf("%s: %w", pl.name, err)
	}
	return nil
}

// prepareProcess sets up how to run the plugin as a process: its command
// template, its state directory and the values of its placeholders.
func (d *driver) prepareProcess(pl *plugin) error {
	bin, err := d.csisimBinary()
	if err != nil {
		return err
	}
	tmpl := d.dc.Driver
	if tmpl.Path == "" {
		tmpl = launch.OurDriver(bin, string(pl.role), d.dc.DriverName)
		tmpl.Args = append(tmpl.Args, d.dc.DriverArgs...)
	} else if pl.role == fault.Controller && d.dc.ControllerDriver.Path != "" {
		tmpl = d.dc.ControllerDriver
	}
	zone := d.cfg.Zones[pl.node]
	if zone != "" && pl.role == fault.Node {
		tmpl.Args = append(slices.Clip(tmpl.Args), d.zoneArgs()...)
	}
	stateDir := d.path("controller", "state")
	// A third-party driver usually serves every service in one process
	// and insists on a node ID even as the controller plugin.
	nodeID := controllerNodeID
	if pl.role == fault.Node {
		stateDir, nodeID = d.path("nodes", pl.node, "driver-state"), pl.node
	}
	// The driver's temporary files (mount-utils makes some as it starts)
	// go in the run's root too, so that a driver killed at any moment
	// leaves none outside it.
	tmpl.Env = append(slices.Clip(tmpl.Env), "TMPDIR="+d.root.Path("tmp"))
	for _, dir := range []string{stateDir, d.root.Path("tmp")} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("preparing %s: %w", dir, err)
		}
	}
	pl.template = tmpl
	pl.vars = launch.Vars{Endpoint: pl.driverEndpoint, NodeID: nodeID, StateDir: stateDir, Root: d.path("storage"),
		DriverName: d.dc.DriverName, CSISim: bin}
	if pl.role == fault.Node {
		pl.vars.Zone = zone
	}
	return nil
}

// startPlugin starts the plugin's driver — its process, or the mock's
// server — and waits until it is ready.
func (d *driver) startPlugin(ctx context.Context, pl *plugin) error {
	if pl.mock != nil {
		m, err := mock.New(*pl.mock)
		if err != nil {
			return err
		}
		srv, err := m.Start(pl.driverEndpoint)
		if err != nil {
			return err
		}
		pl.mockServer = srv
		return nil
	}
	return d.launch(ctx, pl)
}

// launch starts the plugin's driver process and waits until it is ready.
func (d *driver) launch(ctx context.Context, pl *plugin) error {
	if err := d.spawn(pl); err != nil {
		return err
	}
	return d.waitReady(ctx, pl)
}

// spawn starts the plugin's driver process, and watches it.
func (d *driver) spawn(pl *plugin) error {
	p, err := launch.Start(context.Background(), "driver "+pl.name, pl.template, pl.vars, d.cfg.DriverLog)
	if err != nil {
		return err
	}
	d.processes = append(d.processes, p)
	if err := d.watch(p, pl.name); err != nil {
		return err
	}
	pl.process = p
	return nil
}

// waitReady waits until the plugin's driver process is ready.
func (d *driver) waitReady(ctx context.Context, pl *plugin) error {
	readyCtx, cancel := context.WithTimeout(ctx, d.cfg.StartTimeout)
	defer cancel()
	if err := pl.process.WaitReady(readyCtx); err != nil {
		hint := ""
		select {
		case <-pl.process.Exited():
		default: // alive, and not ready
			hint = socketHint(pl.driverEndpoint)
		}
		return fmt.Errorf("driver %s did not become ready: %w%s", pl.name, err, hint)
	}
	return nil
}

// socketHint says, of a running driver that did not become ready, that it never
// made its socket, when so: then it listens elsewhere, or not yet, and
// the likeliest cause is that its command does not pass {endpoint} the
// way the driver takes it.
func socketHint(endpoint string) string {
	path := strings.TrimPrefix(endpoint, "unix://")
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		return ""
	}
	return fmt.Sprintf("\nthe driver never made its socket %s: does its command pass {endpoint} as the driver takes its endpoint "+
		"(a flag such as --endpoint={endpoint}, or env CSI_ENDPOINT={endpoint})?", path)
}

// mockBackend is the storage all mock plugins share, as the controller
// and nodes of a real driver share its storage.
func (d *driver) mockBackend() *mock.Backend {
	if d.backend == nil {
		d.backend = mock.NewBackend(0)
	}
	return d.backend
}

// startController starts the controller plugin; in the combined layout
// it starts the first node's plugin first, whose driver the controller
// plugin is.
func (d *driver) startController(ctx context.Context) (*plugin, error) {
	if d.dc.Layout == LayoutCombined {
		if _, err := d.start(ctx, fault.Node, d.cfg.Nodes[0]); err != nil {
			return nil, err
		}
	}
	return d.start(ctx, fault.Controller, "")
}

// startNode starts the node's plugin, unless it runs already (the first
// node's, in the combined layout), and returns it.
func (d *driver) startNode(ctx context.Context, node string) (*plugin, error) {
	if pl := d.nodePlugin(node); pl != nil && pl.proxy != nil {
		return pl, nil
	}
	return d.start(ctx, fault.Node, node)
}

// controllerHost is, for the controller plugin of the combined layout,
// the first node's plugin, whose driver it is; nil otherwise.
func (d *driver) controllerHost(role fault.Plugin) *plugin {
	if role != fault.Controller || d.dc.Layout != LayoutCombined {
		return nil
	}
	return d.nodePlugin(d.cfg.Nodes[0])
}

// controllerPlugin is the driver's controller plugin.
func (d *driver) controllerPlugin() *plugin {
	for _, pl := range d.plugins {
		if pl.role == fault.Controller {
			return pl
		}
	}
	return nil
}

// controllerDown says whether the controller plugin's driver is dead
// (driver-crash, or node-plugin-missing of the node plugin hosting it)
// and nothing started it again.
func (d *driver) controllerDown() bool {
	pl := d.controllerPlugin()
	return pl != nil && (pl.crashed || pl.host != nil && pl.host.crashed)
}

// nodePlugin is the node's plugin, if it was started.
func (d *driver) nodePlugin(node string) *plugin {
	for _, pl := range d.plugins {
		if pl.role == fault.Node && pl.node == node {
			return pl
		}
	}
	return nil
}

// zoneArgs are the arguments that tell a node plugin its zone.
func (d *driver) zoneArgs() []string {
	if d.dc.Driver.Path == "" && len(d.dc.ZoneArgs) == 0 {
		return []string{"--zone", "{zone}"}
	}
	return d.dc.ZoneArgs
}

// csisimBinary is the csisim binary: Config.DriverBinary, else this
// executable.
func (d *driver) csisimBinary() (string, error) {
	if d.cfg.DriverBinary != "" {
		return d.cfg.DriverBinary, nil
	}
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("finding the csisim binary for the driver: %w", err)
	}
	return exe, nil
}

// path is a path under the driver's own directory of the run's root.
func (d *driver) path(elem ...string) string {
	return d.root.Path(append(slices.Clip(d.dir), elem...)...)
}

// name is the driver's name: the one it answers GetPluginInfo with, once
// asked.
func (d *driver) name() string { return d.dc.DriverName }

// extra says whether the driver is one of Config.ExtraDrivers.
func (d *driver) extra() bool { return len(d.dir) > 0 }

// of names an extra driver after a plugin's role in messages: " of
// file.csisim.io"; nothing for the first driver, whose messages read as
// in a cluster of one.
func (d *driver) of() string {
	if !d.extra() {
		return ""
	}
	return " of " + d.name()
}

// proxyPrefix starts the names of an extra driver's fault proxies, the
// actors of the faults they inject: "file.csisim.io:".
func (d *driver) proxyPrefix() string {
	if !d.extra() {
		return ""
	}
	return d.name() + ":"
}

// controllerEndpoint is the fault proxy in front of the controller
// plugin, where the sidecars reach it.
func (d *driver) controllerEndpoint() string {
	return "unix://" + d.path("controller", "faultproxy.sock")
}

// stop stops every proxy, mock server and driver process.
func (d *driver) stop() error {
	var errs []error
	for _, pl := range d.plugins {
		if pl.proxy != nil {
			errs = append(errs, pl.proxy.Stop())
		}
		if pl.mockServer != nil {
			errs = append(errs, pl.mockServer.Stop())
		}
	}
	for _, p := range d.processes {
		errs = append(errs, p.Stop(5*time.Second))
	}
	return errors.Join(errs...)
}
