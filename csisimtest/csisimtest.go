// Package csisimtest runs a simulated Kubernetes cluster with a real CSI
// driver inside a Go test, as net/http/httptest runs an HTTP server: a
// driver repository's Ginkgo suite (or a plain testing.T) starts one per
// spec from a driver profile, talks to it with client-go, injects faults
// and waits on it with Gomega matchers — on virtual time, so a wait of
// minutes costs no wall time and the same seed gives the same run.
//
//	var c *csisimtest.Cluster
//	BeforeEach(func() {
//		c = csisimtest.Start(GinkgoT(), csisimtest.Options{Driver: "csi-test-mock", Seed: 1})
//	})
//	It("provisions and mounts", func() {
//		objs := c.Apply(claimAndPodYAML)
//		c.Eventually(objs[1]).Should(csisimtest.BeRunning())
//		c.Expect(objs[0]).To(csisimtest.HaveCSICalls("CreateVolume",
//			"ControllerPublishVolume", "NodeStageVolume", "NodePublishVolume"))
//	})
//
// examples/driver-suite is a whole suite.
//
// It wraps the simulator (sim/cluster) and the scenario runner's checks
// (package scenario): the cluster, the faults (package fault), the CSI
// call checks and the invariants are the ones csisim run uses.
//
// Each Cluster lives in its own temporary directory, on its own virtual
// clock, with its API server in process and its drivers on unix sockets
// in that directory: nothing is shared between clusters, so specs run in
// parallel (ginkgo -p) without stepping on each other.
package csisimtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/trace"
)

// TB is what a Cluster needs of its test: *testing.T, *testing.B and
// Ginkgo's GinkgoT() all have it. A failure (a manifest that does not
// apply, an Eventually that times out) is reported with Fatalf, which
// ends the test or spec.
type TB interface {
	Helper()
	TempDir() string
	Context() context.Context
	Cleanup(func())
	Fatalf(format string, args ...any)
	Logf(format string, args ...any)
	Failed() bool
}

// Options say what cluster to start.
type Options struct {
	// Driver is the driver profile: a file ("path/to/profile.yaml") or
	// the name of a profile csisim ships ("mock", "csisim",
	// "csi-test-mock"). Default "mock": csisim's in-memory mock driver.
	Driver string
	// Nodes is how many nodes the cluster has, named node-1, node-2, ...;
	// default 1.
	Nodes int
	// Seed makes the run reproducible: the same seed, the same timeline.
	Seed uint64
	// Timeout is how long Eventually waits, and Consistently watches, in
	// virtual time, unless told otherwise; default DefaultTimeout.
	Timeout time.Duration
	// DriverLog receives the driver processes' output; default: discarded.
	DriverLog io.Writer
	// NoDriverObjects leaves out the CSIDriver and the StorageClass that
	// Start otherwise creates from the profile, for a suite that applies
	// its own.
	NoDriverObjects bool
}

// DefaultTimeout is how long Eventually waits in virtual time by default:
// long enough for the sidecars' and the kubelet's retries with backoff.
const DefaultTimeout = 5 * time.Minute

// timelineOnFailure is how many of the last timeline entries a failed
// test's log shows.
const timelineOnFailure = 200

// Cluster is a running simulated cluster, stopped and removed when its
// test ends.
type Cluster struct {
	t       TB
	ctx     context.Context
	sim     *cluster.Cluster
	profile *profile.Profile
	objects *scenarios.Objects
	client  kubernetes.Interface
	nodes   []string
	timeout time.Duration
}

// Start starts a cluster for t with the driver of opts.Driver, creates
// the driver's CSIDriver and StorageClass (StorageClassName) unless told
// not to, and arranges with t.Cleanup for everything to be stopped and
// removed — processes, sockets, mounts, files — when the test ends. It
// fails the test if the cluster cannot start.
func Start(t TB, opts Options) *Cluster {
	t.Helper()
	c, err := start(t, opts)
	if err != nil {
		t.Fatalf("csisimtest: %v", err)
	}
	return c
}

