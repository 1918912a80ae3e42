package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"k8s.io/client-go/kubernetes"
	"k8s.io/klog/v2"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/attacher"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/daemonset"
	"github.com/csisim/csisim/sim/deployment"
	"github.com/csisim/csisim/sim/ephemeral"
	"github.com/csisim/csisim/sim/expand"
	"github.com/csisim/csisim/sim/healthmonitor"
	"github.com/csisim/csisim/sim/loop"
	"github.com/csisim/csisim/sim/nodelifecycle"
	"github.com/csisim/csisim/sim/provisioner"
	"github.com/csisim/csisim/sim/pvcontroller"
	"github.com/csisim/csisim/sim/replicaset"
	"github.com/csisim/csisim/sim/resizer"
	"github.com/csisim/csisim/sim/scheduler"
	"github.com/csisim/csisim/sim/snapshotcontroller"
	"github.com/csisim/csisim/sim/snapshotter"
	"github.com/csisim/csisim/sim/statefulset"
	"github.com/csisim/csisim/timing"
)

// componentSpec is a row of the table the simulated control plane is
// built from: a component by the user agent it writes as, what the cluster
// gives it, and its package's Start, which declares its workers, its
// periodic jobs and its start-up checks.
type componentSpec struct {
	// name is the user agent, the actor of its writes and CSI calls, and
	// the name Config.Without and the API faults take.
	name string
	// process is the real process it is part of, when that holds several
	// (kube-controller-manager): a restart of the process restarts them
	// together.
	process string
	// binary, for a component that is a process of its own, is the real
	// one's binary, which its clients name first in their user agent: the
	// API server's field manager of its writes.
	binary string
	needs  needs
	// check is a sidecar's start-up check; its Start runs only if it
	// passed.
	check controller.Check
	start controller.Start
	// optIn, if set, says whether a cluster runs the component at all.
	optIn func(Config) bool
}

// binaryName is the binary of the real process the component is, or is
// part of.
func (s *componentSpec) binaryName() string {
	if s.process != "" {
		return s.process
	}
	return s.binary
}

// needs says what a component gets besides a client and informers of the
// core kinds.
type needs uint8

const (
	appsInformers            needs = 1 << iota // informers of the apps kinds too
	snapshotClient                             // a clientset of the snapshot kinds
	snapshotInformers                          // informers of the snapshot kinds too
	driverConn                                 // its own connection to the controller plugin
	attributesClassInformers                   // an informer of the VolumeAttributesClasses too
	daemonSetInformers                         // an informer of the DaemonSets too
)

// kubeControllerManager is the process of the controllers it runs.
const kubeControllerManager = "kube-controller-manager"

// controlPlane is the table, in the order the components start. The order
// is part of a run's determinism: it is the order in which the loop holds
// the components' workers and timers, among which the seed chooses.
var controlPlane = []componentSpec{
	{name: "persistentvolume-binder", process: kubeControllerManager, start: pvcontroller.Start},
	{name: "attachdetach-controller", process: kubeControllerManager, start: attachdetach.Start},
	{name: "default-scheduler", binary: "kube-scheduler", needs: appsInformers, start: scheduler.Start},
	{name: "external-provisioner", binary: "csi-provisioner", needs: driverConn | snapshotClient, check: provisioner.Check, start: provisioner.Start},
	{name: "node-controller", process: kubeControllerManager, start: nodelifecycle.Start},
	{name: "external-attacher", binary: "csi-attacher", needs: driverConn, check: attacher.Check, start: attacher.Start},
	{name: "expand-controller", process: kubeControllerManager, start: expand.Start},
	{name: ephemeral.Component, process: kubeControllerManager, start: ephemeral.Start},
	{name: "statefulset-controller", process: kubeControllerManager, needs: appsInformers, start: statefulset.Start},
	{name: "replicaset-controller", process: kubeControllerManager, needs: appsInformers, start: replicaset.Start},
	{name: "deployment-controller", process: kubeControllerManager, needs: appsInformers, start: deployment.Start},
	{name: "daemonset-controller", process: kubeControllerManager, needs: appsInformers | daemonSetInformers, start: daemonset.Start,
		optIn: func(cfg Config) bool { return cfg.DaemonSets }},
	{name: "external-resizer", binary: "csi-resizer", needs: driverConn | attributesClassInformers, check: resizer.Check, start: resizer.Start},
	{name: snapshotcontroller.Component, binary: "snapshot-controller", needs: snapshotClient | snapshotInformers, start: snapshotcontroller.Start},
	{name: "csi-snapshotter", binary: "csi-snapshotter", needs: driverConn | snapshotClient | snapshotInformers, check: snapshotter.Check, start: snapshotter.Start},
	{name: "external-health-monitor", binary: "csi-external-health-monitor-controller", needs: driverConn, check: healthmonitor.Check, start: healthmonitor.Start,
		optIn: func(cfg Config) bool {
			return cfg.HealthMonitor || cfg.Deploy != nil && cfg.Deploy.Sidecar("csi-external-health-monitor-controller") != nil
		}},
}

