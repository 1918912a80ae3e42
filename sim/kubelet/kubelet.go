// Package kubelet is a simulated kubelet for one node: it registers the
// Node and its CSI driver (as node-driver-registrar and the plugin watcher
// do), and runs the volume manager for the pods bound to the node — wait
// for attachment, NodeStageVolume, NodePublishVolume, then the pod Runs; on
// deletion NodeUnpublishVolume, NodeUnstageVolume, then the pod goes. There
// are no containers: a pod is Running once its volumes are mounted.
//
// It does what the real kubelet's CSI plugin does in the ways a driver can
// see: the same paths under its directory (paths.go) with vol_data.json
// beside each mount; filesystem volumes staged and published (mount.go),
// with pod information for podInfoOnMount drivers, readonly from the pod's
// claim source, access modes mapped by the node plugin's capabilities and
// fsGroup applied per the CSIDriver's fsGroupPolicy (fsgroup.go) or passed
// as volume_mount_group; block volumes mapped (block.go); failed operations
// retried with the operation executor's per-volume backoff (backoff.go);
// republishing for requiresRepublish drivers on the pod sync period and
// NodeGetVolumeStats on the stats period (periodic.go); node expansion of
// grown volumes, offline as part of mounting and online for mounted ones
// (expand.go); and a restart that rebuilds the actual state from disk
// (reconstruct.go).
package kubelet

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/component-helpers/storage/ephemeral"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/volumeutil"
	"github.com/csisim/csisim/trace"
)

// Version is the kubelet version the Node reports.
const Version = "v1.37.2"

// The kubelet's backoff for failed volume operations (500 ms doubling to
// 2 min 2 s, as its operation executor).
const (
	volumeRetryInitial = 500 * time.Millisecond
	volumeRetryMax     = 2*time.Minute + 2*time.Second
)

// waitRetry is how soon a running pod whose volumes are not ready (a
// restarted kubelet's, setting up again what it found) is tried again.
const waitRetry = 50 * time.Millisecond

// errNotReady says a pod's volumes wait for another component: a claim to
// be bound, an attachment, the node's volumesInUse report. To a caller
// that polls it is a RequeueAfter(waitRetry); the sync of a pending pod
// instead waits to be woken by the change (wake.go), or by the end of its
// attempt.
var errNotReady error = notReady{}

type notReady struct{}

func (notReady) Error() string { return "volumes not ready" }
func (notReady) Unwrap() error { return controller.RequeueAfter(waitRetry) }

// Config configures one kubelet.
type Config struct {
	NodeName   string
	DriverName string
	// Dir is the kubelet's root directory (the real one is /var/lib/kubelet).
	Dir string
	// Timeout bounds every CSI call (the real kubelet uses 2 minutes).
	Timeout time.Duration
	// Labels are added to the Node's own (hostname, os, arch), e.g. its zone.
	Labels map[string]string
	// SkipMountCheck trusts the driver's word that a volume is mounted,
	// for drivers that mount nothing (the mock driver): no mount check, no
	// fsGroup on a target the driver did not create, no block bind mounts.
	SkipMountCheck bool
	// Recorder, if set, receives the built-in workload's data checks.
	Recorder *trace.Recorder
	// NodeIP is the node's InternalIP, which its pods report as their
	// hostIP, and PodSubnet the network its pods get their addresses
	// from (see NodeNetwork); without them the Node reports no IP and pods
	// get addresses from 10.88.0.0/16.
	NodeIP, PodSubnet string
}

