// Package realcluster is a scenario backend that is a real Kubernetes
// control plane — etcd, kube-apiserver, kube-controller-manager with all
// its controllers, kube-scheduler (package realkube), the upstream
// csi-provisioner, csi-attacher, csi-resizer, csi-snapshotter and
// snapshot-controller — with csisim's driver and csisim's simulated
// kubelets joining it as nodes (and, when asked, csisim's simulated
// external-health-monitor: healthmonitor.go). It is the oracle the
// simulator is measured against: the same scenario, the same driver, the
// real controllers.
//
// Its timeline has the same kinds of entries as the simulator's: every CSI
// call (the sidecars' through a recording proxy in front of the controller
// plugin, one per sidecar so that each call is attributed to the sidecar
// that made it; the kubelets' through csisim's recording client), and
// every API write to the kinds of the volume lifecycle, observed by watch
// and attributed to its writer through the API server's audit events.
// Everything runs on wall time, below one run root that Close removes,
// mounts included.
package realcluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/drivers/faultproxy"
	"github.com/csisim/csisim/drivers/hostpath"
	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/realkube"
	"github.com/csisim/csisim/realnodes"
	"github.com/csisim/csisim/runroot"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/kubelet"
	"github.com/csisim/csisim/sim/unmodelled"
	"github.com/csisim/csisim/timing"
	"github.com/csisim/csisim/trace"
)

// Config describes the cluster to start. The zero value is one node,
// node-1, with csisim's own driver from this executable.
type Config struct {
	// Nodes are the node names; default ["node-1"].
	Nodes []string
	// Zones gives nodes a zone, as the simulator's Config.Zones does: the
	// topology.kubernetes.io/zone label of the Node and the zone the node
	// plugin reports.
	Zones map[string]string
	// SELinux names the nodes with SELinux enabled, as the simulator's
	// Config.SELinux does, for the simulated kubelets. A real node (of
	// RealNodes) runs on this machine's kernel and its containerd with
	// enable_selinux = false: its kubelet finds SELinux disabled whatever
	// this says, and a scenario's checks of the context mount option show
	// the difference.
	SELinux []string
	// DriverName is the CSI driver's name; default hostpath.csisim.io.
	DriverName string
	// DriverArgs are added to the driver plugins' command lines.
	DriverArgs []string
	// DriverBinary is the csisim binary whose `driver` subcommand runs the
	// controller and node plugins; default: this executable.
	DriverBinary string
	// BinDir holds the real components; default realkube.BinDir().
	BinDir string
	// RealNodes are the nodes (of Nodes) that run a real kubelet and
	// containerd (package realnodes) instead of a simulated kubelet.
	RealNodes []string
	// WorkloadBinary is the static csisim-workload binary the real nodes'
	// images are made of; default: csisim-workload beside DriverBinary.
	WorkloadBinary string
	// OnEntry, if set, is called for every timeline entry as it is added.
	OnEntry func(trace.Entry)
	// Log receives the output of every process (control plane, sidecars,
	// drivers), each line prefixed with its name; default: discarded. It
	// is also written to files below the run root's logs/ while it runs.
	Log io.Writer
	// StartTimeout bounds the start of the control plane (default 2
	// minutes) and of each driver (30 s).
	StartTimeout time.Duration
	// HealthMonitor runs the external-health-monitor beside the
	// controller plugin (a scenario's cluster.healthMonitor), as csisim's
	// simulated one: the real one cannot be built (healthmonitor.go).
	HealthMonitor bool
	// Timing is the cluster's timing of node loss (package timing), for
	// the control plane's flags (realkube.Config.Timing) and the
	// kubelets, simulated and real. The zero value is v1.37's.
	Timing timing.Timing
}

// keepHistory stops the API server from compacting etcd (by default it
// does every 5 minutes), so that every state of a run can be read back at
// its resourceVersion while the cluster lives: csisim diff marks the end of
// each step with the resourceVersion and lists the objects at it after the
// run, instead of delaying the run to look. A cluster lives for one run.
const keepHistory = "--etcd-compaction-interval=0"

// The sidecars, by binary, and the actor their CSI calls appear under: the
// binary's name, which is also how their API writes are attributed (their
// user agent).
var sidecars = []string{realkube.CSIProvisioner, realkube.CSIAttacher, realkube.CSIResizer, realkube.CSISnapshotter}