// checkOrder is the order in which the sidecars with a start-up check ask
// the driver, all before any component starts, as the sidecar containers
// start beside their driver before the control plane acts on it. A fixed
// order keeps the calls of a start the same from run to run.
var checkOrder = []string{"csi-snapshotter", "external-resizer", "external-provisioner", "external-attacher", "external-health-monitor"}

// spec is the table's row of the component named name, or nil.
func spec(name string) *componentSpec {
	for i := range controlPlane {
		if controlPlane[i].name == name {
			return &controlPlane[i]
		}
	}
	return nil
}

// startControlPlane asks the first driver its name, as the sidecars do,
// and lets the sidecars with a start-up check ask it what they need to
// know; then it starts every component of the table that is not left out
// and has passed its check, each with its own clients and informers as
// the real processes have. Then each extra driver gets its own sidecars
// (startSidecars).
func (c *Cluster) startControlPlane() error {
	if err := c.askDriverName(c.driver); err != nil {
		return err
	}
	c.cfg.DriverName = c.driver.name()
	if err := c.startComponents(c.driver, func(s *componentSpec) bool {
		return !slices.Contains(c.cfg.Without, s.name) && (s.optIn == nil || s.optIn(c.cfg)) && c.sidecarDown(s, c.driver) == ""
	}); err != nil {
		return err
	}
	for _, d := range c.drivers[1:] {
		if err := c.askDriverName(d); err != nil {
			return err
		}
		if err := c.startComponents(d, func(s *componentSpec) bool { return s.needs&driverConn != 0 && (s.optIn == nil || s.optIn(c.cfg)) }); err != nil {
			return err
		}
	}
	return nil
}

// startComponents starts the rows of the table that run says run, with
// the sidecars among them serving driver d: first the sidecars with a
// start-up check check, in checkOrder, then each starts in the table's
// order.
func (c *Cluster) startComponents(d *driver, run func(*componentSpec) bool) error {
	checked := map[string]*controller.Driver{}
	procs := map[string]*process{}
	var err error
	for _, name := range checkOrder {
		if s := spec(name); run(s) {
			procs[name] = &process{name: name}
			if checked[name], err = c.check(s, procs[name], d); err != nil {
				return err
			}
		}
	}
	for i := range controlPlane {
		s := &controlPlane[i]
		if !run(s) {
			continue
		}
		drv, ok := checked[s.name]
		p := procs[s.name]
		if !ok {
			p = &process{name: s.name}
			if drv, err = c.check(s, p, d); err != nil {
				return err
			}
		}
		if err := c.startComponent(s, c.componentKey(s.name, d), p, drv, c.sidecarFlags(s, d)); err != nil {
			return err
		}
	}
	return nil
}

// componentKey names a running component in the registry and its
// informers: its user agent, and for an extra driver's sidecar the
// driver's name too ("external-provisioner/file.csisim.io"), which the
// API faults and watch-drop do not name. Its writes and CSI calls are
// its user agent's, as each driver's real sidecars write under the same
// one.
func (c *Cluster) componentKey(name string, d *driver) string {
	if d == nil || !d.extra() {
		return name
	}
	return name + "/" + d.name()
}

// check runs the start-up check of s, if it has one, and returns its
// driver (driverOf) as the check found it; nil if the component exits at
// start, as a cluster whose sidecar exits at start goes on without it.
func (c *Cluster) check(s *componentSpec, p *process, d *driver) (*controller.Driver, error) {
	drv, err := c.driverOf(s, p, d)
	if err != nil || s.check == nil {
		return drv, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.StartTimeout)
	defer cancel()
	err = s.check(ctx, drv)
	if errors.Is(err, controller.ErrExitsAtStart) {
		klog.Background().V(2).Info("component not started", "component", s.name, "err", err)
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("%s%s: %w", s.name, d.of(), err)
	}
	return drv, nil
}

