// This file is the Cluster: starting it, reading and writing its objects,
// running it, injecting faults. The package doc is in doc.go.

package csisimtest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/csisim/csisim/drivers/profile"
	"github.com/csisim/csisim/fault"
	"github.com/csisim/csisim/scenarios"
	"github.com/csisim/csisim/sim/cluster"
	"github.com/csisim/csisim/sim/clusterprofile"
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
	// SELinuxNodes names the nodes (of node-1, node-2, ...) whose kernel
	// has SELinux enabled; the others have it disabled. On an enabled
	// node a pod's seLinuxOptions make the kubelet mount the volumes of a
	// driver whose CSIDriver says seLinuxMount: true with -o context=...,
	// as a v1.37 kubelet does (a scenario's cluster.seLinux).
	SELinuxNodes []string
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
	// ExtraDrivers are more CSI drivers to run beside Driver, as a real
	// cluster runs a block driver beside a file driver: each a profile
	// csisim ships started under a name of its own, with its own
	// sidecars and a node plugin on every node, and (unless
	// NoDriverObjects) its CSIDriver and a StorageClass named after it.
	ExtraDrivers []ExtraDriver
	// Deploy is the driver's own deployment manifests (a file, or a
	// directory's .yaml/.yml/.json files in name order), as csisim run
	// --deploy takes them: applied in order when the cluster starts, its
	// node DaemonSet placing the node plugin (the driver registers on a
	// node only while the DaemonSet's pod there runs), its CSIDriver and
	// StorageClasses replacing the ones Start would make from the profile.
	// The profile (Driver) must map the node plugin's image (images:).
	// What csisim does not honour of the manifests is logged.
	Deploy string
	// HealthMonitor runs the external-health-monitor sidecar beside the
	// controller plugin, as a deployment that adds it does (a scenario's
	// cluster.healthMonitor): every 5 minutes of virtual time it asks the
	// driver for its volumes' health (ControllerListVolumeHealth, or
	// ControllerGetVolumeHealth each minute) and records it in the claims'
	// status.healthStatus, which the API server drops as v1.37's does
	// (alpha CSIVolumeHealth gate off). A driver that reports neither
	// health capability makes it exit at start, as the real one does.
	HealthMonitor bool
}

