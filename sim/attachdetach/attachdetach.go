// Package attachdetach is the simulated attach/detach controller of
// kube-controller-manager. For every node whose kubelet lets the controller
// manage attachment, it makes the VolumeAttachments that the node's pods
// need, deletes those no longer needed once the kubelet reports the volume
// unmounted (it leaves node.status.volumesInUse), and reports attached
// volumes in node.status.volumesAttached.
package attachdetach

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/controller"
)

// AnnControllerManagedAttachDetach is set on a Node by its kubelet when the
// controller, not the kubelet, attaches and detaches its volumes.
const AnnControllerManagedAttachDetach = "volumes.kubernetes.io/controller-managed-attach-detach"

// MaxWaitForUnmountDuration is how long the controller waits for an
// unhealthy node's kubelet to unmount a volume before detaching it anyway.
const MaxWaitForUnmountDuration = 6 * time.Minute

// TaintOutOfService marks a node shut down for good: its volumes are
// detached at once (non-graceful node shutdown).
const TaintOutOfService = "node.kubernetes.io/out-of-service"

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

// Controller is the attach/detach controller. Its work queue holds node
// names: each sync reconciles one node's attachments.
type Controller struct {
	client   kubernetes.Interface
	events   record.EventRecorder
	stopRecs func()
	pods     corelisters.PodLister
	nodes    corelisters.NodeLister
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	drivers  storagelisters.CSIDriverLister
	vas      storagelisters.VolumeAttachmentLister
	queue    controller.Queue
	synced   []cache.InformerSynced

	clock clock.PassiveClock

	mu        sync.Mutex
	reported  map[string]bool      // pod UID + volume: SuccessfulAttachVolume sent
	undesired map[string]time.Time // attachment → since when no pod wants it
}

// New wires the controller to the factory's informers.
func New(client kubernetes.Interface, factory informers.SharedInformerFactory, rt controller.Runtime) *Controller {
	events, stop := rt.NewEventRecorder(client, "attachdetach-controller", "")
	c := &Controller{client: client, events: events, stopRecs: stop, queue: rt.NewQueue("attachdetach"), clock: rt.Clock,
		reported: map[string]bool{}, undesired: map[string]time.Time{}}
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
	_, _ = nodeInf.Informer().AddEventHandler(c.handler(func(obj any) []string {
		return []string{obj.(*corev1.Node).Name}
	}))
	_, _ = vaInf.Informer().AddEventHandler(c.handler(func(obj any) []string {
		return []string{obj.(*storagev1.VolumeAttachment).Spec.NodeName}
	}))
	// An attachment that goes may free its volume for another node.
	_, _ = vaInf.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{DeleteFunc: func(any) {
		for _, n := range c.allNodeNames() {
			c.queue.Add(n)
		}
	}})
	// A claim getting bound can make a pod's volume attachable anywhere.
	allNodes := func(any) []string { return c.allNodeNames() }
	_, _ = pvcInf.Informer().AddEventHandler(c.handler(allNodes))
	_, _ = pvInf.Informer().AddEventHandler(c.handler(allNodes))
	c.synced = []cache.InformerSynced{podInf.Informer().HasSynced, nodeInf.Informer().HasSynced, pvcInf.Informer().HasSynced,
		pvInf.Informer().HasSynced, drvInf.Informer().HasSynced, vaInf.Informer().HasSynced}
	return c
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

func (c *Controller) allNodeNames() []string {
	nodes, _ := c.nodes.List(labels.Everything())
	var out []string
	for _, n := range nodes {
		out = append(out, n.Name)
	}
	return out
}

// Run reconciles until ctx is done.
func (c *Controller) Run(ctx context.Context) {
	defer c.stopRecs()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return
	}
	controller.RunAll(ctx, c.Workers()...)
}

// Workers are the controller's queue and sync function.
func (c *Controller) Workers() []controller.Worker {
	return []controller.Worker{{Name: "attachdetach", Queue: c.queue, Sync: c.syncNode}}
}

// wanted is one volume some pod on the node needs attached.
type wanted struct {
	pv     *corev1.PersistentVolume
	driver string
	pods   []*corev1.Pod
}

func (c *Controller) syncNode(ctx context.Context, nodeName string) error {
	node, err := c.nodes.Get(nodeName)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if node.Annotations[AnnControllerManagedAttachDetach] != "true" {
		return nil
	}
	desired, err := c.desiredAttachments(nodeName)
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
	if err := c.detachUnneeded(ctx, node, desired); err != nil {
		return err
	}
	return c.reportAttached(ctx, node)
}