func start(t TB, opts Options) (*Cluster, error) {
	p, err := loadProfile(opts.Driver)
	if err != nil {
		return nil, err
	}
	ctx := t.Context()
	cfg, err := clusterConfig(ctx, p, opts, t.TempDir())
	if err != nil {
		return nil, err
	}
	sim, err := cluster.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("starting a cluster with driver profile %s: %w", p.File, err)
	}
	c := &Cluster{t: t, ctx: ctx, sim: sim, profile: p, client: kubernetes.NewForConfigOrDie(sim.RESTConfig()),
		nodes: cfg.Nodes, timeout: opts.Timeout}
	if c.timeout <= 0 {
		c.timeout = DefaultTimeout
	}
	t.Cleanup(c.close)
	if c.objects, err = scenarios.NewObjects(sim.RESTConfig(), sim.Clock()); err != nil {
		return nil, err
	}
	if !opts.NoDriverObjects {
		for _, obj := range driverObjects(p.Complete(sim.DriverInfo()), sim.DriverName()) {
			if _, err := c.applyAny(obj); err != nil {
				return nil, fmt.Errorf("installing the driver: %w", err)
			}
		}
	}
	return c, nil
}

// close stops the cluster; a failed test's log gets the end of the
// timeline, which is usually what explains the failure.
func (c *Cluster) close() {
	if c.t.Failed() {
		entries := c.sim.History()
		from := max(0, len(entries)-timelineOnFailure)
		c.t.Logf("csisimtest: the last %d of %d timeline entries:", len(entries)-from, len(entries))
		for _, e := range entries[from:] {
			c.t.Logf("%s", e.String())
		}
		for _, p := range c.sim.Problems() {
			c.t.Logf("csisimtest: %s", p)
		}
	}
	if err := c.sim.Close(); err != nil {
		c.t.Logf("csisimtest: stopping the cluster: %v", err)
	}
}

// Client is a clientset for the cluster's API server. Its writes take
// effect at once; the components react when the cluster runs (Eventually,
// Consistently, RunFor).
func (c *Cluster) Client() kubernetes.Interface { return c.client }

// RESTConfig reaches the cluster's API server, for other clients (dynamic,
// a CRD's typed client).
func (c *Cluster) RESTConfig() *rest.Config { return rest.CopyConfig(c.sim.RESTConfig()) }

// DriverName is the name the driver reports (GetPluginInfo): its
// CSIDriver's name and its StorageClass's provisioner.
func (c *Cluster) DriverName() string { return c.sim.DriverName() }

// StorageClassName is the StorageClass Start created for the driver; it
// is the cluster's default class.
func (c *Cluster) StorageClassName() string { return profile.StorageClassName }

// Profile is the driver profile the cluster runs.
func (c *Cluster) Profile() *profile.Profile { return c.profile }

// Nodes are the cluster's node names.
func (c *Cluster) Nodes() []string { return slices.Clone(c.nodes) }

// Now is the cluster's virtual time.
func (c *Cluster) Now() time.Time { return c.sim.Clock().Now() }

// RunFor runs the cluster for d of virtual time.
func (c *Cluster) RunFor(d time.Duration) {
	c.t.Helper()
	if err := c.sim.RunFor(c.ctx, d); err != nil {
		c.t.Fatalf("csisimtest: running the cluster for %s: %v", d, err)
	}
}

// InjectFault injects f now, as a scenario's fault step does: a CSI error
// or delay on a driver's calls, a driver crash, a node's loss, an API
// conflict... (package fault lists them). It fails the test if the
// cluster cannot inject f.
func (c *Cluster) InjectFault(f fault.Fault) {
	c.t.Helper()
	if err := c.sim.CanInject(f); err != nil {
		c.t.Fatalf("csisimtest: cannot inject %s: %v", f.Describe(), err)
	}
	if err := c.sim.InjectFault(c.ctx, f); err != nil {
		c.t.Fatalf("csisimtest: %s: %v", f.Describe(), err)
	}
}

// CSICalls are the CSI calls the driver has received so far, oldest
// first, as timeline entries (Verb the method, Object the volume ID).
func (c *Cluster) CSICalls() []trace.Entry { return c.sim.CSICalls() }

// Timeline is everything recorded so far — API writes, CSI calls, faults,
// events — oldest first.
func (c *Cluster) Timeline() []trace.Entry { return c.sim.History() }

