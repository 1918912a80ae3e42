// Package cluster assembles a simulated cluster: the in-process API server,
// the control-plane components, one kubelet per node, and real CSI driver
// processes (one controller plugin, one node plugin per node) reached only
// over gRPC. Everything lives under one temporary root that Close removes,
// mounts included.
package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/hostpath"
	"github.com/csisim/csisim/drivers/launch"
	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/runroot"
	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/attacher"
	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/kubelet"
	"github.com/csisim/csisim/sim/provisioner"
	"github.com/csisim/csisim/sim/pvcontroller"
	"github.com/csisim/csisim/sim/scheduler"
	"github.com/csisim/csisim/trace"
)

// Config describes the cluster to start. The zero value is one node with
// csisim's own driver.
type Config struct {
	// Nodes are the node names; default ["node-1"].
	Nodes []string
	// DriverName is the CSI driver's name; default hostpath.csisim.io.
	DriverName string
	// Driver is how to start a driver plugin, for the controller plugin
	// and for each node's; the zero value runs csisim's own driver from
	// DriverBinary, in controller and node modes.
	Driver launch.Template
	// DriverBinary is the csisim binary for the default driver template;
	// default: this executable.
	DriverBinary string
	// Seed makes UIDs and generated names reproducible.
	Seed uint64
	// Recorder receives the timeline; default: a new one.
	Recorder *trace.Recorder
	// DriverLog receives the driver processes' output; default: discarded.
	DriverLog io.Writer
	// StartTimeout bounds how long a driver may take to become ready.
	StartTimeout time.Duration
}

// Cluster is a running simulated cluster.
type Cluster struct {
	cfg     Config
	root    *runroot.Root
	api     *fakekube.Server
	rec     *trace.Recorder
	drivers []*launch.Process
	conns   []*csiclient.Conn
	cancel  context.CancelFunc
	wg      sync.WaitGroup
	closed  bool
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
	if cfg.Recorder == nil {
		cfg.Recorder = trace.New(clock.RealClock{})
	}
	if cfg.StartTimeout == 0 {
		cfg.StartTimeout = 30 * time.Second
	}
	root, err := runroot.New("run")
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c = &Cluster{cfg: cfg, root: root, rec: cfg.Recorder, cancel: cancel}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
			c = nil
		}
	}()
	c.api = fakekube.New(fakekube.Options{Seed: cfg.Seed, OnWrite: func(w fakekube.Write) { c.rec.Add(describeWrite(w)) }})

	ctrlEndpoint, err := c.startDriver(ctx, "controller", "", "controller")
	if err != nil {
		return c, err
	}
	if err := c.startControlPlane(runCtx, ctrlEndpoint); err != nil {
		return c, err
	}
	for _, node := range cfg.Nodes {
		endpoint, err := c.startDriver(ctx, "node", node, "node "+node)
		if err != nil {
			return c, err
		}
		if err := c.startKubelet(ctx, runCtx, node, endpoint); err != nil {
			return c, err
		}
	}
	return c, nil
}

// startDriver launches one driver plugin, waits until it answers Probe and
// returns its endpoint.
func (c *Cluster) startDriver(ctx context.Context, mode, node, name string) (string, error) {
	tmpl := c.cfg.Driver
	if tmpl.Path == "" {
		bin := c.cfg.DriverBinary
		if bin == "" {
			exe, err := os.Executable()
			if err != nil {
				return "", fmt.Errorf("finding the csisim binary for the driver: %w", err)
			}
			bin = exe
		}
		tmpl = launch.OurDriver(bin, mode, c.cfg.DriverName)
	}
	var socket, stateDir string
	if mode == "controller" {
		socket, stateDir = c.root.Path("controller", "csi.sock"), c.root.Path("controller", "state")
	} else {
		// Where node-driver-registrar's driver socket lives on a real node.
		socket = c.root.Path("nodes", node, "kubelet", "plugins", c.cfg.DriverName, "csi.sock")
		stateDir = c.root.Path("nodes", node, "driver-state")
	}
	for _, dir := range []string{stateDir, filepath.Dir(socket), c.root.Path("storage")} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			return "", fmt.Errorf("preparing %s: %w", dir, err)
		}
	}
	nodeID := node
	if mode == "controller" {
		// A third-party driver usually serves every service in one
		// process and insists on a node ID even as the controller plugin.
		nodeID = "controller"
	}
	vars := launch.Vars{Endpoint: "unix://" + socket, NodeID: nodeID, StateDir: stateDir, Root: c.root.Path("storage")}
	p, err := launch.Start(context.Background(), "driver "+name, tmpl, vars, c.cfg.DriverLog)
	if err != nil {
		return "", err
	}
	c.drivers = append(c.drivers, p)
	readyCtx, cancel := context.WithTimeout(ctx, c.cfg.StartTimeout)
	defer cancel()
	if err := p.WaitReady(readyCtx); err != nil {
		return "", fmt.Errorf("driver %s did not become ready: %w", name, err)
	}
	return vars.Endpoint, nil
}

