// Package cluster assembles a simulated cluster: the in-process API server,
// the control-plane components, one kubelet per node, and real CSI driver
// processes (one controller plugin, one node plugin per node) reached only
// over gRPC. The components run in the deterministic loop of package loop,
// on a virtual clock: a scenario runs the cluster forward with RunUntil and
// RunFor; an interactive cluster (csisim serve) follows the wall clock.
// Everything lives under one temporary root that Close removes, mounts
// included.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	snapv1 "github.com/kubernetes-csi/external-snapshotter/client/v8/apis/volumesnapshot/v1"
	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	appsv1 "k8s.io/api/apps/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/klog/v2"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/drivers/faultproxy"
	"github.com/csisim/csisim/drivers/hostpath"
	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/drivers/mock"
	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/runroot"
	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/attacher"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/deployment"
	"github.com/csisim/csisim/sim/ephemeral"
	"github.com/csisim/csisim/sim/expand"
	"github.com/csisim/csisim/sim/kubelet"
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
	"github.com/csisim/csisim/trace"
)

// Config describes the cluster to start. The zero value is one node with
// csisim's own driver.
type Config struct {
	// Nodes are the node names; default ["node-1"].
	Nodes []string
	// Zones gives nodes a zone: the topology.kubernetes.io/zone label of
	// the Node, and the zone csisim's driver reports for the node.
	Zones map[string]string
	// DriverArgs are added to the command line of csisim's own driver, for
	// the controller and every node (e.g. --capacity=10Gi).
	DriverArgs []string
	// DriverName is the name csisim's own driver and the mock are started
	// with; default hostpath.csisim.io. Whatever name the controller
	// plugin reports (GetPluginInfo) is the cluster's driver name, as the
	// real sidecars take it, so a third-party driver's own name needs no
	// flag.
	DriverName string
	// Driver is how to start a driver plugin, for the controller plugin
	// and for each node's; the zero value runs csisim's own driver from
	// DriverBinary, in controller and node modes.
	Driver launch.Template
	// DriverBinary is the csisim binary for the default driver template
	// and a template's {csisim}; default: this executable.
	DriverBinary string
	// ControllerDriver, if its Path is set, is how to start the controller
	// plugin of the split layout; Driver then starts the node plugins.
	ControllerDriver launch.Template
	// ZoneArgs are added to the node plugin's arguments on a node that has
	// a zone, with {zone} standing for it; csisim's own driver (the zero
	// Driver) gets --zone {zone}.
	ZoneArgs []string
	// Layout is how the driver's processes are laid out: LayoutSplit (the
	// default) or LayoutCombined (layout.go).
	Layout Layout
	// Mock runs the in-memory mock driver instead, in this process but
	// still over gRPC on unix sockets: no mounts, no root needed, for
	// scale runs. The kubelet then does not look for mounts.
	Mock bool
	// NoMounts says the driver mounts nothing (an in-memory test driver
	// such as csi-test's mock): the kubelet then does not look for its
	// mounts, as with Mock.
	NoMounts bool
	// Seed makes the run reproducible: UIDs, generated names and the order
	// in which the loop runs ready work.
	Seed uint64
	// OnEntry, if set, is called for every timeline entry as it is added,
	// from the cluster's first write on.
	OnEntry func(trace.Entry)
	// Realtime makes the virtual clock follow the wall clock and runs the
	// loop in the background, for clusters people use interactively.
	Realtime bool
	// Speed makes a realtime cluster's virtual clock run this many times
	// as fast as the wall clock (0 or 1: as fast); not with Without.
	Speed float64
	// Without names simulated components to leave out, so that their real
	// counterparts can take their place against the API server's HTTP
	// endpoint: external-provisioner, external-attacher, external-resizer,
	// persistentvolume-binder, attachdetach-controller, expand-controller,
	// ephemeral-volume-controller,
	// default-scheduler, snapshot-controller, csi-snapshotter, statefulset-controller,
	// replicaset-controller, deployment-controller.
	// It needs Realtime: a real process works on wall time.
	Without []string
	// DriverLog receives the driver processes' output; default: discarded.
	DriverLog io.Writer
	// StartTimeout bounds how long a driver may take to become ready.
	StartTimeout time.Duration
	// EventTTL is how long the API server keeps an Event after its last
	// write (kube-apiserver --event-ttl); default fakekube.DefaultEventTTL.
	EventTTL time.Duration
}

// Components are the simulated control-plane components, by the user agent
// they write as (and the name Config.Without takes): the components the
// API faults name.
var Components = fault.Components