// controllers are the control-plane controllers that run beside
// kube-controller-manager, with a kubeconfig and no CSI socket.
var controllers = []string{realkube.SnapshotController}

// featureGates are the feature gates each real component is started with,
// those csisim's simulated ones model. Volume group snapshots: in
// external-snapshotter v8.7.0 CSIVolumeGroupSnapshot is GA and on by
// default (pkg/features/features.go); it is named all the same, so that a
// run has the group paths whatever the default, and both components then
// serve them once they find the groupsnapshot.storage.k8s.io CRDs that
// realkube installs (cmd/*/main.go turn the feature off without them).
var featureGates = map[string][]string{
	realkube.SnapshotController: {"--feature-gates=CSIVolumeGroupSnapshot=true"},
	realkube.CSISnapshotter:     {"--feature-gates=CSIVolumeGroupSnapshot=true"},
}

// Cluster is a running real control plane with simulated nodes.
type Cluster struct {
	cfg    Config
	root   *runroot.Root
	rec    *trace.Recorder
	kube   *realkube.Cluster
	sink   *auditSink
	writes *writeRecorder

	// driverMu serializes what starts and stops processes — the fault
	// steps, a proxy's crash of its driver (driver-crash-mid-call), which
	// comes from the proxy's own goroutine, and Close — and guards procs
	// and closing.
	driverMu sync.Mutex
	closing  bool
	procs    []namedProcess // driver plugins and sidecars, in start order
	proxies  []*faultproxy.Proxy
	conns    []*csiclient.Conn
	logs     []*os.File

	nodes map[string]*simNode // by name, for faults
	// faultTimers end the API server faults in force; Close stops them.
	faultTimers []*time.Timer

	host     *realnodes.Host // what real nodes change on the machine, to restore
	images   string          // the real nodes' image archive
	stopLogs func()          // stops reading the real pods' workload logs

	stopWrites   context.CancelFunc
	stopMonitor  func()          // the health monitor, if it runs
	kubeletCtx   context.Context // the kubelets run until it is done
	stopKubelets context.CancelFunc
	kubelets     sync.WaitGroup
	closeOnce    sync.Once
	closeErr     error

	driverInfo driverinfo.Info // what the driver said of itself (driverinfo.go)
}

// Timing is the timing of node loss the cluster was started with
// (scenarios.Timed).
func (c *Cluster) Timing() timing.Timing { return c.cfg.Timing }

// namedProcess is a driver plugin or sidecar the cluster started.
type namedProcess struct {
	name    string
	sidecar bool
	*launch.Process
	// start starts a sidecar's process again, as it was started
	// (sidecar-restart).
	start func() (*launch.Process, error)
}

// Start brings the cluster up: control plane, controller plugin, proxies
// and sidecars, then each node's plugin and kubelet. On error, everything
// already started is torn down.
func Start(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	root, err := runroot.New("real")
	if err != nil {
		return nil, err
	}
	c = &Cluster{cfg: cfg, root: root, rec: trace.New(clock.RealClock{}),
		nodes: map[string]*simNode{}, stopWrites: func() {}, stopKubelets: func() {}, stopLogs: func() {}, stopMonitor: func() {}}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
			c = nil
		}
	}()
	if cfg.OnEntry != nil {
		c.rec.Subscribe(cfg.OnEntry)
	}
	if err := os.MkdirAll(root.Path("logs"), 0o750); err != nil {
		return c, fmt.Errorf("preparing the run root: %w", err)
	}

	index := newAuditIndex()
	if c.sink, err = startAuditSink(index); err != nil {
		return c, err
	}
	auditArgs, err := c.sink.apiserverArgs(root.Path("audit"))
	if err != nil {
		return c, err
	}
	c.kube, err = realkube.Start(ctx, realkube.Config{BinDir: cfg.BinDir, RootDir: root.Path("control-plane"),
		ControllersFlag: "*", Log: cfg.Log, StartTimeout: cfg.StartTimeout, APIComponent: apiComponent, Timing: cfg.Timing,
		ExtraArgs: map[string][]string{realkube.KubeAPIServer: append(auditArgs, keepHistory)}})
	if err != nil {
		return c, fmt.Errorf("starting the real control plane: %w", err)
	}

	// From here on every write to the lifecycle's kinds is in the timeline.
	writesCtx, stopWrites := context.WithCancel(context.Background())
	c.stopWrites = stopWrites
	c.writes = newWriteRecorder(c.rec, index)
	if len(cfg.RealNodes) > 0 {
		if err := c.watchWorkloadLogs(writesCtx); err != nil {
			return c, err
		}
	}
	if !c.writes.start(writesCtx, kubernetes.NewForConfigOrDie(c.clientConfig("csisim-timeline"))) {
		return c, errors.New("watching the API server for the timeline: the informers did not sync")
	}

	ctrlEndpoint, err := c.startDriver(ctx, "controller", "")
	if err != nil {
		return c, err
	}
	for _, name := range controllers {
		if err := c.startSidecar(ctx, name, ""); err != nil {
			return c, err
		}
	}
	for _, name := range sidecars {
		if err := c.startSidecar(ctx, name, ctrlEndpoint); err != nil {
			return c, err
		}
	}
	if cfg.HealthMonitor {
		if err := c.startHealthMonitor(ctx, ctrlEndpoint); err != nil {
			return c, err
		}
	}
	c.kubeletCtx, c.stopKubelets = context.WithCancel(context.Background())
	for i, node := range cfg.Nodes {
		if err := c.startNode(ctx, i, node); err != nil {
			return c, err
		}
	}
	return c, c.askDriver(ctx, ctrlEndpoint)
}