// desiredAttachments maps VolumeAttachment names to the volumes that the
// node's running pods need and whose driver requires attachment.
func (c *Controller) desiredAttachments(nodeName string) (map[string]*wanted, error) {
	pods, err := c.pods.List(labels.Everything())
	if err != nil {
		return nil, err
	}
	desired := map[string]*wanted{}
	for _, pod := range pods {
		if pod.Spec.NodeName != nodeName || pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		// A terminating pod keeps its volumes until the kubelet is done
		// with them, which it reports through volumesInUse.
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim == nil {
				continue
			}
			pv := c.boundVolume(pod.Namespace, v.PersistentVolumeClaim.ClaimName)
			if pv == nil || pv.Spec.CSI == nil || !c.attachRequired(pv.Spec.CSI.Driver) {
				continue
			}
			name := AttachmentName(pv.Spec.CSI.VolumeHandle, pv.Spec.CSI.Driver, nodeName)
			if desired[name] == nil {
				desired[name] = &wanted{pv: pv, driver: pv.Spec.CSI.Driver}
			}
			desired[name].pods = append(desired[name].pods, pod)
		}
	}
	return desired, nil
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
	return pv
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

func (c *Controller) attach(ctx context.Context, name string, w *wanted, nodeName string) error {
	va, err := c.vas.Get(name)
	if apierrors.IsNotFound(err) {
		if other := c.attachedElsewhere(w.pv, nodeName); other != "" && !multiAttachable(w.pv) {
			c.reportMultiAttach(w, other)
			return nil // the other attachment's deletion brings the node back
		}
		pvName := w.pv.Name
		va = &storagev1.VolumeAttachment{
			ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: storagev1.VolumeAttachmentSpec{
				Attacher: w.driver,
				NodeName: nodeName,
				Source:   storagev1.VolumeAttachmentSource{PersistentVolumeName: &pvName},
			},
		}
		_, err := c.client.StorageV1().VolumeAttachments().Create(ctx, va, metav1.CreateOptions{})
		if err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("creating VolumeAttachment %s: %w", name, err)
		}
		return nil
	}
	if err != nil {
		return err
	}
	if va.Status.Attached && va.DeletionTimestamp == nil {
		c.reportAttachSucceeded(w)
	}
	return nil
}

func (c *Controller) reportAttachSucceeded(w *wanted) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, pod := range w.pods {
		key := string(pod.UID) + "/" + w.pv.Name
		if !c.reported[key] {
			c.reported[key] = true
			c.events.Eventf(pod, corev1.EventTypeNormal, "SuccessfulAttachVolume", "AttachVolume.Attach succeeded for volume %q", w.pv.Name)
		}
	}
}

// detachUnneeded deletes the node's VolumeAttachments that no pod needs,
// but only once the kubelet no longer lists the volume as in use.
func (c *Controller) detachUnneeded(ctx context.Context, node *corev1.Node, desired map[string]*wanted) error {
	vas, err := c.vas.List(labels.Everything())
	if err != nil {
		return err
	}
	now := c.clock.Now()
	for _, va := range vas {
		if va.Spec.NodeName != node.Name || va.DeletionTimestamp != nil {
			continue
		}
		if desired[va.Name] != nil {
			c.setUndesired(va.Name, false)
			continue
		}
		since := c.setUndesired(va.Name, true)
		if c.inUse(node, va) {
			// The kubelet still mounts it, or says so: wait — unless the node
			// is marked out of service, or is unhealthy and has been for
			// longer than maxWaitForUnmountDuration since the volume was
			// wanted, when the real controller detaches it anyway.
			switch {
			case hasTaint(node, TaintOutOfService) && !nodeReady(node):
			case !nodeReady(node) && !now.Before(since.Add(MaxWaitForUnmountDuration)):
			case !nodeReady(node):
				c.queue.AddAfter(node.Name, since.Add(MaxWaitForUnmountDuration).Sub(now))
				continue
			default:
				continue // the node's status update will bring us back
			}
		}
		err := c.client.StorageV1().VolumeAttachments().Delete(ctx, va.Name, metav1.DeleteOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			return fmt.Errorf("deleting VolumeAttachment %s: %w", va.Name, err)
		}
	}
	return nil
}