// Kubelet is one simulated node agent.
type Kubelet struct {
	cfg      Config
	clock    clock.PassiveClock
	client   kubernetes.Interface
	csi      csi.NodeClient
	events   record.EventRecorder
	stopRecs func()
	// newEvents makes the event recorder of a (re)started kubelet process.
	newEvents func() (record.EventRecorder, func())

	pods corelisters.PodLister
	// podIndex is the pod informer's cache, with volumeutil.PodsByClaim.
	podIndex cache.Indexer
	claims   corelisters.PersistentVolumeClaimLister
	volumes  corelisters.PersistentVolumeLister
	nodes    corelisters.NodeLister
	drivers  storagelisters.CSIDriverLister
	vas      storagelisters.VolumeAttachmentLister
	queue    controller.Queue
	synced   []cache.InformerSynced

	backoff opBackoff // per volume, for failed mount operations
	// expandBackoff: per volume, for failed online expansions.
	expandBackoff opBackoff

	mu      sync.Mutex
	stopped bool
	// unregistered: the node plugin's registration went away
	// (UnregisterDriver) and it has not registered again.
	unregistered bool
	// lastStatusReport is when the kubelet last posted its node status.
	lastStatusReport time.Time
	actual           actualState
	inUse            []corev1.UniqueVolumeName // last volumesInUse reported
	// failedReconstruction: volume directories a restart found unmounted,
	// for the orphan clean-up.
	failedReconstruction []*failedVolume
	// podStatus: what is kept to post pods' status (podstatus.go).
	podStatus podStatuses
	// tokens: the token manager's service account tokens (tokens.go).
	tokens tokenCache
}

// actualState is what is mounted on the node: the volume manager's
// "actual state of world". It lives only in the kubelet process; a
// restarted kubelet rebuilds it from the kubelet directory (reconstruct.go).
type actualState struct {
	staged  map[corev1.UniqueVolumeName]*stagedVolume
	mounted map[types.UID]map[string]*mountedVolume // pod UID → PV name → mount
	podKeys map[string]types.UID                    // namespace/name → UID, to tear down pods that vanished
	wanted  map[types.UID][]corev1.UniqueVolumeName // volumes pods are being set up with
	resync  map[string]bool                         // pods whose periodic sync is due
	killed  map[types.UID]bool                      // pods whose containers were told to stop
	// sizes: what the volume manager knows of each volume's size, for
	// node expansion (expand.go).
	sizes map[corev1.UniqueVolumeName]*volumeSizes
	// finalExpansionErrors: volumes whose node expansion failed with a
	// final error in this process (never forgotten, as the real one's).
	finalExpansionErrors map[corev1.UniqueVolumeName]bool
}

func newActualState() actualState {
	return actualState{
		staged:  map[corev1.UniqueVolumeName]*stagedVolume{},
		mounted: map[types.UID]map[string]*mountedVolume{},
		podKeys: map[string]types.UID{},
		wanted:  map[types.UID][]corev1.UniqueVolumeName{},
		resync:  map[string]bool{},
		killed:  map[types.UID]bool{},
		sizes:   map[corev1.UniqueVolumeName]*volumeSizes{},
		// Never forgotten in a process, as the real one's.
		finalExpansionErrors: map[corev1.UniqueVolumeName]bool{},
	}
}

// stagedVolume is a volume staged on the node (NodeStageVolume done).
type stagedVolume struct {
	path   string // staging target path
	handle string
	pvName string
	block  bool
	// uncertain: found on disk by a restarted kubelet, which stages it
	// again before use, as the real one marks reconstructed devices.
	uncertain bool
	// unstaging: a NodeUnstageVolume of it is under way.
	unstaging bool
}

// mountedVolume is a volume published for one pod.
type mountedVolume struct {
	unique corev1.UniqueVolumeName
	pvName string
	handle string
	target string // publish path: the mount dir, or the block publish file
	block  bool
	// uncertain: reconstructed after a restart; set up again if the pod
	// still wants it.
	uncertain bool
	// driver is an inline volume's driver (inline.go), whose unique name
	// does not carry it; "" for a PV's.
	driver string
}

// driverName is the volume's CSI driver.
func (m *mountedVolume) driverName() string {
	if m.driver != "" {
		return m.driver
	}
	return driverOf(m.unique)
}

