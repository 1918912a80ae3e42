// Package attachdetach is the simulated attach/detach controller of
// kube-controller-manager. For every node whose kubelet lets the controller
// manage attachment, it makes the VolumeAttachments that the node's pods
// need, deletes those no longer needed once the kubelet reports the volume
// unmounted (it leaves node.status.volumesInUse), and reports attached
// volumes in node.status.volumesAttached.
//
// Like the real controller it keeps an actual state of the world in
// memory: the attachments it made, and those it found when it started
// (node.status.volumesAttached of every Node, and every VolumeAttachment,
// the latter as uncertain). A VolumeAttachment made by anyone else while it
// runs is not in that state and is left alone — until the controller
// restarts (Restart), finds it, and detaches it if no pod wants it.
package attachdetach

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"sort"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/migration"
	"github.com/csisim/csisim/sim/volumeutil"
	"github.com/csisim/csisim/timing"
)

// AnnControllerManagedAttachDetach is set on a Node by its kubelet when the
// controller, not the kubelet, attaches and detaches its volumes.
const AnnControllerManagedAttachDetach = "volumes.kubernetes.io/controller-managed-attach-detach"

// MaxWaitForUnmountDuration is how long the controller waits for an
// unhealthy node's kubelet to unmount a volume before detaching it anyway:
// v1.37's, a constant of the real controller; a scenario's cluster.timing
// divides it (Controller.SetTiming).
const MaxWaitForUnmountDuration = timing.DefaultMaxWaitForUnmount

// AttachmentName is the VolumeAttachment name the real controller uses
// (getAttachmentName in pkg/volume/csi): csi-<sha256 of the volume
// handle, driver and node name> — the handle, not the PV name, as a real
// control plane shows.
func AttachmentName(volumeHandle, driver, nodeName string) string {
	return fmt.Sprintf("csi-%x", sha256.Sum256([]byte(volumeHandle+driver+nodeName)))
}

// UniqueVolumeName is the name under which node status lists a CSI volume.
func UniqueVolumeName(driver, volumeHandle string) corev1.UniqueVolumeName {
	return corev1.UniqueVolumeName("kubernetes.io/csi/" + driver + "^" + volumeHandle)
}

// The real controller's attach retry backoff (operation executor's
// exponential backoff: 500 ms doubling to 2 min 2 s).
const (
	attachBackoffStart = 500 * time.Millisecond
	attachBackoffMax   = 2*time.Minute + 2*time.Second
)

// Controller is the attach/detach controller. Its work queue holds node
// names: each sync reconciles one node's attachments.
type Controller struct {
	client   kubernetes.Interface
	events   record.EventRecorder
	stopRecs func()
	// newRecorder makes the event recorder a restarted controller starts
	// with: one that has not seen the events of the one before.
	newRecorder func() (record.EventRecorder, func())
	pods        corelisters.PodLister
	nodes       corelisters.NodeLister
	claims      corelisters.PersistentVolumeClaimLister
	volumes     corelisters.PersistentVolumeLister
	drivers     storagelisters.CSIDriverLister
	vas         storagelisters.VolumeAttachmentLister
	queue       controller.Queue
	// podIndex is the pod informer's cache, with volumeutil.PodsByClaim
	// and volumeutil.PodsByNode.
	podIndex cache.Indexer

	clock clock.PassiveClock
	// maxWaitForUnmount is MaxWaitForUnmountDuration unless SetTiming
	// said otherwise.
	maxWaitForUnmount time.Duration

	mu sync.Mutex
	// The controller's memory, lost when it restarts.
	populated bool
	actual    map[string]*attachment // by VolumeAttachment name
	// onNode and ofVolume index actual by node and by volume (putActual).
	onNode        map[string]map[string]*attachment
	ofVolume      map[corev1.UniqueVolumeName]map[string]*attachment
	attaching     map[string]*operation // attach retries, by VolumeAttachment name
	multiReported map[string]string     // node of a Multi-Attach error reported, by VolumeAttachment name
}