// Cluster is a running simulated cluster.
type Cluster struct {
	cfg     Config
	root    *runroot.Root
	api     *fakekube.Server
	clock   *testingclock.FakeClock
	loop    *loop.Loop
	rt      controller.Runtime
	rec     *trace.Recorder
	drivers []*launch.Process     // every driver process started, to stop them all
	plugins []*plugin             // the controller plugin, then each node's
	nodes   map[string]*nodeParts // what makes up each node, for faults
	// faultBy is who injects the fault being injected, the actor of its
	// FAULT entry: the scenario, or a person with csisim fault
	// (InjectFaultLive).
	faultBy string
	// nodeCaches are the informers the kubelets share (kubeletInformers).
	nodeCaches map[schema.GroupVersionResource]*loop.Informer
	backend    *mock.Backend // the mock plugins' shared storage
	faultRules int           // CSI fault rules added so far, to name them
	conns      []*csiclient.Conn
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	closed     bool

	// The controller-manager's controllers with memory, for its restart.
	attachDetach  *attachdetach.Controller
	nodeLifecycle *nodelifecycle.Controller

	exits exits // drivers that died unexpectedly (exits.go)
	// notes are suspicions about the driver's set-up found at the start,
	// for Hints (driverchecks.go); controllerTopology is the topology a
	// split layout's controller process reports as a node, if it does.
	notes              []string
	controllerTopology string
}

// Start brings the cluster up: API server, driver processes, controllers
// and nodes. On error, everything already started is torn down.
func Start(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if len(cfg.Nodes) == 0 {
		cfg.Nodes = []string{"node-1"}
	}
	if cfg.DriverName == "" {
		cfg.DriverName = hostpath.DefaultDriverName
	}
	for _, w := range cfg.Without {
		if !slices.Contains(Components, w) {
			return nil, fmt.Errorf("cannot leave out %q: the simulated components are %v", w, Components)
		}
	}
	if len(cfg.Without) > 0 && !cfg.Realtime {
		return nil, fmt.Errorf("leaving out %v needs a realtime cluster: the real components that replace them run on wall time", cfg.Without)
	}
	if cfg.Speed != 0 && cfg.Speed != 1 && (!cfg.Realtime || len(cfg.Without) > 0) {
		return nil, fmt.Errorf("speed %v needs a realtime cluster with every component simulated: real ones run on wall time", cfg.Speed)
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	if err := cfg.checkDriver(); err != nil {
		return nil, err
	}
	root, err := runroot.New("run")
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	// A simulated run's clock starts at a fixed instant, so that the same
	// seed gives the same objects down to their timestamps (the JSON and
	// HTML timelines carry them); a realtime one follows the wall clock.
	clk := testingclock.NewFakeClock(virtualEpoch)
	if cfg.Realtime {
		clk.SetTime(time.Now().Truncate(time.Second))
	}
	c = &Cluster{cfg: cfg, root: root, clock: clk, rec: trace.New(clk), cancel: cancel, nodes: map[string]*nodeParts{},
		nodeCaches: map[schema.GroupVersionResource]*loop.Informer{}}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
			c = nil
		}
	}()
	if cfg.OnEntry != nil {
		c.rec.Subscribe(cfg.OnEntry)
	}
	c.api = fakekube.New(fakekube.Options{Seed: cfg.Seed, Clock: clk, EventTTL: cfg.EventTTL, OnWrite: func(w fakekube.Write) {
		c.rec.Add(DescribeWrite(w))
		if c.loop != nil { // the server's own first writes come before the loop; informers fill from the store
			c.loop.Observe(w)
		}
	}, OnRefused: func(w fakekube.Write, err error) { c.rec.Add(describeRefused(w, err)) },
		ContainerLogs: c.containerLogs})
	c.loop = loop.New(c.api, clk, cfg.Seed)
	c.rt = controller.Runtime{
		Clock:               clk,
		NewQueue:            c.loop.NewQueue,
		NewQueueWithBackoff: c.loop.NewQueueWithBackoff,
		NewEventRecorder: func(client kubernetes.Interface, component, host string) (record.EventRecorder, func()) {
			return controller.NewSyncEventRecorder(client, component, host, clk), func() {}
		},
	}

	ctrlEndpoint, err := c.startControllerPlugin(ctx)
	if err != nil {
		return c, err
	}
	if err := c.startControlPlane(ctrlEndpoint); err != nil {
		return c, err
	}
	for _, node := range cfg.Nodes {
		endpoint, err := c.nodePluginEndpoint(ctx, node)
		if err != nil {
			return c, err
		}
		if err := c.startKubelet(ctx, node, endpoint); err != nil {
			return c, err
		}
	}
	if err := c.checkDriverLayout(ctx); err != nil {
		return c, err
	}
	if cfg.Realtime {
		c.wg.Add(1)
		go func() {
			defer c.wg.Done()
			c.loop.RunRealtimeAt(runCtx, cfg.Speed)
		}()
	}
	return c, nil
}

