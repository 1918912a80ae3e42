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
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/csisim/csisim/fakekube"
	"github.com/csisim/csisim/runroot"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/loop"
	"github.com/csisim/csisim/sim/unmodelled"
	"github.com/csisim/csisim/trace"
)

// Cluster is a running simulated cluster. It assembles its parts — the
// driver's plugins (driver.go), the components' clients (clients.go), the
// control plane from its table (components.go) and the nodes
// (kubelets.go) — and runs them on its loop.
type Cluster struct {
	cfg   Config
	root  *runroot.Root
	api   *fakekube.Server
	clock *testingclock.FakeClock
	loop  *loop.Loop
	rt    controller.Runtime
	rec   *trace.Recorder
	// driver is the first driver, the one under test; drivers are all
	// of them, the first first (drivers.go).
	driver     *driver
	drivers    []*driver
	clients    *clients
	components registry
	nodes      map[string]*nodeParts // what makes up each node, for faults
	// nodesMu guards nodes against the API server's node proxy, which
	// reads it from its own goroutines (nodeproxy.go).
	nodesMu sync.Mutex
	// faultBy is who injects the fault being injected, the actor of its
	// FAULT entry: the scenario, or a person with csisim fault
	// (InjectFaultLive).
	faultBy    string
	faultRules int // CSI fault rules added so far, to name them
	cancel     context.CancelFunc
	wg         sync.WaitGroup
	closed     bool
	// busy are the mounts mount-busy holds, let go at the latest by
	// Close (faults_mountbusy.go).
	busy mountHolders
	// refusals is the API server's admission step of what the cluster
	// does not act on (refuse.go).
	refusals *refusals

	// notes are suspicions about the driver's set-up found at the start,
	// for Hints (driverchecks.go); controllerTopology is the topology a
	// split layout's controller process reports as a node, if it does.
	notes              []string
	controllerTopology string
	// deployNotApplied are the objects of Config.Deploy left out, and why.
	deployNotApplied []string
}