// New wires a kubelet to informers: podFactory must list only this node's
// pods (field selector spec.nodeName), factory everything else.
func New(cfg Config, client kubernetes.Interface, podFactory, factory informers.SharedInformerFactory, node csi.NodeClient, rt controller.Runtime) *Kubelet {
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	newEvents := func() (record.EventRecorder, func()) { return rt.NewEventRecorder(client, "kubelet", cfg.NodeName) }
	events, stop := newEvents()
	k := &Kubelet{cfg: cfg, client: client, csi: node, events: events, stopRecs: stop, newEvents: newEvents,
		clock: rt.Clock, queue: rt.NewQueueWithBackoff("kubelet-"+cfg.NodeName, volumeRetryInitial, volumeRetryMax),
		actual: newActualState()}
	podInf := podFactory.Core().V1().Pods()
	k.pods = podInf.Lister()
	_ = volumeutil.AddIndexes(podInf.Informer(), volumeutil.PodsByClaim) // wake.go copes without
	k.podIndex = podInf.Informer().GetIndexer()
	_, _ = podInf.Informer().AddEventHandler(controller.EnqueueHandler(k.queue))
	pvcInf, pvInf := factory.Core().V1().PersistentVolumeClaims(), factory.Core().V1().PersistentVolumes()
	nodeInf, drvInf, vaInf := factory.Core().V1().Nodes(), factory.Storage().V1().CSIDrivers(), factory.Storage().V1().VolumeAttachments()
	k.claims, k.volumes, k.nodes, k.drivers, k.vas = pvcInf.Lister(), pvInf.Lister(), nodeInf.Lister(), drvInf.Lister(), vaInf.Lister()
	k.addWakeHandlers(pvcInf.Informer(), pvInf.Informer(), nodeInf.Informer(), drvInf.Informer(), vaInf.Informer())
	k.synced = []cache.InformerSynced{podInf.Informer().HasSynced, pvcInf.Informer().HasSynced, pvInf.Informer().HasSynced,
		nodeInf.Informer().HasSynced, drvInf.Informer().HasSynced, vaInf.Informer().HasSynced}
	return k
}

// Register creates the Node and its CSINode and registers the node plugin:
// NodeGetInfo gives the driver's node ID, topology and volume limit.
func (k *Kubelet) Register(ctx context.Context, identity csi.IdentityClient) error {
	registered, err := k.registerNode(ctx)
	if err != nil {
		return err
	}
	k.startEvents(registered)
	if err := k.RegisterDriver(ctx, identity); err != nil {
		return err
	}
	return k.renewLease(ctx)
}

// registerNode creates the Node; it reports whether it did (false: the
// Node was there).
func (k *Kubelet) registerNode(ctx context.Context) (bool, error) {
	now := metav1.NewTime(k.clock.Now()).Rfc3339Copy()
	node := &corev1.Node{
		ObjectMeta: metav1.ObjectMeta{
			Name: k.cfg.NodeName,
			Labels: map[string]string{
				corev1.LabelHostname: k.cfg.NodeName, corev1.LabelOSStable: "linux", corev1.LabelArchStable: "amd64",
				// The kubelet still sets the deprecated beta labels too.
				"beta.kubernetes.io/os": "linux", "beta.kubernetes.io/arch": "amd64",
			},
			Annotations: map[string]string{attachdetach.AnnControllerManagedAttachDetach: "true"},
		},
		Status: corev1.NodeStatus{
			Addresses:   k.nodeAddresses(),
			Capacity:    nodeResources(),
			Allocatable: nodeResources(),
			Conditions:  healthyConditions(now),
			NodeInfo: corev1.NodeSystemInfo{KubeletVersion: Version, OperatingSystem: "linux", Architecture: "amd64",
				ContainerRuntimeVersion: "csisim://none"},
		},
	}
	for key, v := range k.cfg.Labels {
		node.Labels[key] = v
	}
	_, err := k.client.CoreV1().Nodes().Create(ctx, node, metav1.CreateOptions{})
	switch {
	case err == nil:
		k.statusReported()
		return true, nil
	case !apierrors.IsAlreadyExists(err):
		return false, fmt.Errorf("registering node %s: %w", k.cfg.NodeName, err)
	}
	return false, nil
}

func nodeResources() corev1.ResourceList {
	return corev1.ResourceList{
		corev1.ResourceCPU:    resource.MustParse("2"),
		corev1.ResourceMemory: resource.MustParse("8Gi"),
		corev1.ResourcePods:   resource.MustParse("110"),
	}
}