// ExtraDriver is a driver to run beside the one under test: a profile
// csisim ships ("csisim-file", "mock") and the name it runs under.
type ExtraDriver struct {
	Profile, Name string
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
	var deployLog strings.Builder
	if opts.Deploy != "" {
		if err := clusterprofile.Deploy(&cfg, p, opts.Deploy, &deployLog); err != nil {
			return nil, err
		}
	}
	sim, err := cluster.Start(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("starting a cluster with driver profile %s: %w", p.File, err)
	}
	if opts.Deploy != "" {
		clusterprofile.ReportNotApplied(sim, &deployLog)
		t.Logf("%s", strings.TrimSuffix(deployLog.String(), "\n"))
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
		if err := c.installDrivers(p, opts.Deploy == "", opts.ExtraDrivers); err != nil {
			return nil, err
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
// []byte of YAML or JSON, with documents separated by ---) or an Object
// (*corev1.PersistentVolumeClaim..., or *unstructured.Unstructured).
//
// Apply returns every object applied, in order, as the API server stored
// it (with its UID, resourceVersion and defaults), each ready to hand to
// Eventually, Refresh or Delete. A manifest's objects come back typed —
// a Pod as a *corev1.Pod, so objs[1].(*corev1.Pod) — except kinds
// client-go does not know (a CRD's), which come back unstructured. An
// Object handed in is updated in place and returned as itself: hand in an
// *unstructured.Unstructured to get one back.
func (c *Cluster) Apply(objects ...any) []Object {
	c.t.Helper()
	var out []Object
	for i, o := range objects {
		applied, err := c.applyAny(o)
		if err != nil {
			c.t.Fatalf("csisimtest: Apply: object %d: %v", i+1, err)
		}
		out = append(out, applied...)
	}
	return out
}

func (c *Cluster) applyAny(o any) ([]Object, error) {
	switch m := o.(type) {
	case string:
		return c.applyManifest([]byte(m))
	case []byte:
		return c.applyManifest(m)
	case Object:
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
		return []Object{m}, nil
	}
	return nil, fmt.Errorf("cannot apply a %T: want a manifest (string, []byte) or an object with metadata", o)
}

func (c *Cluster) applyManifest(data []byte) ([]Object, error) {
	objs, err := decodeManifest(data)
	if err != nil {
		return nil, err
	}
	var out []Object
	for _, u := range objs {
		stored, err := c.apply(u)
		if err != nil {
			return nil, err
		}
		obj, err := typed(stored)
		if err != nil {
			return nil, err
		}
		out = append(out, obj)
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

// Refresh reads each object again from the cluster into itself, as Apply
// leaves an object it is handed: after it, a claim shows the volume it
// was bound to, a pod the node it runs on and its status. It fails the
// test if an object no longer exists, or has been replaced by a new one
// of the same name (Eventually(obj).Should(BeGone()) waits for that).
func (c *Cluster) Refresh(objects ...Object) {
	c.t.Helper()
	for _, o := range objects {
		if err := c.refresh(o); err != nil {
			c.t.Fatalf("csisimtest: Refresh: %v", err)
		}
	}
}

func (c *Cluster) refresh(o Object) error {
	actual, err := c.handOver(o)
	if err != nil {
		return err
	}
	fresh, err := c.observe(actual.(*Observed))
	if err != nil {
		return err
	}
	if fresh.Object == nil {
		return fmt.Errorf("%s does not exist", fresh.Ref)
	}
	return fromUnstructured(fresh.Object, o)
}

// Node is the Node name as the cluster holds it now: hand it to
// Eventually to wait for it to be Ready, NotReady or tainted.
func (c *Cluster) Node(name string) *corev1.Node {
	c.t.Helper()
	node, err := c.client.CoreV1().Nodes().Get(c.ctx, name, metav1.GetOptions{})
	if err != nil {
		c.t.Fatalf("csisimtest: Node %s (the cluster's nodes are %s): %v", name, strings.Join(c.nodes, ", "), err)
	}
	return node
}

// Delete deletes each object (an Object, as Apply takes and returns them:
// c.Delete(objs...) deletes what Apply applied) as kubectl delete does,
// gracefully: a pod stays, terminating, until its kubelet has stopped it
// and cleaned up its volumes. It does not wait for the
// objects to go (Eventually(obj).Should(BeGone()) does). It fails the
// test if one does not exist.
func (c *Cluster) Delete(objects ...Object) {
	c.t.Helper()
	c.delete("Delete", false, objects)
}

// ForceDelete deletes each object at once, with a grace period of 0, as
// kubectl delete --force --grace-period=0 does: a pod goes from the API
// server without waiting for its kubelet — on a lost node, the only way
// it goes — though its containers and mounts may still be there.
// Finalizers still hold an object until their controllers remove them.
// It fails the test if an object does not exist.
func (c *Cluster) ForceDelete(objects ...Object) {
	c.t.Helper()
	c.delete("ForceDelete", true, objects)
}

func (c *Cluster) delete(name string, force bool, objects []Object) {
	c.t.Helper()
	for _, o := range objects {
		ref, err := refFor(o)
		if err != nil {
			c.t.Fatalf("csisimtest: %s: %v", name, err)
		}
		found, err := c.objects.Delete(c.ctx, scenarios.ObjectRef{Kind: ref.kind, Name: ref.name}, ref.namespace, force)
		if err != nil {
			c.t.Fatalf("csisimtest: %s %s: %v", name, ref, err)
		}
		if !found {
			c.t.Fatalf("csisimtest: %s %s: it does not exist", name, ref)
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