// New wires the controller to the factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, rt controller.Runtime) *Controller {
	newRecorder := func() (record.EventRecorder, func()) {
		return rt.NewEventRecorder(client, "attachdetach-controller", "")
	}
	events, stop := newRecorder()
	c := &Controller{client: client, events: events, stopRecs: stop, newRecorder: newRecorder, queue: rt.NewQueue("attachdetach"), clock: rt.Clock,
		maxWaitForUnmount: MaxWaitForUnmountDuration}
	c.forget()
	podInf := factory.Core().V1().Pods()
	nodeInf := factory.Core().V1().Nodes()
	pvcInf := factory.Core().V1().PersistentVolumeClaims()
	pvInf := factory.Core().V1().PersistentVolumes()
	drvInf := factory.Storage().V1().CSIDrivers()
	vaInf := factory.Storage().V1().VolumeAttachments()
	c.pods, c.nodes, c.claims, c.volumes = podInf.Lister(), nodeInf.Lister(), pvcInf.Lister(), pvInf.Lister()
	c.drivers, c.vas = drvInf.Lister(), vaInf.Lister()

	_, _ = podInf.Informer().AddEventHandler(c.handler(func(obj any) []string {
		return []string{obj.(*corev1.Pod).Spec.NodeName}
	}))
	// Every Node add or update tells which attached volumes its kubelet
	// still uses (status.volumesInUse), whoever made the update, as in the
	// real controller; only then may an unused volume be detached.
	_, _ = nodeInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { c.observeVolumesInUse(obj.(*corev1.Node)) },
		UpdateFunc: func(_, obj any) { c.observeVolumesInUse(obj.(*corev1.Node)) },
	})
	_, _ = nodeInf.Informer().AddEventHandler(c.handler(func(obj any) []string {
		return []string{obj.(*corev1.Node).Name}
	}))
	// The real controller watches attachments only through the operations
	// it runs: an attach waits for status.attached, a detach for the
	// object to go.
	_, _ = vaInf.Informer().AddEventHandler(c.handler(func(obj any) []string {
		return []string{obj.(*storagev1.VolumeAttachment).Spec.NodeName}
	}))
	_, _ = vaInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(obj any) {
		va := controller.Unwrap(obj).(*storagev1.VolumeAttachment)
		c.detached(va.Name)
		// An attachment that goes may free its volume for another node.
		for _, n := range c.nodesWantingAttachment(va) {
			c.queue.Add(n)
		}
	}})
	// A claim getting bound can make a volume attachable for the pods that
	// use it: the real controller's claim handler looks up those pods in
	// its pod index by claim, and so does this one.
	_ = volumeutil.AddIndexes(podInf.Informer(), volumeutil.PodsByClaim, volumeutil.PodsByNode)
	c.podIndex = podInf.Informer().GetIndexer()
	_, _ = pvcInf.Informer().AddEventHandler(c.handler(func(obj any) []string {
		claim := obj.(*corev1.PersistentVolumeClaim)
		return c.nodesUsingClaim(claim.Namespace + "/" + claim.Name)
	}))
	_, _ = pvInf.Informer().AddEventHandler(c.handler(func(obj any) []string {
		if ref := obj.(*corev1.PersistentVolume).Spec.ClaimRef; ref != nil {
			return c.nodesUsingClaim(ref.Namespace + "/" + ref.Name)
		}
		return nil
	}))
	return c
}

// nodesUsingClaim names the nodes of the scheduled pods that use a claim,
// "namespace/name".
func (c *Controller) nodesUsingClaim(claim string) []string {
	pods, err := volumeutil.ByIndex[*corev1.Pod](c.podIndex, volumeutil.PodsByClaim, claim)
	if err != nil {
		return c.allNodeNames()
	}
	var out []string
	for _, p := range pods {
		if p.Spec.NodeName != "" && !slices.Contains(out, p.Spec.NodeName) {
			out = append(out, p.Spec.NodeName)
		}
	}
	sort.Strings(out)
	return out
}

// nodesWantingAttachment names the nodes whose pods may want the volume of
// an attachment that went; every node if the volume is not known.
func (c *Controller) nodesWantingAttachment(va *storagev1.VolumeAttachment) []string {
	if va.Spec.Source.PersistentVolumeName == nil {
		return c.allNodeNames()
	}
	pv, err := c.volumes.Get(*va.Spec.Source.PersistentVolumeName)
	if err != nil {
		return c.allNodeNames()
	}
	if ref := pv.Spec.ClaimRef; ref != nil {
		return c.nodesUsingClaim(ref.Namespace + "/" + ref.Name)
	}
	return nil
}

// nodePods are the pods scheduled to a node.
func (c *Controller) nodePods(node string) ([]*corev1.Pod, error) {
	return volumeutil.ByIndex[*corev1.Pod](c.podIndex, volumeutil.PodsByNode, node)
}