// dial connects actor to a driver; its calls are recorded under actor.
func (c *Cluster) dial(endpoint, actor string) (*csiclient.Conn, error) {
	conn, err := csiclient.Dial(endpoint, actor, c.rec, nil)
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

func (c *Cluster) run(ctx context.Context, factories []informers.SharedInformerFactory, run func(context.Context)) {
	for _, f := range factories {
		f.Start(ctx.Done())
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		run(ctx)
	}()
}

// startControlPlane starts the controllers and sidecars, each with its own
// client and informers as the real processes have.
func (c *Cluster) startControlPlane(ctx context.Context, ctrlEndpoint string) error {
	drv := c.cfg.DriverName
	provConn, err := c.dial(ctrlEndpoint, "external-provisioner")
	if err != nil {
		return err
	}
	attConn, err := c.dial(ctrlEndpoint, "external-attacher")
	if err != nil {
		return err
	}
	{
		cs := c.client("persistentvolume-binder")
		f := informers.NewSharedInformerFactory(cs, 0)
		pv := pvcontroller.New(cs, f)
		c.run(ctx, []informers.SharedInformerFactory{f}, pv.Run)
	}
	{
		cs := c.client("attachdetach-controller")
		f := informers.NewSharedInformerFactory(cs, 0)
		ad := attachdetach.New(cs, f)
		c.run(ctx, []informers.SharedInformerFactory{f}, ad.Run)
	}
	{
		cs := c.client("default-scheduler")
		f := informers.NewSharedInformerFactory(cs, 0)
		s := scheduler.New(cs, f)
		c.run(ctx, []informers.SharedInformerFactory{f}, s.Run)
	}
	{
		cs := c.client("external-provisioner")
		f := informers.NewSharedInformerFactory(cs, 0)
		p := provisioner.New(provisioner.Config{DriverName: drv}, cs, f, provConn.Controller, time.Now())
		c.run(ctx, []informers.SharedInformerFactory{f}, p.Run)
	}
	{
		cs := c.client("external-attacher")
		f := informers.NewSharedInformerFactory(cs, 0)
		a := attacher.New(attacher.Config{DriverName: drv}, cs, f, attConn.Controller)
		c.run(ctx, []informers.SharedInformerFactory{f}, a.Run)
	}
	return nil
}

func (c *Cluster) startKubelet(ctx, runCtx context.Context, node, endpoint string) error {
	conn, err := c.dial(endpoint, "kubelet:"+node)
	if err != nil {
		return err
	}
	cs := c.client("kubelet:" + node)
	pods := informers.NewSharedInformerFactoryWithOptions(cs, 0,
		informers.WithTweakListOptions(func(o *metav1.ListOptions) { o.FieldSelector = "spec.nodeName=" + node }))
	rest := informers.NewSharedInformerFactory(cs, 0)
	k := kubelet.New(kubelet.Config{NodeName: node, DriverName: c.cfg.DriverName, Dir: c.root.Path("nodes", node, "kubelet")},
		cs, pods, rest, conn.Node)
	if err := k.Register(ctx, conn.Identity); err != nil {
		return err
	}
	c.run(runCtx, []informers.SharedInformerFactory{pods, rest}, k.Run)
	return nil
}

// RESTConfig is how a scenario (or any client) reaches the API server.
func (c *Cluster) RESTConfig() *rest.Config { return c.api.RESTConfig("scenario") }

// API is the cluster's API server, e.g. to serve it over HTTP.
func (c *Cluster) API() *fakekube.Server { return c.api }

// CSICalls are the CSI calls made so far, in order.
func (c *Cluster) CSICalls() []trace.Entry { return c.rec.Filter(trace.CSI) }

// Recorder is the cluster's timeline.
func (c *Cluster) Recorder() *trace.Recorder { return c.rec }

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
	var errs []error
	for _, conn := range c.conns {
		errs = append(errs, conn.Close())
	}
	for _, p := range c.drivers {
		errs = append(errs, p.Stop(5*time.Second))
	}
	errs = append(errs, c.root.Close())
	return errors.Join(errs...)
}
