package controller

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	snapclientset "github.com/kubernetes-csi/external-snapshotter/client/v8/clientset/versioned"
	snapinformers "github.com/kubernetes-csi/external-snapshotter/client/v8/informers/externalversions"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/timing"
)

// Component is a started component as whatever runs it sees it: the
// workers that take its queues' keys and the jobs it runs on a timer. The
// simulation's loop runs it (sim/cluster), and so does RunComponent on
// goroutines, so a component says once what it runs.
type Component struct {
	Workers  []Worker
	Periodic []Periodic
	// Restart, if set, makes the component forget what it keeps in
	// memory and rebuild it from the API, as its process starting again
	// does, while its queues, workers and periodic jobs go on: what a
	// kube-controller-manager restart does to its controllers with state.
	Restart func()
}

// Periodic is a job a component runs every Every, as the real component
// runs it with wait.Until or an informer's resync period: a resync, a
// reconciler's sync, a heartbeat.
type Periodic struct {
	Every time.Duration
	Run   func(context.Context)
}

// RunComponent runs c on goroutines until ctx is done: each periodic job
// with wait.UntilWithContext (first at once, then every period after the
// last run ended) and each worker with one goroutine.
func RunComponent(ctx context.Context, c Component) {
	for _, p := range c.Periodic {
		go wait.UntilWithContext(ctx, p.Run, p.Every)
	}
	RunAll(ctx, c.Workers...)
}

// Start starts a component from what its process would have (Deps): the
// constructor each simulated component's package declares, which a
// cluster calls from its table of components, at start and again when the
// component restarts.
type Start func(ctx context.Context, d Deps) (Component, error)

// Check is a sidecar's start-up check, as the real sidecar's main runs it
// before it starts anything: it asks the driver what the sidecar needs to
// know, keeps the answers in d for Start, and returns an error wrapping
// ErrExitsAtStart when the driver lacks what the sidecar serves (other
// errors fail the cluster's start).
type Check func(ctx context.Context, d *Driver) error

// ErrExitsAtStart says that a component's start-up check failed, as the
// real component's main does before it runs anything, e.g. a
// csi-snapshotter beside a driver that takes no snapshots: the cluster
// runs without it.
var ErrExitsAtStart = errors.New("exits at start")

// CheckFailed is what a Check makes of a start-up call that failed: the
// real sidecar's main exits on any error, and a driver that does not
// serve the call at all (Unimplemented: a driver without the service)
// makes it exit for good, so the cluster runs without it
// (ErrExitsAtStart); any other error, a driver that does not answer as it
// should, fails the cluster's start, where it shows.
func CheckFailed(err error) error {
	if status.Code(err) == codes.Unimplemented {
		return fmt.Errorf("%w: %w", ErrExitsAtStart, err)
	}
	return err
}

// Deps is what a component is started with: what a real one's process has
// from its kubeconfig, its flags and its driver's socket. A component
// uses the parts it needs; the cluster fills those its table says.
type Deps struct {
	// Client writes as the component: its user agent names it in the
	// timeline.
	Client kubernetes.Interface
	// Informers serves the core kinds (and the apps kinds to the workload
	// controllers) from informers the runner feeds.
	Informers informers.SharedInformerFactory
	// Snapshots and SnapshotInformers are the snapshot kinds, for the
	// components that handle them; nil otherwise.
	Snapshots         snapclientset.Interface
	SnapshotInformers snapinformers.SharedInformerFactory
	// ClientFor makes a client that writes as another user agent: the
	// helpers a process runs beside its main controller under their own
	// names (kube-controller-manager's taint eviction and pod GC).
	ClientFor func(userAgent string) kubernetes.Interface
	// Driver is the CSI driver a sidecar serves; zero for the others.
	Driver Driver
	// Flags are a sidecar's settings from its container's flags in the
	// driver's own manifests; zero (the real defaults) without them.
	Flags SidecarFlags
	// Runtime is the clock, queues and event recorders to run on.
	Runtime Runtime
	// Timing is the cluster's timing of node loss (package timing): the
	// node lifecycle and attach/detach controllers take their periods
	// and waits from it, as the real ones from their flags.
	Timing timing.Timing
}

// Driver is the CSI driver a sidecar serves: the name it answered
// GetPluginInfo with, and the services of its controller plugin over a
// connection of the sidecar's own, so that its calls are recorded as the
// sidecar's.
type Driver struct {
	Name       string
	Identity   csi.IdentityClient
	Controller csi.ControllerClient
	// GroupController is the controller plugin's GroupController
	// service, on the same connection.
	GroupController csi.GroupControllerClient
	Node            csi.NodeClient
	// Capabilities are what the sidecar's Check asked the driver at start,
	// as the real sidecar's main asks before it starts anything; what it
	// does not ask is nil. Start decides from them (the external-attacher's
	// trivial handler, the external-resizer's trivial resizer...).
	Capabilities driverinfo.Capabilities
}