// registerDriver records the driver in the node's CSINode (owned by the
// Node), its node ID in the csi.volume.kubernetes.io/nodeid annotation and
// its topology as node labels.
func (k *Kubelet) registerDriver(ctx context.Context, info *csi.NodeGetInfoResponse) error {
	node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node %s: %w", k.cfg.NodeName, err)
	}
	var topologyKeys []string
	for key := range info.GetAccessibleTopology().GetSegments() {
		topologyKeys = append(topologyKeys, key)
	}
	sort.Strings(topologyKeys)
	drv := storagev1.CSINodeDriver{Name: k.cfg.DriverName, NodeID: info.GetNodeId(), TopologyKeys: topologyKeys}
	if n := info.GetMaxVolumesPerNode(); n > 0 {
		count := int32(n)
		drv.Allocatable = &storagev1.VolumeNodeResources{Count: &count}
	}
	csiNode := &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name:            k.cfg.NodeName,
			Annotations:     map[string]string{annMigratedPlugins: migratedPlugins},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: []storagev1.CSINodeDriver{drv}},
	}
	_, err = k.client.StorageV1().CSINodes().Create(ctx, csiNode, metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Registered before (the plugin came back): update its entry.
		err = k.installInCSINode(ctx, drv)
	}
	if err != nil {
		return fmt.Errorf("node %s: recording driver %s in CSINode: %w", k.cfg.NodeName, k.cfg.DriverName, err)
	}
	ids, _ := json.Marshal(map[string]string{k.cfg.DriverName: info.GetNodeId()})
	// In a real cluster the controller manager writes to a new Node too
	// (its TTL annotation): read it again after a conflict, as the real
	// kubelet does.
	err = retry.RetryOnConflict(retry.DefaultRetry, func() error {
		n := node.DeepCopy()
		if n.Annotations == nil {
			n.Annotations = map[string]string{}
		}
		if n.Labels == nil {
			n.Labels = map[string]string{}
		}
		n.Annotations["csi.volume.kubernetes.io/nodeid"] = string(ids)
		for key, v := range info.GetAccessibleTopology().GetSegments() {
			n.Labels[key] = v
		}
		_, err := k.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, gerr := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{}); gerr == nil {
				node = fresh
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("node %s: recording driver %s: %w", k.cfg.NodeName, k.cfg.DriverName, err)
	}
	return nil
}

// Run runs the volume manager until ctx is done.
func (k *Kubelet) Run(ctx context.Context) {
	defer func() { k.stopRecs() }()
	if !cache.WaitForCacheSync(ctx.Done(), k.synced...) {
		return
	}
	controller.RunComponent(ctx, k.Component())
}

// Workers are the volume manager's queue and sync function.
func (k *Kubelet) Workers() []controller.Worker {
	return []controller.Worker{{Name: "kubelet-" + k.cfg.NodeName, Queue: k.queue, Sync: k.syncPod}}
}

func (k *Kubelet) syncPod(ctx context.Context, key string) error {
	if key == orphansKey {
		return k.cleanUpOrphans(ctx)
	}
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil
	}
	pod, err := k.pods.Pods(ns).Get(name)
	if apierrors.IsNotFound(err) {
		// Force-deleted, or gone while we were not looking: clean up.
		k.mu.Lock()
		uid, known := k.actual.podKeys[key]
		delete(k.actual.resync, key)
		k.mu.Unlock()
		if known {
			return k.tearDown(ctx, uid, key)
		}
		return nil
	}
	if err != nil {
		return err
	}
	k.mu.Lock()
	if old, ok := k.actual.podKeys[key]; ok && old != pod.UID {
		k.mu.Unlock()
		if err := k.tearDown(ctx, old, key); err != nil {
			return err
		}
		k.mu.Lock()
	}
	k.actual.podKeys[key] = pod.UID
	resync := k.actual.resync[key]
	delete(k.actual.resync, key)
	uncertain := k.hasUncertainLocked(pod.UID)
	k.mu.Unlock()

	if pod.DeletionTimestamp != nil {
		k.stopContainersOnce(pod)
		if err := k.tearDown(ctx, pod.UID, key); err != nil {
			return err
		}
		// Containers are stopped and volumes cleaned up: the pod may go.
		zero := int64(0)
		err := k.client.CoreV1().Pods(ns).Delete(ctx, name, metav1.DeleteOptions{
			GracePeriodSeconds: &zero, Preconditions: &metav1.Preconditions{UID: &pod.UID}})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return fmt.Errorf("deleting pod %s: %w", key, err)
		}
		return nil
	}
	switch pod.Status.Phase {
	case corev1.PodPending:
		// podstatus.go: status ContainerCreating, then the volumes.
		if err := k.syncPendingPod(ctx, pod); err != nil {
			return err
		}
		k.runWorkload(pod)
		k.containersStarted(pod)
		if err := k.markRunning(ctx, pod); err != nil {
			return err
		}
	case corev1.PodRunning:
		// A restarted kubelet sets up again what it found on disk; a
		// periodic sync publishes again the volumes of drivers that ask
		// for it (requiresRepublish).
		var err error
		switch {
		case uncertain:
			err = k.setUp(ctx, pod, false)
		case resync:
			err = k.setUp(ctx, pod, true)
		}
		if err != nil {
			return err
		}
	default:
		return nil
	}
	// The reconciler expands the mounted volumes that have grown
	// (expand.go); a failure does not stop the pod.
	vols, err := k.resolveVolumes(pod)
	if err != nil {
		return nil // a claim or volume gone meanwhile: nothing to expand
	}
	return k.expandInUse(ctx, pod, vols)
}