// startDriver starts one driver plugin — csisim's driver, any driver from
// a template, or the mock — with a fault proxy in front of it, and returns
// the proxy's endpoint, which is where the components find the plugin.
func (c *Cluster) startDriver(ctx context.Context, role fault.Plugin, node string) (string, error) {
	pl := &plugin{role: role, node: node, name: "controller plugin"}
	// The proxy listens where the components look for the plugin: for a
	// node plugin, where node-driver-registrar's driver socket lives on a
	// real node. The driver listens on a socket of its own beside it, laid
	// out as realcluster lays out its plugins, so that the paths in
	// messages compare (csisim diff).
	listen := c.root.Path("controller", "faultproxy.sock")
	driverSocket := c.root.Path("controller", "csi.sock")
	if role == fault.Node {
		pl.name = "node plugin on " + node
		listen = c.root.Path("nodes", node, "kubelet", "plugins", c.cfg.DriverName, "csi.sock")
		driverSocket = c.root.Path("nodes", node, "driver", "csi.sock")
		parts := c.nodes[node]
		if parts == nil {
			parts = &nodeParts{}
			c.nodes[node] = parts
		}
		parts.plugin = pl
	}
	c.plugins = append(c.plugins, pl)
	for _, socket := range []string{listen, driverSocket} {
		if err := checkSocket(node, socket); err != nil {
			return "", err
		}
	}
	for _, dir := range []string{filepath.Dir(listen), filepath.Dir(driverSocket), c.root.Path("storage")} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return "", fmt.Errorf("preparing %s: %w", dir, err)
		}
	}
	pl.driverEndpoint = "unix://" + driverSocket
	if host := c.controllerHost(role); host != nil {
		// Combined layout: the controller plugin is the first node's
		// driver, behind a fault proxy of its own.
		pl.host, pl.driverEndpoint = host, host.driverEndpoint
		pl.name = "controller plugin (the node plugin on " + host.node + ")"
	} else if c.cfg.Mock {
		m := mock.ModeController
		if role == fault.Node {
			m = mock.ModeNode
		}
		if c.cfg.Layout == LayoutCombined && node == c.cfg.Nodes[0] {
			m = mock.ModeAll
		}
		pl.mock = &mock.Config{Name: c.cfg.DriverName, NodeID: node, Mode: m, Backend: c.mockBackend()}
	} else if err := c.prepareProcess(pl); err != nil {
		return "", err
	}
	if pl.host == nil {
		if err := c.startPlugin(ctx, pl); err != nil {
			return "", err
		}
	}
	proxyName := "faultproxy:controller"
	if role == fault.Node {
		proxyName = "faultproxy:" + node
	}
	proxy, err := faultproxy.Start(context.Background(), faultproxy.Config{Name: proxyName, Listen: "unix://" + listen,
		Target: pl.driverEndpoint, Seed: c.cfg.Seed, NodeID: node, Recorder: c.rec, Park: c.loop.Park})
	if err != nil {
		return "", fmt.Errorf("%s: %w", pl.name, err)
	}
	pl.proxy = proxy
	// The first call must not meet a connection still being made (it
	// would fail as if the driver were down): wait, as
	// node-driver-registrar and the sidecars wait for the driver's socket.
	connCtx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
	defer cancel()
	if err := proxy.WaitConnected(connCtx); err != nil {
		return "", fmt.Errorf("%s: %w", pl.name, err)
	}
	return proxy.Endpoint(), nil
}