// driverOf is the driver d a sidecar serves, over a connection of its
// process's own to d's controller plugin; nil for a component that talks
// to no driver.
func (c *Cluster) driverOf(s *componentSpec, p *process, d *driver) (*controller.Driver, error) {
	if s.needs&driverConn == 0 {
		return nil, nil
	}
	conn, err := c.clients.dialOf(d.controllerEndpoint(), c.traceName(d), p)
	if err != nil {
		return nil, err
	}
	return &controller.Driver{Name: d.name(), Identity: conn.Identity, Controller: conn.Controller, GroupController: conn.GroupController, Node: conn.Node}, nil
}

// askDriverName asks d's controller plugin for its name as the sidecars
// that go by it ask when they start, the external-provisioner and the
// external-attacher: that name, not a flag, is the provisioner and
// attacher name, and the kubelet's plugin directory. They ask also when
// left out, for the cluster's sake.
func (c *Cluster) askDriverName(d *driver) error {
	var name string
	for _, actor := range namedByDriver {
		conn, err := c.clients.dial(d.controllerEndpoint(), actor, c.traceName(d))
		if err != nil {
			return err
		}
		if name, err = c.askName(conn); err != nil {
			return err
		}
	}
	d.dc.DriverName = name
	return nil
}

// namedByDriver are the sidecars that ask the driver its name as they
// start.
var namedByDriver = []string{"external-provisioner", "external-attacher"}

// askName asks the controller plugin its name over conn.
func (c *Cluster) askName(conn *csiclient.Conn) (string, error) {
	ctx, cancel := csiclient.WithTimeout(context.Background(), c.cfg.StartTimeout)
	defer cancel()
	info, err := conn.Identity.GetPluginInfo(ctx, &csi.GetPluginInfoRequest{})
	if err != nil {
		return "", fmt.Errorf("controller plugin: GetPluginInfo: %w", err)
	}
	if info.GetName() == "" {
		return "", errors.New("controller plugin: GetPluginInfo answered an empty name")
	}
	return info.GetName(), nil
}

// startComponent starts one row of the table as key (componentKey) with
// the driver its check returned (nil for a component that talks to no
// driver, or one that exits at start: that one is left out): the clients
// and informers it needs, under its name, then its Start; the loop then
// runs it.
func (c *Cluster) startComponent(s *componentSpec, key string, p *process, drv *controller.Driver, flags controller.SidecarFlags) error {
	if s.check != nil && drv == nil {
		return nil
	}
	d, err := c.deps(s, key, p)
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	if drv != nil {
		d.Driver = *drv
	}
	d.Flags = flags
	ctx, cancel := context.WithTimeout(context.Background(), c.cfg.StartTimeout)
	defer cancel()
	comp, err := s.start(ctx, d)
	if err != nil {
		return fmt.Errorf("%s: %w", s.name, err)
	}
	c.components.run(key, s.process, p, comp)
	return nil
}

// deps makes the clients and informers the row s says its component gets,
// as process p's; its informers belong to key.
func (c *Cluster) deps(s *componentSpec, key string, p *process) (controller.Deps, error) {
	clientFor := func(actor string) kubernetes.Interface {
		return c.clients.clientOf(fakekube.UserAgent(s.binaryName(), actor), p)
	}
	d := controller.Deps{Client: clientFor(s.name), ClientFor: clientFor, Runtime: c.rt, Timing: c.cfg.Timing}
	kinds := [][]informerKind{coreKinds}
	if s.needs&appsInformers != 0 {
		kinds = append(kinds, appsKinds)
	}
	if s.needs&attributesClassInformers != 0 {
		kinds = append(kinds, attributesClassKinds)
	}
	if s.needs&daemonSetInformers != 0 {
		kinds = append(kinds, daemonSetKinds)
	}
	var err error
	if d.Informers, err = c.clients.informers(key, d.Client, kinds...); err != nil {
		return d, err
	}
	if s.needs&(snapshotClient|snapshotInformers) != 0 {
		d.Snapshots = c.clients.snapshotClientOf(fakekube.UserAgent(s.binaryName(), s.name), p)
	}
	if s.needs&snapshotInformers != 0 {
		groupKinds := groupSnapshotKinds
		if s.name == snapshotcontroller.Component {
			groupKinds = groupSnapshotControllerKinds
		}
		d.SnapshotInformers, err = c.clients.snapshotInformers(key, d.Snapshots, groupKinds)
	}
	return d, err
}