// hasUncertainLocked reports whether a pod has volumes a restarted kubelet
// found on disk and has not set up since.
func (k *Kubelet) hasUncertainLocked(uid types.UID) bool {
	for _, m := range k.actual.mounted[uid] {
		if m.uncertain {
			return true
		}
	}
	return false
}

// volumeToMount is one CSI volume of a pod, resolved through its claim.
type volumeToMount struct {
	pv     *corev1.PersistentVolume
	unique corev1.UniqueVolumeName
	// readOnly is the pod's persistentVolumeClaim.readOnly: what the
	// kubelet passes as NodePublishVolume's readonly.
	readOnly bool
	block    bool
	// claimSize is the claim's status.capacity.
	claimSize resource.Quantity
}

// resolveVolumes finds each PVC volume's PV. A claim that is not bound yet
// makes the pod wait.
func (k *Kubelet) resolveVolumes(pod *corev1.Pod) ([]volumeToMount, error) {
	var out []volumeToMount
	for _, v := range pod.Spec.Volumes {
		// A volume no container uses is not set up (nor waited for).
		if !volumeutil.UsedByContainers(pod, v.Name) {
			continue
		}
		// A generic ephemeral volume is its claim <pod>-<volume>, once
		// the ephemeral volume controller has made it for this pod.
		claimName, readOnly := "", false
		switch {
		case v.PersistentVolumeClaim != nil:
			claimName, readOnly = v.PersistentVolumeClaim.ClaimName, v.PersistentVolumeClaim.ReadOnly
		case v.Ephemeral != nil:
			claimName = ephemeral.VolumeClaimName(pod, &v)
		default:
			continue
		}
		claim, err := k.claims.PersistentVolumeClaims(pod.Namespace).Get(claimName)
		if err != nil || claim.Spec.VolumeName == "" || claim.Status.Phase != corev1.ClaimBound {
			return nil, errNotReady
		}
		if v.Ephemeral != nil && ephemeral.VolumeIsForPod(pod, claim) != nil {
			return nil, errNotReady
		}
		pv, err := k.volumes.Get(claim.Spec.VolumeName)
		if err != nil {
			return nil, errNotReady
		}
		if pv.Spec.CSI == nil {
			return nil, fmt.Errorf("volume %s of pod %s/%s is not a CSI volume", pv.Name, pod.Namespace, pod.Name)
		}
		out = append(out, volumeToMount{pv: pv, unique: attachdetach.UniqueVolumeName(pv.Spec.CSI.Driver, pv.Spec.CSI.VolumeHandle),
			readOnly:  readOnly,
			block:     pv.Spec.VolumeMode != nil && *pv.Spec.VolumeMode == corev1.PersistentVolumeBlock,
			claimSize: claim.Status.Capacity.Storage().DeepCopy()})
	}
	return out, nil
}

// setUp mounts (or maps) every volume of the pod; republish only publishes
// again those whose driver requires it.
func (k *Kubelet) setUp(ctx context.Context, pod *corev1.Pod, republish bool) error {
	// Inline volumes need no claim and no attachment: each is set up
	// whatever the pod's other volumes wait for (inline.go). Their
	// failure, with its backoff, is what the sync waits for.
	inlineErr := k.setUpInline(ctx, pod, republish)
	if err := k.setUpClaimVolumes(ctx, pod, republish); inlineErr == nil || err != nil && !errors.Is(err, errNotReady) {
		return err
	}
	return inlineErr
}