func (c *Controller) inUse(node *corev1.Node, va *storagev1.VolumeAttachment) bool {
	if va.Spec.Source.PersistentVolumeName == nil {
		return false
	}
	pv, err := c.volumes.Get(*va.Spec.Source.PersistentVolumeName)
	if err != nil || pv.Spec.CSI == nil {
		return false
	}
	return slices.Contains(node.Status.VolumesInUse, UniqueVolumeName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle))
}

// reportAttached writes node.status.volumesAttached from the node's
// VolumeAttachments that the attacher marked attached.
func (c *Controller) reportAttached(ctx context.Context, node *corev1.Node) error {
	vas, err := c.vas.List(labels.Everything())
	if err != nil {
		return err
	}
	var attached []corev1.AttachedVolume
	for _, va := range vas {
		if va.Spec.NodeName != node.Name || !va.Status.Attached || va.Spec.Source.PersistentVolumeName == nil {
			continue
		}
		pv, err := c.volumes.Get(*va.Spec.Source.PersistentVolumeName)
		if err != nil || pv.Spec.CSI == nil {
			continue
		}
		attached = append(attached, corev1.AttachedVolume{Name: UniqueVolumeName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle)})
	}
	sort.Slice(attached, func(i, j int) bool { return attached[i].Name < attached[j].Name })
	if slices.Equal(attached, node.Status.VolumesAttached) {
		return nil
	}
	// A merge patch of this one field, so it never conflicts with the
	// kubelet's own status updates.
	patch, err := json.Marshal(map[string]any{"status": map[string]any{"volumesAttached": attached}})
	if err != nil {
		return err
	}
	if _, err := c.client.CoreV1().Nodes().Patch(ctx, node.Name, types.MergePatchType, patch, metav1.PatchOptions{}, "status"); err != nil {
		return fmt.Errorf("updating volumesAttached of node %s: %w", node.Name, err)
	}
	return nil
}

// setUndesired records since when an attachment has not been wanted and
// returns that time (zero when it is wanted).
func (c *Controller) setUndesired(name string, undesired bool) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !undesired {
		delete(c.undesired, name)
		return time.Time{}
	}
	since, ok := c.undesired[name]
	if !ok {
		since = c.clock.Now()
		c.undesired[name] = since
	}
	return since
}

// attachedElsewhere names a node the volume is attached (or being attached)
// to, other than nodeName.
func (c *Controller) attachedElsewhere(pv *corev1.PersistentVolume, nodeName string) string {
	vas, _ := c.vas.List(labels.Everything())
	for _, va := range vas {
		if src := va.Spec.Source.PersistentVolumeName; src != nil && *src == pv.Name && va.Spec.NodeName != nodeName {
			return va.Spec.NodeName
		}
	}
	return ""
}

// multiAttachable: the volume's access modes let it be on several nodes.
func multiAttachable(pv *corev1.PersistentVolume) bool {
	return slices.ContainsFunc(pv.Spec.AccessModes, func(m corev1.PersistentVolumeAccessMode) bool {
		return m == corev1.ReadWriteMany || m == corev1.ReadOnlyMany
	})
}

// reportMultiAttach tells the pods that want the volume why it is not
// attached, in the real controller's words: naming the pods that use it on
// the other node in the same namespace, or saying it is exclusively
// attached.
func (c *Controller) reportMultiAttach(w *wanted, otherNode string) {
	for _, pod := range w.pods {
		var users []string
		pods, _ := c.pods.Pods(pod.Namespace).List(labels.Everything())
		for _, p := range pods {
			if p.Spec.NodeName != otherNode {
				continue
			}
			for _, v := range p.Spec.Volumes {
				if v.PersistentVolumeClaim == nil {
					continue
				}
				if pv := c.boundVolume(p.Namespace, v.PersistentVolumeClaim.ClaimName); pv != nil && pv.Name == w.pv.Name {
					users = append(users, p.Name)
				}
			}
		}
		msg := fmt.Sprintf("Multi-Attach error for volume %q Volume is already exclusively attached to one node and can't be attached to another", w.pv.Name)
		if len(users) > 0 {
			msg = fmt.Sprintf("Multi-Attach error for volume %q Volume is already used by pod(s) %s", w.pv.Name, strings.Join(users, ", "))
		}
		c.events.Event(pod, corev1.EventTypeWarning, "FailedAttachVolume", msg)
	}
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