// Apply creates each object, or replaces it if it exists, as kubectl apply
// and a scenario's apply step do. An object is a manifest (a string or
// []byte of YAML or JSON, with documents separated by ---), a typed object
// (*corev1.PersistentVolumeClaim...) or an *unstructured.Unstructured; a
// typed or unstructured object is updated in place with what the API
// server stored (its UID, resourceVersion, defaults). Apply returns every
// object applied, as stored, in order; each can be handed to Eventually.
func (c *Cluster) Apply(objects ...any) []*unstructured.Unstructured {
	c.t.Helper()
	var out []*unstructured.Unstructured
	for i, o := range objects {
		applied, err := c.applyAny(o)
		if err != nil {
			c.t.Fatalf("csisimtest: Apply: object %d: %v", i+1, err)
		}
		out = append(out, applied...)
	}
	return out
}

func (c *Cluster) applyAny(o any) ([]*unstructured.Unstructured, error) {
	switch m := o.(type) {
	case string:
		return c.applyManifest([]byte(m))
	case []byte:
		return c.applyManifest(m)
	case runtime.Object:
		u, err := toUnstructured(m)
		if err != nil {
			return nil, err
		}
		stored, err := c.apply(u)
		if err != nil {
			return nil, err
		}
		if err := fromUnstructured(stored, m); err != nil {
			return nil, err
		}
		return []*unstructured.Unstructured{stored}, nil
	}
	return nil, fmt.Errorf("cannot apply a %T: want a manifest (string, []byte) or an object", o)
}

func (c *Cluster) applyManifest(data []byte) ([]*unstructured.Unstructured, error) {
	objs, err := decodeManifest(data)
	if err != nil {
		return nil, err
	}
	var out []*unstructured.Unstructured
	for _, u := range objs {
		stored, err := c.apply(u)
		if err != nil {
			return nil, err
		}
		out = append(out, stored)
	}
	return out, nil
}

// apply applies u and reads back what the API server stored.
func (c *Cluster) apply(u *unstructured.Unstructured) (*unstructured.Unstructured, error) {
	ref := refOf(u)
	if _, err := c.objects.Apply(c.ctx, u, u.GetNamespace()); err != nil {
		return nil, fmt.Errorf("apply %s: %w", ref, err)
	}
	stored, err := c.get(ref)
	if err != nil {
		return nil, err
	}
	if stored == nil {
		return nil, fmt.Errorf("apply %s: gone right after it was applied", ref)
	}
	return stored, nil
}

// Delete deletes each object (typed or unstructured, as Apply takes them);
// it does not wait for them to go (Eventually(obj).Should(BeGone()) does).
// It fails the test if one does not exist.
func (c *Cluster) Delete(objects ...runtime.Object) {
	c.t.Helper()
	for _, o := range objects {
		ref, err := refFor(o)
		if err != nil {
			c.t.Fatalf("csisimtest: Delete: %v", err)
		}
		found, err := c.objects.Delete(c.ctx, scenarios.ObjectRef{Kind: ref.kind, Name: ref.name}, ref.namespace)
		if err != nil {
			c.t.Fatalf("csisimtest: delete %s: %v", ref, err)
		}
		if !found {
			c.t.Fatalf("csisimtest: cannot delete %s: it does not exist", ref)
		}
	}
}

// get reads the object ref names; nil if it does not exist.
func (c *Cluster) get(ref objectRef) (*unstructured.Unstructured, error) {
	content, err := c.objects.Get(c.ctx, scenarios.ObjectRef{Kind: ref.kind, Name: ref.name}, ref.namespace)
	if err != nil {
		return nil, fmt.Errorf("get %s: %w", ref, err)
	}
	if content == nil {
		return nil, nil
	}
	return &unstructured.Unstructured{Object: content}, nil
}

// invariants checks every invariant over the run so far, as csisim run
// does after a scenario's steps.
func (c *Cluster) invariants() (*scenarios.InvariantResult, []trace.Entry, error) {
	res, entries, err := scenarios.CheckInvariants(c.ctx, c.sim, nil)
	if err != nil {
		return nil, nil, err
	}
	if res == nil {
		return nil, nil, errors.New("the cluster keeps no history")
	}
	return res, entries, nil
}