// setUpClaimVolumes sets up the pod's volumes that are claims.
func (k *Kubelet) setUpClaimVolumes(ctx context.Context, pod *corev1.Pod, republish bool) error {
	vols, err := k.resolveVolumes(pod)
	if err != nil {
		return err
	}
	var uniques []corev1.UniqueVolumeName
	for _, v := range vols {
		uniques = append(uniques, v.unique)
	}
	k.mu.Lock()
	k.actual.wanted[pod.UID] = uniques
	for _, v := range vols {
		k.noteSizesLocked(v)
	}
	k.mu.Unlock()
	// An attached volume is mounted only once the node's status has
	// reported it in volumesInUse, so the attach/detach controller never
	// detaches what is about to be mounted. The report is the periodic
	// node status sync's (Heartbeat), as in the real kubelet, whose
	// VerifyControllerAttachedVolume refuses ("Volume has not been added
	// to the list of VolumesInUse in the node's volume status") until then
	// (pkg/volume/util/operationexecutor/operation_generator.go); volumes
	// that need no attach do not wait.
	if !k.reportedInUse(vols) {
		return errNotReady
	}
	for _, v := range vols {
		if republish && !k.requiresRepublish(v.pv.Spec.CSI.Driver) {
			continue
		}
		if err := k.mountVolume(ctx, pod, v, republish); err != nil {
			return err
		}
	}
	return nil
}

// waitForAttach returns the publish context of an attached volume, or asks
// to be retried: the volume must be in node.status.volumesAttached and its
// VolumeAttachment must say attached, as the real kubelet checks.
func (k *Kubelet) waitForAttach(v volumeToMount) (map[string]string, error) {
	if !k.attachRequired(v.pv.Spec.CSI.Driver) {
		return nil, nil
	}
	node, err := k.nodes.Get(k.cfg.NodeName)
	if err != nil {
		return nil, errNotReady
	}
	listed := slices.ContainsFunc(node.Status.VolumesAttached, func(a corev1.AttachedVolume) bool { return a.Name == v.unique })
	if !listed {
		return nil, errNotReady
	}
	va, err := k.vas.Get(attachdetach.AttachmentName(v.pv.Spec.CSI.VolumeHandle, v.pv.Spec.CSI.Driver, k.cfg.NodeName))
	if err != nil || !va.Status.Attached {
		return nil, errNotReady
	}
	return va.Status.AttachmentMetadata, nil
}

// attachRequired reads the CSIDriver's attachRequired; without a CSIDriver
// object volumes are attached.
func (k *Kubelet) attachRequired(driver string) bool {
	drv, err := k.drivers.Get(driver)
	return err != nil || drv.Spec.AttachRequired == nil || *drv.Spec.AttachRequired
}

// requiresRepublish reads the CSIDriver's requiresRepublish.
func (k *Kubelet) requiresRepublish(driver string) bool {
	drv, err := k.drivers.Get(driver)
	return err == nil && drv.Spec.RequiresRepublish != nil && *drv.Spec.RequiresRepublish
}

// tearDown unpublishes a pod's volumes, then unstages those no other pod
// on the node still uses, and reports the change in volumesInUse.
func (k *Kubelet) tearDown(ctx context.Context, uid types.UID, key string) error {
	k.mu.Lock()
	mounts := k.actual.mounted[uid]
	names := make([]string, 0, len(mounts))
	for n := range mounts {
		names = append(names, n)
	}
	k.mu.Unlock()
	sort.Strings(names)
	for _, n := range names {
		m := mounts[n]
		var err error
		if m.block {
			err = k.unmapBlock(ctx, uid, m)
		} else {
			err = k.unpublish(ctx, m)
		}
		if err != nil {
			return err
		}
		k.mu.Lock()
		delete(k.actual.mounted[uid], n)
		k.mu.Unlock()
	}
	if err := removeUnmountedDir(filepath.Join(k.cfg.Dir, "pods", string(uid))); err != nil {
		return err
	}
	if ns, name, ok := strings.Cut(key, "/"); ok {
		if err := k.removePodLogs(ns, name, uid); err != nil {
			return err
		}
	}
	k.mu.Lock()
	delete(k.actual.mounted, uid)
	delete(k.actual.wanted, uid)
	k.tokens.forgetPod(uid)
	delete(k.actual.killed, uid)
	if key != "" && k.actual.podKeys[key] == uid {
		delete(k.actual.podKeys, key)
	}
	k.mu.Unlock()
	// volumesInUse drops the volumes at the next node status sync; the
	// attach/detach controller detaches only after that.
	return k.unstageUnused(ctx)
}