// RefuseManifest is what this cluster would not carry out of an object a
// scenario applies (scenarios.ManifestRefuser): while a node runs csisim's
// simulated kubelet, the fields only a real kubelet acts on (package
// unmodelled); the real control plane acts on the rest.
func (c *Cluster) RefuseManifest(obj map[string]any) field.ErrorList {
	if len(c.cfg.RealNodes) == len(c.cfg.Nodes) {
		return nil
	}
	return unmodelled.NodeErrors(obj)
}

// complete fills in the defaults of what is not set, and checks that the
// real components are there and the real nodes are the cluster's.
func (cfg *Config) complete() error {
	if len(cfg.Nodes) == 0 {
		cfg.Nodes = []string{"node-1"}
	}
	if cfg.DriverName == "" {
		cfg.DriverName = hostpath.DefaultDriverName
	}
	if cfg.BinDir == "" {
		cfg.BinDir = realkube.BinDir()
	}
	if cfg.DriverBinary == "" {
		exe, err := os.Executable()
		if err != nil {
			return fmt.Errorf("finding the csisim binary for the driver: %w", err)
		}
		cfg.DriverBinary = exe
	}
	if err := cfg.Timing.Validate(); err != nil {
		return err
	}
	controlPlane := realkube.Config{Timing: cfg.Timing}.Binaries()
	if err := realkube.Available(cfg.BinDir, slices.Concat(controlPlane, sidecars, controllers)...); err != nil {
		return err
	}
	for _, n := range cfg.RealNodes {
		if !slices.Contains(cfg.Nodes, n) {
			return fmt.Errorf("real node %q is not one of the cluster's nodes %v", n, cfg.Nodes)
		}
	}
	return nil
}

// startNode starts the i-th node: a real kubelet and containerd, or the
// node plugin behind a fault proxy and a kubelet.
func (c *Cluster) startNode(ctx context.Context, i int, node string) error {
	if c.isReal(node) {
		return c.startRealNode(ctx, i, node)
	}
	endpoint, err := c.startDriver(ctx, "node", node)
	if err != nil {
		return err
	}
	// The kubelet reaches its plugin through a fault proxy, as in the
	// simulator; its own client records the calls.
	p, err := faultproxy.Start(context.Background(), faultproxy.Config{Name: nodeProxy(node),
		Listen: "unix://" + c.nodeSocket(node), Target: endpoint, NodeID: node, Recorder: c.rec,
		Crash: c.crashHook(driverPlugin{mode: "node", node: node})})
	if err != nil {
		return fmt.Errorf("proxy for the node plugin of %s: %w", node, err)
	}
	c.proxies = append(c.proxies, p)
	return c.startKubelet(ctx, c.kubeletCtx, node, p.Endpoint(), false)
}