// prepareProcess sets up how to run the plugin as a process: its command
// template, its state directory and the values of its placeholders.
func (c *Cluster) prepareProcess(pl *plugin) error {
	tmpl := c.cfg.Driver
	if tmpl.Path == "" {
		bin, err := c.csisimBinary()
		if err != nil {
			return err
		}
		tmpl = launch.OurDriver(bin, string(pl.role), c.cfg.DriverName)
		tmpl.Args = append(tmpl.Args, c.cfg.DriverArgs...)
	} else if pl.role == fault.Controller && c.cfg.ControllerDriver.Path != "" {
		tmpl = c.cfg.ControllerDriver
	}
	zone := c.cfg.Zones[pl.node]
	if zone != "" && pl.role == fault.Node {
		tmpl.Args = append(slices.Clip(tmpl.Args), c.zoneArgs()...)
	}
	stateDir := c.root.Path("controller", "state")
	// A third-party driver usually serves every service in one process
	// and insists on a node ID even as the controller plugin.
	nodeID := "controller"
	if pl.role == fault.Node {
		stateDir, nodeID = c.root.Path("nodes", pl.node, "driver-state"), pl.node
	}
	// The driver's temporary files (mount-utils makes some as it starts)
	// go in the run's root too, so that a driver killed at any moment
	// leaves none outside it.
	tmpl.Env = append(slices.Clip(tmpl.Env), "TMPDIR="+c.root.Path("tmp"))
	for _, dir := range []string{stateDir, c.root.Path("tmp")} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return fmt.Errorf("preparing %s: %w", dir, err)
		}
	}
	pl.template = tmpl
	bin, err := c.csisimBinary()
	if err != nil {
		return err
	}
	pl.vars = launch.Vars{Endpoint: pl.driverEndpoint, NodeID: nodeID, StateDir: stateDir, Root: c.root.Path("storage"),
		DriverName: c.cfg.DriverName, CSISim: bin}
	if pl.role == fault.Node {
		pl.vars.Zone = zone
	}
	return nil
}

// startPlugin starts the plugin's driver — its process, or the mock's
// server — and waits until it is ready.
func (c *Cluster) startPlugin(ctx context.Context, pl *plugin) error {
	if pl.mock != nil {
		d, err := mock.New(*pl.mock)
		if err != nil {
			return err
		}
		srv, err := d.Start(pl.driverEndpoint)
		if err != nil {
			return err
		}
		pl.mockServer = srv
		return nil
	}
	return c.launch(ctx, pl)
}

// launch starts the plugin's driver process and waits until it is ready.
func (c *Cluster) launch(ctx context.Context, pl *plugin) error {
	p, err := launch.Start(context.Background(), "driver "+pl.name, pl.template, pl.vars, c.cfg.DriverLog)
	if err != nil {
		return err
	}
	c.drivers = append(c.drivers, p)
	if err := c.watch(p, pl.name); err != nil {
		return err
	}
	pl.process = p
	readyCtx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
	defer cancel()
	if err := p.WaitReady(readyCtx); err != nil {
		return fmt.Errorf("driver %s did not become ready: %w", pl.name, err)
	}
	return nil
}

// mockBackend is the storage all mock plugins share, as the controller
// and nodes of a real driver share its storage.
func (c *Cluster) mockBackend() *mock.Backend {
	if c.backend == nil {
		c.backend = mock.NewBackend(0)
	}
	return c.backend
}

// dial connects actor to a driver; its calls are recorded under actor.
func (c *Cluster) dial(endpoint, actor string) (*csiclient.Conn, error) {
	conn, err := csiclient.Dial(endpoint, actor, c.rec, csiclient.Virtual())
	if err != nil {
		return nil, err
	}
	c.conns = append(c.conns, conn)
	return conn, nil
}

// client returns a clientset that names itself userAgent to the API server,
// so its writes are attributed to it in the timeline.
func (c *Cluster) client(userAgent string) kubernetes.Interface {
	return kubernetes.NewForConfigOrDie(c.api.RESTConfig(userAgent))
}

// informerKind is a kind a component's informer factory serves from the
// loop's informers.
type informerKind struct {
	obj      runtime.Object
	gvr      schema.GroupVersionResource
	selector string
}

// workloadControllers are the controllers of the workload kinds.
var workloadControllers = []string{"statefulset-controller", "replicaset-controller", "deployment-controller"}