// reportedInUse says whether every volume of vols that needs an attach is
// in the volumesInUse the node's status last reported.
func (k *Kubelet) reportedInUse(vols []volumeToMount) bool {
	k.mu.Lock()
	defer k.mu.Unlock()
	for _, v := range vols {
		if !slices.Contains(k.inUse, v.unique) && k.attachRequired(v.pv.Spec.CSI.Driver) {
			return false
		}
	}
	return true
}

// unstageUnused unstages the staged volumes no pod here uses any more.
func (k *Kubelet) unstageUnused(ctx context.Context) error {
	k.mu.Lock()
	used := map[corev1.UniqueVolumeName]bool{}
	for _, vols := range k.actual.mounted {
		for _, m := range vols {
			used[m.unique] = true
		}
	}
	// Nor a device a pod is still being set up with.
	for _, vols := range k.actual.wanted {
		for _, u := range vols {
			used[u] = true
		}
	}
	var unused []corev1.UniqueVolumeName
	for u := range k.actual.staged {
		if !used[u] {
			unused = append(unused, u)
		}
	}
	k.mu.Unlock()
	slices.Sort(unused)
	for _, u := range unused {
		// One operation per volume at a time, as the operation executor
		// runs them (nestedpendingoperations): while another sync's
		// unstage of it is under way (a call held by a fault), or once it
		// is done, there is nothing to do here.
		k.mu.Lock()
		st := k.actual.staged[u]
		if st == nil || st.unstaging {
			k.mu.Unlock()
			continue
		}
		st.unstaging = true
		k.mu.Unlock()
		var err error
		if st.block {
			err = k.tearDownBlockDevice(ctx, st)
		} else {
			err = k.unmountDevice(ctx, st)
		}
		if err != nil {
			k.mu.Lock()
			st.unstaging = false
			k.mu.Unlock()
			return err
		}
		k.mu.Lock()
		delete(k.actual.staged, u)
		k.mu.Unlock()
	}
	// A volume no pod uses and not staged is gone from the volume
	// manager's states, and what it knew of its size with it.
	k.mu.Lock()
	for u := range k.actual.sizes {
		if _, staged := k.actual.staged[u]; !used[u] && !staged {
			delete(k.actual.sizes, u)
		}
	}
	k.mu.Unlock()
	return nil
}

// volumesInUse are the volumes the node's status should report: every
// volume a pod here is set up with, or wants, or that is still staged —
// of those that are attached: like the real kubelet's GetVolumesInUse
// (pkg/kubelet/volumemanager), which lists only volumes of attachable
// plugins, a CSI volume whose driver needs no attach is never reported.
func (k *Kubelet) volumesInUse() []corev1.UniqueVolumeName {
	k.mu.Lock()
	set := map[corev1.UniqueVolumeName]bool{}
	for _, vols := range k.actual.wanted {
		for _, u := range vols {
			set[u] = true
		}
	}
	for u := range k.actual.staged {
		set[u] = true
	}
	k.mu.Unlock()
	inUse := make([]corev1.UniqueVolumeName, 0, len(set))
	for u := range set {
		if driver, _, ok := strings.Cut(strings.TrimPrefix(string(u), "kubernetes.io/csi/"), "^"); ok && !k.attachRequired(driver) {
			continue
		}
		inUse = append(inUse, u)
	}
	slices.Sort(inUse)
	return inUse
}

// markRunning reports the pod Running with its conditions and container
// statuses, as the kubelet's status manager does once containers start
// (podstatus.go).
func (k *Kubelet) markRunning(ctx context.Context, pod *corev1.Pod) error {
	return k.reportRunning(ctx, pod)
}