// startDriver launches one plugin of csisim's driver, waits until it
// answers Probe and returns its endpoint. The layout below the run root is
// the simulator's.
func (c *Cluster) startDriver(ctx context.Context, mode, node string) (string, error) {
	name, socket, stateDir := "controller", c.pluginSocket(mode, node), c.pluginStateDir(mode, node)
	if mode == "node" {
		name = "node-" + node
	}
	for _, dir := range []string{stateDir, filepath.Dir(socket), c.root.Path("storage")} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return "", fmt.Errorf("preparing %s: %w", dir, err)
		}
	}
	log, err := c.logWriter("driver-" + name)
	if err != nil {
		return "", err
	}
	tmpl := launch.OurDriver(c.cfg.DriverBinary, mode, c.cfg.DriverName)
	if zone := c.cfg.Zones[node]; zone != "" && mode == "node" {
		tmpl.Args = append(tmpl.Args, "--zone", zone)
	}
	tmpl.Args = append(tmpl.Args, c.cfg.DriverArgs...)
	if n := c.nodes[node]; mode == "node" && n != nil && n.isolated {
		tmpl = launch.Template{Path: "unshare", Env: tmpl.Env,
			Args: append([]string{"--mount", "--propagation", "private", tmpl.Path}, tmpl.Args...)}
	}
	vars := launch.Vars{Endpoint: "unix://" + socket, NodeID: node, StateDir: stateDir, Root: c.root.Path("storage")}
	p, err := launch.Start(context.Background(), "driver "+name, tmpl, vars, log)
	if err != nil {
		return "", err
	}
	c.procs = append(c.procs, namedProcess{name: "driver-" + name, Process: p})
	readyCtx, cancel := context.WithTimeout(ctx, c.driverTimeout())
	defer cancel()
	if err := p.WaitReady(readyCtx); err != nil {
		return "", fmt.Errorf("driver %s did not become ready: %w", name, err)
	}
	return vars.Endpoint, nil
}

// pluginSocket is where a plugin's driver listens: for a node plugin,
// behind the fault proxy the kubelet calls.
func (c *Cluster) pluginSocket(mode, node string) string {
	if mode == "node" {
		return c.root.Path("nodes", node, "driver", "csi.sock")
	}
	return c.root.Path("controller", "csi.sock")
}

// pluginStateDir is a plugin's state directory.
func (c *Cluster) pluginStateDir(mode, node string) string {
	if mode == "node" {
		return c.root.Path("nodes", node, "driver-state")
	}
	return c.root.Path("controller", "state")
}

// nodeSocket is where the kubelet finds node's plugin: in its plugins
// directory, as node-driver-registrar has it. The fault proxy listens
// there; the plugin itself behind it, in the node's driver directory.
func (c *Cluster) nodeSocket(node string) string {
	return c.root.Path("nodes", node, "kubelet", "plugins", c.cfg.DriverName, "csi.sock")
}

func (c *Cluster) driverTimeout() time.Duration {
	if c.cfg.StartTimeout > 0 {
		return c.cfg.StartTimeout
	}
	return 30 * time.Second
}

// startSidecar runs a real sidecar against the control plane and, through
// a recording proxy of its own, against the controller plugin; with no
// ctrlEndpoint, a control-plane controller (the snapshot-controller) that
// talks to the API server only.
func (c *Cluster) startSidecar(ctx context.Context, name, ctrlEndpoint string) error {
	log, err := c.logWriter(name)
	if err != nil {
		return err
	}
	tmpl := launch.Template{Path: filepath.Join(c.cfg.BinDir, name), Args: []string{
		"--kubeconfig=" + c.kube.ComponentKubeconfigPath(), "--leader-election=false", "-v=2"}}
	if ctrlEndpoint != "" {
		socket, err := c.sidecarProxy(name, ctrlEndpoint)
		if err != nil {
			return err
		}
		tmpl.Args = append(tmpl.Args, "--csi-address="+socket)
		// The csi-snapshotter keeps its default --timeout (1 min), as
		// csisim's does.
		if name != realkube.CSISnapshotter {
			tmpl.Args = append(tmpl.Args, "--timeout=30s")
		}
	}
	tmpl.Args = append(tmpl.Args, featureGates[name]...)
	if name == "csi-provisioner" {
		// Storage capacity tracking, as csisim's provisioner does it: the
		// objects go to kube-system with no owner (no pod owns them here).
		tmpl.Args = append(tmpl.Args, "--enable-capacity", "--capacity-ownerref-level=-1")
		tmpl.Env = append(tmpl.Env, "NAMESPACE=kube-system")
	}
	start := func() (*launch.Process, error) {
		return launch.Start(context.Background(), name, tmpl, launch.Vars{}, log)
	}
	proc, err := start()
	if err != nil {
		return fmt.Errorf("starting %s: %w", name, err)
	}
	c.procs = append(c.procs, namedProcess{name: name, sidecar: true, Process: proc, start: start})
	// A sidecar that cannot start (a bad flag, no kubeconfig) exits at
	// once; say so now rather than with a scenario timing out.
	select {
	case <-proc.Exited():
		return fmt.Errorf("%s exited at start; see %s", name, c.root.Path("logs", name+".log"))
	case <-time.After(500 * time.Millisecond):
	case <-ctx.Done():
		return ctx.Err()
	}
	return nil
}