// handler enqueues the nodes an object concerns.
func (c *Controller) handler(nodesOf func(any) []string) cache.ResourceEventHandlerFuncs {
	enqueue := func(obj any) {
		obj = controller.Unwrap(obj)
		for _, n := range nodesOf(obj) {
			if n != "" {
				c.queue.Add(n)
			}
		}
	}
	return cache.ResourceEventHandlerFuncs{AddFunc: enqueue, UpdateFunc: func(_, o any) { enqueue(o) }, DeleteFunc: enqueue}
}

// allNodeNames names every node there is and every node an attachment the
// controller knows is on (a deleted Node's attachments still need work).
func (c *Controller) allNodeNames() []string {
	seen := map[string]bool{}
	nodes, _ := c.nodes.List(labels.Everything())
	for _, n := range nodes {
		seen[n.Name] = true
	}
	c.mu.Lock()
	for _, a := range c.actual {
		seen[a.node] = true
	}
	c.mu.Unlock()
	out := make([]string, 0, len(seen))
	for n := range seen {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Workers are the controller's queue and sync function.
func (c *Controller) Workers() []controller.Worker {
	return []controller.Worker{{Name: "attachdetach", Queue: c.queue, Sync: c.syncNode}}
}

// Restart makes the controller start over as a restarted
// kube-controller-manager does: it forgets what it knew, rebuilds its
// actual state from the Nodes' volumesAttached and the VolumeAttachments
// there are, and looks at every node again.
func (c *Controller) Restart() {
	c.mu.Lock()
	c.forget()
	c.mu.Unlock()
	c.stopRecs()
	c.events, c.stopRecs = c.newRecorder()
	c.populate() // now, so that nodes known only from attachments are looked at too
	for _, n := range c.allNodeNames() {
		c.queue.Add(n)
	}
}

// Start starts the controller in a simulated cluster (controller.Start):
// its worker, its reconciler's sync of the actual state every
// ReconcilerSyncPeriod, and Restart for a kube-controller-manager restart.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	c := New(d.Client, d.Informers, d.Runtime)
	c.SetTiming(d.Timing)
	return controller.Component{Workers: c.Workers(), Periodic: []controller.Periodic{{Every: ReconcilerSyncPeriod, Run: c.SyncStates}},
		Restart: c.Restart}, nil
}

// SetTiming sets the wait for unmount from the cluster's timing.
func (c *Controller) SetTiming(t timing.Timing) { c.maxWaitForUnmount = t.MaxWaitForUnmount() }

// wanted is one volume some pod on the node needs attached.
type wanted struct {
	pv     *corev1.PersistentVolume
	driver string
	// inline: pv is a pod's inline in-tree volume translated to its
	// migrated driver's, which no API server holds.
	inline bool
	pods   []*corev1.Pod
}

// syncNode is one pass of the real controller's reconciler over one node
// (which may be gone): the node's attachments no pod wants are detached,
// then those its pods want are attached, then node.status.volumesAttached
// is brought up to date.
func (c *Controller) syncNode(ctx context.Context, nodeName string) error {
	node, err := c.nodes.Get(nodeName)
	switch {
	case apierrors.IsNotFound(err):
		node = nil // its attachments may still have to go
	case err != nil:
		return err
	}
	c.populate()
	desired := map[string]*wanted{}
	if node == nil || node.Annotations[AnnControllerManagedAttachDetach] == "true" {
		if desired, err = c.desiredAttachments(nodeName); err != nil {
			return err
		}
	}
	// Detaches first, so that a volume moving to another node goes first.
	reported, err := c.detachUnneeded(ctx, nodeName, node, desired)
	if err != nil {
		return err
	}
	// In name order: the same inputs make the same writes in the same order.
	names := make([]string, 0, len(desired))
	for name := range desired {
		names = append(names, name)
	}
	sort.Strings(names)
	for _, name := range names {
		if err := c.attach(ctx, name, desired[name], nodeName); err != nil {
			return err
		}
	}
	c.forgetUnwanted(nodeName, desired)
	if node == nil {
		return nil
	}
	if reported {
		// The status just written is not in the cache yet; the write's
		// own event brings the node back for anything attached since.
		return nil
	}
	return c.reportAttached(ctx, node)
}

// desiredAttachments maps VolumeAttachment names to the volumes that the
// node's running pods need and whose driver requires attachment.
func (c *Controller) desiredAttachments(nodeName string) (map[string]*wanted, error) {
	pods, err := c.nodePods(nodeName)
	if err != nil {
		return nil, err
	}
	desired := map[string]*wanted{}
	for _, pod := range pods {
		if terminated(pod) {
			continue
		}
		// A terminating pod whose containers still run keeps its volumes;
		// the kubelet reports when it is done with them through
		// volumesInUse.
		for i := range pod.Spec.Volumes {
			// Inline csi: volumes are never attached: the CSI plugin's
			// CanAttach says no for the Ephemeral lifecycle mode.
			v := &pod.Spec.Volumes[i]
			pv := c.podVolume(pod, v)
			if pv == nil || pv.Spec.CSI == nil || !c.attachRequired(pv.Spec.CSI.Driver) {
				continue
			}
			name := AttachmentName(pv.Spec.CSI.VolumeHandle, pv.Spec.CSI.Driver, nodeName)
			if desired[name] == nil {
				desired[name] = &wanted{pv: pv, driver: pv.Spec.CSI.Driver, inline: v.PersistentVolumeClaim == nil && v.Ephemeral == nil}
			}
			desired[name].pods = append(desired[name].pods, pod)
		}
	}
	return desired, nil
}

// podVolume is the PV a pod volume's claim is bound to: a
// persistentVolumeClaim's, or a generic ephemeral volume's claim if it was
// made for this pod (the controller's CreateVolumeSpec refuses one the pod
// does not own); an inline in-tree volume of a plugin that migrated as its
// CSI driver's (CreateVolumeSpec translates it; one it cannot translate is
// skipped, as the real ProcessPodVolumes skips it); nil for other volumes.
func (c *Controller) podVolume(pod *corev1.Pod, v *corev1.Volume) *corev1.PersistentVolume {
	if pv, migrated, err := migration.Inline(v, pod.Namespace); migrated {
		if err != nil {
			return nil
		}
		return pv
	}
	name, ok := volumeutil.ClaimName(pod, v)
	if !ok {
		return nil
	}
	if v.Ephemeral != nil {
		claim, err := c.claims.PersistentVolumeClaims(pod.Namespace).Get(name)
		if err != nil || ephemeral.VolumeIsForPod(pod, claim) != nil {
			return nil
		}
	}
	return c.boundVolume(pod.Namespace, name)
}

func (c *Controller) boundVolume(namespace, claimName string) *corev1.PersistentVolume {
	claim, err := c.claims.PersistentVolumeClaims(namespace).Get(claimName)
	if err != nil || claim.Spec.VolumeName == "" {
		return nil
	}
	pv, err := c.volumes.Get(claim.Spec.VolumeName)
	if err != nil {
		return nil
	}
	// An in-tree volume whose plugin migrated is its CSI driver's
	// (CreateVolumeSpec's translateInTreeSpecToCSIOnNodeIfNeeded: v1.37's
	// migrations are all complete, so the node is not asked).
	return migration.CSIPV(pv)
}

// attachRequired follows the CSIDriver object; a driver without one is
// attached, as in Kubernetes.
func (c *Controller) attachRequired(driver string) bool {
	d, err := c.drivers.Get(driver)
	if err != nil || d.Spec.AttachRequired == nil {
		return true
	}
	return *d.Spec.AttachRequired
}

// terminated is the real controller's test for a pod whose volumes are
// no longer wanted: it succeeded or failed, or it is being deleted and none
// of its containers runs.
func terminated(pod *corev1.Pod) bool {
	if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
		return true
	}
	if pod.DeletionTimestamp == nil {
		return false
	}
	return !slices.ContainsFunc(pod.Status.ContainerStatuses, func(s corev1.ContainerStatus) bool {
		return s.State.Terminated == nil && s.State.Waiting == nil
	})
}

// multiAttachable: the volume's access modes let it be on several nodes, or
// it has none, when the real controller lets the driver decide.
func multiAttachable(pv *corev1.PersistentVolume) bool {
	if len(pv.Spec.AccessModes) == 0 {
		return true
	}
	return slices.ContainsFunc(pv.Spec.AccessModes, func(m corev1.PersistentVolumeAccessMode) bool {
		return m == corev1.ReadWriteMany || m == corev1.ReadOnlyMany
	})
}

func hasTaint(node *corev1.Node, key string) bool {
	return slices.ContainsFunc(node.Spec.Taints, func(t corev1.Taint) bool { return t.Key == key })
}

func nodeReady(node *corev1.Node) bool {
	for _, c := range node.Status.Conditions {
		if c.Type == corev1.NodeReady {
			return c.Status == corev1.ConditionTrue
		}
	}
	return false
}