// restartComponent stops the component the table names name (a sidecar
// of driver d) and starts it again from its row, as a restarted
// container: it loses what it kept in memory, its informers are made and
// filled anew, and a sidecar asks its driver again — once the driver is
// up; one that fails its check then stays stopped.
func (c *Cluster) restartComponent(name string, d *driver) error {
	s := spec(name)
	if s == nil || slices.Contains(c.cfg.Without, name) || s.optIn != nil && !s.optIn(c.cfg) || d.extra() && s.needs&driverConn == 0 {
		return fmt.Errorf("there is no simulated component %q%s to restart", name, d.of())
	}
	if down := c.sidecarDown(s, d); down != "" {
		return fmt.Errorf("simulated component %q%s is not running, as its container's flags stop the real one: %s", name, d.of(), down)
	}
	key := c.componentKey(name, d)
	old := c.components.stop(key)
	// What the old run waits for in the proxies ends with it: its sync
	// resumes at the loop's next step, in a process that is gone.
	for _, o := range old {
		if o.id == "" {
			continue
		}
		for _, pl := range c.allPlugins() {
			pl.proxy.InterruptParkedOf(o.id)
		}
	}
	if s.needs&driverConn != 0 && d.controllerDown() {
		// A real sidecar starts by connecting to the driver's socket and
		// waits there as long as it takes (csi-lib-utils'
		// connection.Connect retries, logging "Still connecting"; the
		// sidecars then probe until the driver is ready): this one starts
		// when the plugin is back (startConnecting).
		if !slices.Contains(d.connecting, name) {
			d.connecting = append(d.connecting, name)
		}
		return nil
	}
	p := &process{name: name}
	if slices.Contains(namedByDriver, name) {
		// It asks the driver's name again, which it goes by.
		conn, err := c.clients.dialOf(d.controllerEndpoint(), c.traceName(d), p)
		if err != nil {
			return err
		}
		if _, err := c.askName(conn); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
	}
	drv, err := c.check(s, p, d)
	if err != nil {
		return err
	}
	return c.startComponent(s, key, p, drv, c.sidecarFlags(s, d))
}

// registry keeps the components the loop runs, so that each can be
// stopped, and kube-controller-manager's restarted in place.
type registry struct {
	loop    *loop.Loop
	running []*runningComponent // in the order they started
}

// runningComponent is a component the loop runs.
type runningComponent struct {
	name, process string
	proc          *process // this run of it, which stop ends
	comp          controller.Component
	stops         []func() // of its periodic jobs
}

// run gives a started component to the loop: its periodic jobs and its
// workers.
func (r *registry) run(name, process string, proc *process, comp controller.Component) {
	rc := &runningComponent{name: name, process: process, proc: proc, comp: comp}
	for _, p := range comp.Periodic {
		rc.stops = append(rc.stops, r.loop.Every(p.Every, p.Run))
	}
	r.loop.AddWorkers(comp.Workers...)
	r.running = append(r.running, rc)
}

// stop takes the component out of the loop — its periodic jobs, its
// workers and its informers — and ends its process, which it returns.
func (r *registry) stop(name string) []*process {
	var ended []*process
	r.running = slices.DeleteFunc(r.running, func(rc *runningComponent) bool {
		if rc.name != name {
			return false
		}
		for _, stop := range rc.stops {
			stop()
		}
		rc.proc.end()
		ended = append(ended, rc.proc)
		r.loop.RemoveWorkers(rc.comp.Workers...)
		return true
	})
	r.loop.RemoveInformers(name)
	return ended
}

// restartable are the running components of process that can restart in
// place (Component.Restart), in the order they started.
func (r *registry) restartable(process string) []*runningComponent {
	var out []*runningComponent
	for _, rc := range r.running {
		if rc.process == process && rc.comp.Restart != nil {
			out = append(out, rc)
		}
	}
	return out
}

// isRunning reports whether a component of that name runs.
func (r *registry) isRunning(name string) bool {
	return slices.ContainsFunc(r.running, func(rc *runningComponent) bool { return rc.name == name })
}

// RunsHealthMonitor says whether the cluster was started with the
// external-health-monitor sidecar, the opt-in row of controlPlane
// (Config.HealthMonitor, or a container of it in the driver's own
// manifests); it implements scenarios.HealthMonitored.
func (c *Cluster) RunsHealthMonitor() bool { return spec("external-health-monitor").optIn(c.cfg) }

// Timing is the timing of node loss the cluster was started with
// (scenarios.Timed).
func (c *Cluster) Timing() timing.Timing { return c.cfg.Timing }