// sidecarProxy starts the recording proxy in front of the controller
// plugin that the sidecar name calls, each of its calls in the timeline
// under name, and returns the socket it listens on.
func (c *Cluster) sidecarProxy(name, ctrlEndpoint string) (string, error) {
	socket := c.root.Path("controller", name+".sock")
	p, err := faultproxy.Start(context.Background(), faultproxy.Config{Name: name, Listen: "unix://" + socket,
		Target: ctrlEndpoint, Recorder: c.rec, OnCall: func(call faultproxy.Call) { c.rec.Add(callEntry(name, call, c.rec)) },
		Crash: c.crashHook(driverPlugin{mode: "controller"})})
	if err != nil {
		return "", fmt.Errorf("proxy for %s: %w", name, err)
	}
	c.proxies = append(c.proxies, p)
	return socket, nil
}

// callEntry is a proxied call as a timeline entry, in the words csisim's
// recording client uses for its own calls.
// The entry is added when the call has returned; rec says which entries
// came before the call was sent.
func callEntry(actor string, call faultproxy.Call, rec *trace.Recorder) trace.Entry {
	e := trace.Entry{Kind: trace.CSI, Actor: actor, Verb: call.Method, Object: call.VolumeID,
		Wall: call.Duration.Round(time.Microsecond), Detail: call.Code.String()}
	if call.Method == "CreateSnapshot" {
		e.Object = call.Name
	}
	if call.Method == "CreateVolume" {
		e.Object = call.Name
		if call.VolumeID != "" {
			e.Object += " -> " + call.VolumeID
		}
	}
	if call.Code != 0 {
		e.Err = call.Message
	}
	e.Call = call.Trace()
	e.Call.Started = max(rec.Now()-call.Duration, 0)
	e.Call.StartedAfter = rec.CountUntil(e.Call.Started)
	return e
}

// startKubelet registers a simulated kubelet for node with the real API
// server and runs it on goroutines until Close or a node fault stops it.
// A restarted kubelet first rebuilds its state from the volumes mounted
// under its directory, as the real one's reconstruction does.
func (c *Cluster) startKubelet(ctx, runCtx context.Context, node, endpoint string, restarted bool) error {
	actor := "kubelet:" + node
	conn, err := csiclient.Dial(endpoint, actor, c.rec)
	if err != nil {
		return err
	}
	c.conns = append(c.conns, conn)
	// Named kubelet first, as a real kubelet's client is: the API server's
	// field manager of its writes.
	cs, err := kubernetes.NewForConfig(c.componentConfig(fakekube.UserAgent("kubelet", actor)))
	if err != nil {
		return fmt.Errorf("client for %s: %w", actor, err)
	}
	podFactory := informers.NewSharedInformerFactoryWithOptions(cs, 0, informers.WithTweakListOptions(func(o *metav1.ListOptions) {
		o.FieldSelector = "spec.nodeName=" + node
	}))
	factory := informers.NewSharedInformerFactory(cs, 0)
	labels := map[string]string{}
	if zone := c.cfg.Zones[node]; zone != "" {
		labels[corev1.LabelTopologyZone] = zone
	}
	nodeIP, podSubnet := kubelet.NodeNetwork(slices.Index(c.cfg.Nodes, node))
	k := kubelet.New(kubelet.Config{NodeName: node, DriverName: c.cfg.DriverName, Dir: c.root.Path("nodes", node, "kubelet"), Labels: labels, Recorder: c.rec,
		NodeIP: nodeIP, PodSubnet: podSubnet, Timing: c.cfg.Timing, SELinuxEnabled: slices.Contains(c.cfg.SELinux, node)},
		cs, podFactory, factory, conn.Node, controller.RealRuntime())
	// A restarted kubelet finds its Node and CSINode there; the plugin
	// registers again during Restart.
	if !restarted {
		if err := k.Register(ctx, conn.Identity); err != nil {
			return err
		}
	}
	// Each kubelet has a context of its own, which node-loss cancels.
	nodeCtx, stop := context.WithCancel(runCtx)
	n := c.nodes[node]
	if n == nil {
		n = &simNode{name: node}
		c.nodes[node] = n
	}
	n.kubelet, n.identity = k, conn.Identity
	done := make(chan struct{})
	n.stop = func() { stop(); <-done }
	podFactory.Start(nodeCtx.Done())
	factory.Start(nodeCtx.Done())
	if restarted {
		for _, f := range []informers.SharedInformerFactory{podFactory, factory} {
			for typ, ok := range f.WaitForCacheSync(ctx.Done()) {
				if !ok {
					stop()
					return fmt.Errorf("restarting the kubelet of %s: the %v informer did not sync", node, typ)
				}
			}
		}
		if err := k.Restart(ctx); err != nil {
			stop()
			return err
		}
	}
	c.kubelets.Add(1)
	go func() {
		defer c.kubelets.Done()
		defer close(done)
		k.Run(nodeCtx)
		podFactory.Shutdown()
		factory.Shutdown()
	}()
	return nil
}