// informers returns an informer factory for one control-plane component
// (by its user agent) whose informers the loop feeds.
func (c *Cluster) informers(component string, cs kubernetes.Interface) (informers.SharedInformerFactory, error) {
	f := informers.NewSharedInformerFactory(cs, 0)
	kinds := []informerKind{
		{&corev1.Pod{}, corev1.SchemeGroupVersion.WithResource("pods"), ""},
		{&corev1.Node{}, corev1.SchemeGroupVersion.WithResource("nodes"), ""},
		{&corev1.PersistentVolumeClaim{}, corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims"), ""},
		{&corev1.PersistentVolume{}, corev1.SchemeGroupVersion.WithResource("persistentvolumes"), ""},
		{&storagev1.StorageClass{}, storagev1.SchemeGroupVersion.WithResource("storageclasses"), ""},
		{&storagev1.CSIDriver{}, storagev1.SchemeGroupVersion.WithResource("csidrivers"), ""},
		{&storagev1.CSINode{}, storagev1.SchemeGroupVersion.WithResource("csinodes"), ""},
		{&storagev1.VolumeAttachment{}, storagev1.SchemeGroupVersion.WithResource("volumeattachments"), ""},
		{&storagev1.CSIStorageCapacity{}, storagev1.SchemeGroupVersion.WithResource("csistoragecapacities"), ""},
		{&coordinationv1.Lease{}, coordinationv1.SchemeGroupVersion.WithResource("leases"), ""},
	}
	// The workload controllers also watch the apps kinds.
	if slices.Contains(workloadControllers, component) {
		kinds = append(kinds, []informerKind{
			{&appsv1.StatefulSet{}, appsv1.SchemeGroupVersion.WithResource("statefulsets"), ""},
			{&appsv1.ControllerRevision{}, appsv1.SchemeGroupVersion.WithResource("controllerrevisions"), ""},
			{&appsv1.ReplicaSet{}, appsv1.SchemeGroupVersion.WithResource("replicasets"), ""},
			{&appsv1.Deployment{}, appsv1.SchemeGroupVersion.WithResource("deployments"), ""},
		}...)
	}
	for _, k := range kinds {
		inf, err := c.loop.NewInformer(k.gvr, k.selector)
		if err != nil {
			return nil, err
		}
		inf.BelongsTo(component) // for watch-drop
		// Registered first, the loop's informer is what the component's
		// typed accessors (factory.Core().V1().Pods()...) hand out.
		f.InformerFor(k.obj, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer { return inf })
	}
	return f, nil
}

// snapshotClient returns a clientset of the snapshot kinds that names
// itself userAgent to the API server.
func (c *Cluster) snapshotClient(userAgent string) snapclientset.Interface {
	return snapclientset.NewForConfigOrDie(c.api.RESTConfig(userAgent))
}

// snapshotInformers returns the informer factory of the snapshot kinds
// for one control-plane component, whose informers the loop feeds, as
// informers does for the core kinds.
func (c *Cluster) snapshotInformers(component string, cs snapclientset.Interface) (snapinformers.SharedInformerFactory, error) {
	f := snapinformers.NewSharedInformerFactory(cs, 0)
	for _, k := range []struct {
		obj      runtime.Object
		resource string
	}{
		{&snapv1.VolumeSnapshot{}, "volumesnapshots"},
		{&snapv1.VolumeSnapshotContent{}, "volumesnapshotcontents"},
		{&snapv1.VolumeSnapshotClass{}, "volumesnapshotclasses"},
	} {
		inf, err := c.loop.NewInformer(snapv1.SchemeGroupVersion.WithResource(k.resource), "")
		if err != nil {
			return nil, err
		}
		inf.BelongsTo(component)
		f.InformerFor(k.obj, func(snapclientset.Interface, time.Duration) cache.SharedIndexInformer { return inf })
	}
	return f, nil
}

// startControlPlane makes the controllers and sidecars, each with its own
// client and informers as the real processes have, and gives their queues
// to the loop.
func (c *Cluster) startControlPlane(ctrlEndpoint string) error {
	provConn, err := c.dial(ctrlEndpoint, "external-provisioner")
	if err != nil {
		return err
	}
	attConn, err := c.dial(ctrlEndpoint, "external-attacher")
	if err != nil {
		return err
	}
	resConn, err := c.dial(ctrlEndpoint, "external-resizer")
	if err != nil {
		return err
	}
	// Each sidecar takes its driver's name from GetPluginInfo when it
	// starts, as the real ones do: that name, not a flag, is the
	// provisioner and attacher name, and the kubelet's plugin directory.
	for _, conn := range []*csiclient.Conn{provConn, attConn} {
		name, err := c.pluginName(conn)
		if err != nil {
			return err
		}
		c.cfg.DriverName = name
	}
	drv := c.cfg.DriverName
	// The csi-snapshotter runs beside a driver that can take snapshots:
	// the real one exits at start when the driver cannot.
	var snapConn *csiclient.Conn
	if !slices.Contains(c.cfg.Without, "csi-snapshotter") {
		if snapConn, err = c.dial(ctrlEndpoint, "csi-snapshotter"); err != nil {
			return err
		}
		ok, err := c.canSnapshot(snapConn)
		if err != nil {
			return err
		}
		if !ok {
			snapConn = nil
		}
	}
	component := func(userAgent string, build func(kubernetes.Interface, informers.SharedInformerFactory) []controller.Worker) error {
		if slices.Contains(c.cfg.Without, userAgent) {
			return nil
		}
		cs := c.client(userAgent)
		f, err := c.informers(userAgent, cs)
		if err != nil {
			return err
		}
		c.loop.AddWorkers(build(cs, f)...)
		return nil
	}
	snapshotComponent := func(userAgent string, build func(kubernetes.Interface, informers.SharedInformerFactory,
		snapclientset.Interface, snapinformers.SharedInformerFactory) []controller.Worker) error {
		if slices.Contains(c.cfg.Without, userAgent) {
			return nil
		}
		cs, scs := c.client(userAgent), c.snapshotClient(userAgent)
		f, err := c.informers(userAgent, cs)
		if err != nil {
			return err
		}
		sf, err := c.snapshotInformers(userAgent, scs)
		if err != nil {
			return err
		}
		c.loop.AddWorkers(build(cs, f, scs, sf)...)
		return nil
	}
	return errors.Join(
		component("persistentvolume-binder", func(cs kubernetes.Interface, f informers.SharedInformerFactory) []controller.Worker {
			pv := pvcontroller.New(cs, f, c.rt)
			c.loop.Every(pvcontroller.SyncPeriod, pv.Resync)
			return pv.Workers()
		}),
		component("attachdetach-controller", func(cs kubernetes.Interface, f informers.SharedInformerFactory) []controller.Worker {
			c.attachDetach = attachdetach.New(cs, f, c.rt)
			c.loop.Every(attachdetach.ReconcilerSyncPeriod, c.attachDetach.SyncStates)
			return c.attachDetach.Workers()
		}),
		component("default-scheduler", func(cs kubernetes.Interface, f informers.SharedInformerFactory) []controller.Worker {
			return scheduler.New(cs, f, c.rt).Workers()
		}),
		component("external-provisioner", func(cs kubernetes.Interface, f informers.SharedInformerFactory) []controller.Worker {
			p := provisioner.New(provisioner.Config{DriverName: drv, Identity: provConn.Identity,
				Snapshots: c.snapshotClient("external-provisioner")}, cs, f, provConn.Controller, c.rt)
			c.loop.Every(provisioner.CapacityPollInterval*time.Second, p.PollCapacity)
			return p.Workers()
		}),
		component("node-controller", func(cs kubernetes.Interface, f informers.SharedInformerFactory) []controller.Worker {
			nl := nodelifecycle.New(nodelifecycle.Clients{NodeLifecycle: cs,
				TaintEviction: c.client("taint-eviction-controller"), PodGC: c.client("pod-garbage-collector")}, f, c.rt)
			c.nodeLifecycle = nl
			c.loop.Every(nodelifecycle.MonitorPeriod, nl.Monitor)
			c.loop.Every(nodelifecycle.PodGCPeriod, nl.CollectGarbage)
			return nl.Workers()
		}),
		component("external-attacher", func(cs kubernetes.Interface, f informers.SharedInformerFactory) []controller.Worker {
			a := attacher.New(attacher.Config{DriverName: drv}, cs, f, attConn.Controller, c.rt)
			c.loop.Every(attacher.ReconcileInterval, a.Reconcile)
			return a.Workers()
		}),
		component("expand-controller", func(cs kubernetes.Interface, f informers.SharedInformerFactory) []controller.Worker {
			return expand.New(cs, f, c.rt).Workers()
		}),
		component(ephemeral.Component, func(cs kubernetes.Interface, f informers.SharedInformerFactory) []controller.Worker {
			return ephemeral.New(cs, f, c.rt).Workers()
		}),
		component("statefulset-controller", func(cs kubernetes.Interface, f informers.SharedInformerFactory) []controller.Worker {
			return statefulset.New(cs, f, c.rt).Workers()
		}),
		component("replicaset-controller", func(cs kubernetes.Interface, f informers.SharedInformerFactory) []controller.Worker {
			return replicaset.New(cs, f, c.rt).Workers()
		}),
		component("deployment-controller", func(cs kubernetes.Interface, f informers.SharedInformerFactory) []controller.Worker {
			return deployment.New(cs, f, c.rt).Workers()
		}),
		component("external-resizer", func(cs kubernetes.Interface, f informers.SharedInformerFactory) []controller.Worker {
			ctx, cancel := context.WithTimeout(context.Background(), c.cfg.StartTimeout)
			defer cancel()
			r, err := resizer.New(ctx, resizer.Config{DriverName: drv}, cs, f, resConn, c.rt)
			if err != nil {
				// The real sidecar exits when the driver cannot expand
				// (the mock driver): no resizer then.
				klog.Background().V(2).Info("external-resizer not started", "err", err)
				return nil
			}
			c.loop.Every(resizer.ResyncPeriod, r.Resync)
			return r.Workers()
		}),
		snapshotComponent("snapshot-controller", func(cs kubernetes.Interface, f informers.SharedInformerFactory,
			scs snapclientset.Interface, sf snapinformers.SharedInformerFactory) []controller.Worker {
			sc := snapshotcontroller.New(cs, scs, f, sf, c.rt)
			c.loop.Every(snapshotcontroller.ResyncPeriod, sc.Resync)
			return sc.Workers()
		}),
		snapshotComponent("csi-snapshotter", func(cs kubernetes.Interface, _ informers.SharedInformerFactory,
			scs snapclientset.Interface, sf snapinformers.SharedInformerFactory) []controller.Worker {
			if snapConn == nil {
				return nil
			}
			sn := snapshotter.New(snapshotter.Config{DriverName: drv}, cs, scs, sf, snapConn.Controller, c.rt)
			c.loop.Every(snapshotter.ResyncPeriod, sn.Resync)
			return sn.Workers()
		}),
	)
}

// canSnapshot asks the controller plugin whether it creates and deletes
// snapshots, as the csi-snapshotter asks when it starts.
func (c *Cluster) canSnapshot(conn *csiclient.Conn) (bool, error) {
	ctx, cancel := csiclient.WithTimeout(context.Background(), c.cfg.StartTimeout)
	defer cancel()
	caps, err := csiclient.ControllerCapabilities(ctx, conn.Controller)
	if err != nil {
		return false, fmt.Errorf("controller plugin: %w", err)
	}
	return caps[csi.ControllerServiceCapability_RPC_CREATE_DELETE_SNAPSHOT], nil
}

// pluginName asks the controller plugin for its name.
func (c *Cluster) pluginName(conn *csiclient.Conn) (string, error) {
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

// kubeletInformers returns a kubelet's informer factory. A real kubelet
// watches its own pods and its own Node, and reads claims, volumes and
// attachments by GETs when its volume manager needs them; the simulated
// one watches its pods and its Node and reads the rest from caches all
// simulated kubelets share (c.nodeCaches), which the loop keeps as
// current as a GET would be. Each kubelet still registers its own
// handlers on them. With a hundred nodes, a write then updates one cache
// instead of a hundred.
func (c *Cluster) kubeletInformers(node string, cs kubernetes.Interface) (informers.SharedInformerFactory, error) {
	f := informers.NewSharedInformerFactory(cs, 0)
	component := fault.KubeletComponent(node)
	for _, k := range []struct {
		obj      runtime.Object
		gvr      schema.GroupVersionResource
		selector string
	}{
		{&corev1.Pod{}, corev1.SchemeGroupVersion.WithResource("pods"), "spec.nodeName=" + node},
		{&corev1.Node{}, corev1.SchemeGroupVersion.WithResource("nodes"), "metadata.name=" + node},
	} {
		inf, err := c.loop.NewInformer(k.gvr, k.selector)
		if err != nil {
			return nil, err
		}
		inf.BelongsTo(component)
		f.InformerFor(k.obj, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer { return inf })
	}
	for _, k := range []struct {
		obj runtime.Object
		gvr schema.GroupVersionResource
	}{
		{&corev1.PersistentVolumeClaim{}, corev1.SchemeGroupVersion.WithResource("persistentvolumeclaims")},
		{&corev1.PersistentVolume{}, corev1.SchemeGroupVersion.WithResource("persistentvolumes")},
		{&storagev1.CSIDriver{}, storagev1.SchemeGroupVersion.WithResource("csidrivers")},
		{&storagev1.VolumeAttachment{}, storagev1.SchemeGroupVersion.WithResource("volumeattachments")},
	} {
		inf := c.nodeCaches[k.gvr]
		if inf == nil {
			var err error
			if inf, err = c.loop.NewInformer(k.gvr, ""); err != nil {
				return nil, err
			}
			inf.BelongsTo(nodeCachesComponent)
			c.nodeCaches[k.gvr] = inf
		}
		f.InformerFor(k.obj, func(kubernetes.Interface, time.Duration) cache.SharedIndexInformer { return inf })
	}
	return f, nil
}

// nodeCachesComponent owns the caches the simulated kubelets share.
const nodeCachesComponent = "kubelets"

func (c *Cluster) startKubelet(ctx context.Context, node, endpoint string) error {
	agent := fault.KubeletComponent(node)
	conn, err := c.dial(endpoint, agent)
	if err != nil {
		return err
	}
	cs := c.client(agent)
	f, err := c.kubeletInformers(node, cs)
	if err != nil {
		return err
	}
	labels := map[string]string{}
	if zone := c.cfg.Zones[node]; zone != "" {
		labels[corev1.LabelTopologyZone] = zone
	}
	nodeIP, podSubnet := kubelet.NodeNetwork(slices.Index(c.cfg.Nodes, node))
	k := kubelet.New(kubelet.Config{NodeName: node, DriverName: c.cfg.DriverName, Dir: c.root.Path("nodes", node, "kubelet"),
		SkipMountCheck: c.cfg.Mock || c.cfg.NoMounts, Labels: labels, Recorder: c.rec, NodeIP: nodeIP, PodSubnet: podSubnet},
		cs, f, f, conn.Node, c.rt)
	if err := k.Register(ctx, conn.Identity); err != nil {
		return err
	}
	c.loop.AddWorkers(k.Workers()...)
	c.loop.Every(kubelet.HeartbeatInterval, k.Heartbeat)
	c.loop.Every(kubelet.SyncFrequency, k.Resync)
	c.loop.Every(kubelet.VolumeStatsPeriod, k.CollectVolumeStats)
	if parts := c.nodes[node]; parts != nil {
		parts.kubelet = k
		parts.identity = conn.Identity
	}
	return nil
}

// RunUntil runs the simulation until cond holds or timeout of virtual time
// has passed (then it returns context.DeadlineExceeded).
//
// A scenario's conditions look only at API objects and the timeline, so
// cond is asked again only when either has changed since it last said no:
// the loop goes quiet after every timer (heartbeats, resyncs), and asking
// each time would cost a List and a decode per tick of a long wait.
func (c *Cluster) RunUntil(ctx context.Context, timeout time.Duration, cond func() (bool, error)) error {
	lastRV, lastLen := "", -1
	return c.loop.RunUntil(ctx, timeout, func() (bool, error) {
		rv, n := c.api.ResourceVersion(), c.rec.Len()
		if rv == lastRV && n == lastLen {
			return false, nil
		}
		done, err := cond()
		lastRV, lastLen = rv, n
		return done, err
	})
}

// RunFor runs the simulation for d of virtual time.
func (c *Cluster) RunFor(ctx context.Context, d time.Duration) error { return c.loop.RunFor(ctx, d) }

// Clock is the cluster's virtual clock.
func (c *Cluster) Clock() *testingclock.FakeClock { return c.clock }

// RESTConfig is how a scenario (or any client) reaches the API server.
func (c *Cluster) RESTConfig() *rest.Config { return c.api.RESTConfig("scenario") }

// API is the cluster's API server, e.g. to serve it over HTTP.
func (c *Cluster) API() *fakekube.Server { return c.api }

// CSICalls are the CSI calls made so far, in order.
func (c *Cluster) CSICalls() []trace.Entry { return c.rec.Filter(trace.CSI) }

// Recorder is the cluster's timeline.
func (c *Cluster) Recorder() *trace.Recorder { return c.rec }

// ControllerEndpoint is the fault proxy in front of the controller plugin, for a real
// sidecar that takes a simulated one's place.
func (c *Cluster) ControllerEndpoint() string {
	return "unix://" + c.root.Path("controller", "faultproxy.sock")
}

// DriverName is the name of the cluster's CSI driver.
func (c *Cluster) DriverName() string { return c.cfg.DriverName }

// Root is the run's temporary directory.
func (c *Cluster) Root() string { return c.root.Path() }

// Close stops every component and driver, unmounts everything under the
// run's root and removes it. It is safe to call more than once.
func (c *Cluster) Close() error {
	if c.closed {
		return nil
	}
	c.closed = true
	c.cancel()
	c.wg.Wait()
	// Parked calls are let go first, so nothing waits for the loop.
	c.loop.Stop()
	var errs []error
	for _, conn := range c.conns {
		errs = append(errs, conn.Close())
	}
	for _, pl := range c.plugins {
		if pl.proxy != nil {
			errs = append(errs, pl.proxy.Stop())
		}
		if pl.mockServer != nil {
			errs = append(errs, pl.mockServer.Stop())
		}
	}
	for _, p := range c.drivers {
		errs = append(errs, p.Stop(5*time.Second))
	}
	errs = append(errs, c.root.Close())
	return errors.Join(errs...)
}