// Start brings the cluster up: API server, driver processes, controllers
// and nodes. On error, everything already started is torn down.
func Start(ctx context.Context, cfg Config) (c *Cluster, err error) {
	if err := cfg.complete(); err != nil {
		return nil, err
	}
	root, err := runroot.New("run")
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancel(context.Background())
	c = &Cluster{cfg: cfg, root: root, cancel: cancel, nodes: map[string]*nodeParts{}, refusals: &refusals{daemonSets: cfg.DaemonSets}}
	defer func() {
		if err != nil {
			err = errors.Join(err, c.Close())
			c = nil
		}
	}()
	c.startLoop()
	for _, d := range c.drivers {
		if err := c.startDriver(ctx, d); err != nil {
			return c, err
		}
	}
	if err := c.startControlPlane(); err != nil {
		return c, err
	}
	for _, node := range cfg.Nodes {
		if err := c.startNode(ctx, node); err != nil {
			return c, err
		}
	}
	if err := c.checkDriverLayout(ctx); err != nil {
		return c, err
	}
	if cfg.Deploy != nil {
		if err := c.refusals.applying(func() error { return c.applyDeploy(ctx) }); err != nil {
			return c, err
		}
		if err := c.startPluginWatcher(); err != nil {
			return c, err
		}
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

// startLoop makes the clock, the timeline, the API server and the loop
// that runs everything, and the parts that hang on them.
func (c *Cluster) startLoop() {
	// A simulated run's clock starts at a fixed instant, so that the same
	// seed gives the same objects down to their timestamps (the JSON and
	// HTML timelines carry them); a realtime one follows the wall clock,
	// from behind it when it runs faster (loop.RealtimeLead).
	c.clock = testingclock.NewFakeClock(virtualEpoch)
	if c.cfg.Realtime {
		c.clock.SetTime(time.Now().Add(-loop.RealtimeLead(c.cfg.Speed)).Truncate(time.Second))
	}
	c.rec = trace.New(c.clock)
	if c.cfg.OnEntry != nil {
		c.rec.Subscribe(c.cfg.OnEntry)
	}
	c.api = fakekube.New(fakekube.Options{Seed: c.cfg.Seed, Clock: c.clock, EventTTL: c.cfg.EventTTL, DefaultTolerationSeconds: c.cfg.Timing.TolerationSeconds(), OnWrite: func(w fakekube.Write) {
		c.rec.Add(DescribeWrite(w))
		if c.loop != nil { // the server's own first writes come before the loop; informers fill from the store
			c.loop.Observe(w)
		}
	}, OnRefused: func(w fakekube.Write, err error) { c.rec.Add(describeRefused(w, err)) },
		ContainerLogs: c.containerLogs, NodeProxy: c.nodeProxy,
		// Slow writes and a client's wait for Retry-After cost virtual
		// time: the job that made the request parks on the loop's clock.
		Wait: func(d time.Duration) {
			wait, _ := c.loop.Park(d)
			wait()
		},
		Harness: []string{harnessActor},
		// What the simulated components do not act on is refused, not
		// ignored (package unmodelled; refuse.go).
		Refuse: c.refusals.check})
	c.loop = loop.New(c.api, c.clock, c.cfg.Seed)
	c.rt = controller.Runtime{
		Clock:               c.clock,
		NewQueue:            c.loop.NewQueue,
		NewQueueWithBackoff: c.loop.NewQueueWithBackoff,
		NewEventRecorder: func(client kubernetes.Interface, component, host string) (record.EventRecorder, func()) {
			return controller.NewSyncEventRecorder(client, component, host, c.clock, c.loop.After, c.loop.Jitter), func() {}
		},
	}
	c.newDrivers()
	c.clients = newClients(c.api, c.loop, c.rec)
	c.components = registry{loop: c.loop}
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

// Relisting names the components' informers whose watch an API fault
// ended and that have not listed again yet (scenarios.Relister).
func (c *Cluster) Relisting() []string { return c.loop.Relisting() }

// Clock is the cluster's virtual clock.
func (c *Cluster) Clock() *testingclock.FakeClock { return c.clock }

// RESTConfig is how a scenario (or any client) reaches the API server.
func (c *Cluster) RESTConfig() *rest.Config { return c.api.RESTConfig(harnessActor) }

// harnessActor is the user agent of the scenario's own client, which
// observes the cluster from outside: the API server faults leave it alone,
// as on a real control plane, where it talks to kube-apiserver past the
// proxy that injects them.
const harnessActor = "scenario"

// API is the cluster's API server, e.g. to serve it over HTTP.
func (c *Cluster) API() *fakekube.Server { return c.api }

// CSICalls are the CSI calls made so far, in order.
func (c *Cluster) CSICalls() []trace.Entry { return c.rec.Filter(trace.CSI) }

// RefuseManifest is what the simulated cluster would refuse of an object
// a scenario applies (package unmodelled), for the scenario to refuse
// before it runs (scenarios.ManifestRefuser).
func (c *Cluster) RefuseManifest(obj map[string]any) field.ErrorList {
	return c.refusals.dropKind(obj, unmodelled.Errors(obj, nil))
}

// Recorder is the cluster's timeline.
func (c *Cluster) Recorder() *trace.Recorder { return c.rec }

// ControllerEndpoint is the fault proxy in front of the controller plugin, for a real
// sidecar that takes a simulated one's place.
func (c *Cluster) ControllerEndpoint() string { return c.driver.controllerEndpoint() }

// DriverName is the name of the cluster's (first) CSI driver.
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
	// The mounts a mount-busy holds go before the drivers and the run's
	// root unmount them.
	errs := []error{c.busy.closeAll(), c.clients.close()}
	for _, d := range c.drivers {
		errs = append(errs, d.stop())
	}
	return errors.Join(append(errs, c.root.Close())...)
}