// RESTConfig is how a scenario reaches the API server; its writes are the
// scenario's in the timeline.
func (c *Cluster) RESTConfig() *rest.Config { return c.clientConfig("scenario") }

// CSICalls are the CSI calls made so far, in the order they finished.
func (c *Cluster) CSICalls() []trace.Entry { return c.rec.Filter(trace.CSI) }

// Recorder is the cluster's timeline.
func (c *Cluster) Recorder() *trace.Recorder { return c.rec }

// DriverName is the name of the cluster's CSI driver.
func (c *Cluster) DriverName() string { return c.cfg.DriverName }

// Root is the run's temporary directory.
func (c *Cluster) Root() string { return c.root.Path() }

// KubeconfigPath is an admin kubeconfig for the API server, for kubectl.
func (c *Cluster) KubeconfigPath() string { return c.kube.KubeconfigPath() }

// PIDs are the processes the cluster started, by name: the control plane,
// the sidecars and the driver plugins.
func (c *Cluster) PIDs() map[string]int {
	c.driverMu.Lock()
	defer c.driverMu.Unlock()
	m := map[string]int{}
	if c.kube != nil {
		for name, pid := range c.kube.PIDs() {
			m[name] = pid
		}
	}
	for _, p := range c.procs {
		m[p.name] = p.PID()
	}
	for _, n := range c.nodes {
		if n.real != nil {
			maps.Copy(m, n.real.PIDs())
		}
	}
	return m
}

// Close stops everything — kubelets, sidecars, proxies, driver plugins,
// the control plane — unmounts everything under the run's root and removes
// it. The writes the kubelets and sidecars made before they stopped are
// still recorded. It is safe to call more than once.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		// From now on no proxy starts its driver again.
		c.driverMu.Lock()
		c.closing = true
		for _, t := range c.faultTimers {
			t.Stop()
		}
		c.driverMu.Unlock()
		var errs []error
		c.stopKubelets()
		c.kubelets.Wait()
		// The real kubelets, their pods and containerd; the host's
		// sysctls, fixed paths and cgroups back as they were.
		errs = append(errs, c.stopRealNodes())
		c.stopMonitor()
		for _, p := range c.procs {
			if p.sidecar {
				errs = append(errs, p.Stop(5*time.Second))
			}
		}
		// Nothing of ours writes any more; the recorder takes what it
		// has observed and stops.
		c.stopWrites()
		c.stopLogs()
		if c.writes != nil {
			<-c.writes.drained
		}
		for _, p := range c.proxies {
			errs = append(errs, p.Stop())
		}
		for _, conn := range c.conns {
			errs = append(errs, conn.Close())
		}
		for _, p := range c.procs {
			if !p.sidecar {
				errs = append(errs, p.Stop(5*time.Second))
			}
		}
		if c.kube != nil {
			errs = append(errs, c.kube.Stop())
		}
		if c.sink != nil {
			errs = append(errs, c.sink.close())
		}
		for _, f := range c.logs {
			errs = append(errs, f.Close())
		}
		errs = append(errs, c.root.Close())
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}
