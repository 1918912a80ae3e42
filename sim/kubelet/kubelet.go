// Package kubelet is a simulated kubelet for one node: it registers the
// Node and its CSI driver (as node-driver-registrar and the plugin watcher
// do), and runs the volume manager for the pods bound to the node — wait
// for attachment, NodeStageVolume, NodePublishVolume, then the pod Runs; on
// deletion its containers stop and it is Succeeded, then
// NodeUnpublishVolume, the pod goes, and NodeUnstageVolume. There are no
// containers: a pod is Running once its volumes are mounted, and stops at
// once when told.
//
// Its parts are the real kubelet's (each file names the upstream file it
// models):
//   - the pod workers (pod_workers.go; sync_pending_pod.go for a pod
//     waiting for its volumes), with the status generator
//     (status_generate.go; status_terminal.go for a deleted pod), the
//     status manager (status_manager.go) and the pods' network
//     (network.go);
//   - the volume manager: its desired state of world
//     (desired_state_of_world.go), filled by the populator (populator.go);
//     its actual state of world (actual_state_of_world.go); the reconciler
//     that drives the one toward the other (reconciler.go); what it tells
//     the node status (volume_manager.go); and its reconstruction after a
//     restart (reconstruct.go);
//   - the operations, with the operation executor's per-volume backoff
//     (operations.go), as the CSI plugin does them in the ways a driver can
//     see: the same paths under its directory (paths.go) with vol_data.json
//     beside each mount; filesystem volumes staged and published
//     (mount.go), with pod information for podInfoOnMount drivers, readonly
//     from the pod's claim source, access modes mapped by the node plugin's
//     capabilities and fsGroup applied per the CSIDriver's fsGroupPolicy
//     (fsgroup.go) or passed as volume_mount_group; block volumes mapped
//     (block.go); inline ephemeral volumes (inline.go); node expansion of
//     grown volumes, offline as part of mounting and online for mounted
//     ones (expand.go); secrets and service account tokens (secrets.go,
//     tokens.go);
//   - the containers' start (containers.go): each volume mount's subPath
//     or subPathExpr checked, made inside the volume and bind-mounted
//     under the pod's volume-subpaths directory, and cleaned before the
//     volume is unpublished (subpath.go, subpath_env.go); a container
//     whose mounts cannot be made waits with CreateContainerConfigError;
//   - the periodic work: republishing for requiresRepublish drivers on the
//     pod sync period and NodeGetVolumeStats on the stats period
//     (periodic.go), heartbeats and node status (heartbeat.go), the plugin
//     registration (registration.go).
package kubelet

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"net/netip"
	"sort"
	"sync"
	"sync/atomic"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/retry"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/sim/attachdetach"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/volumeutil"
	"github.com/csisim/csisim/timing"
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
	NodeName string
	// DriverName is the driver of the node plugin New is given; AddDriver
	// adds the plugins of others.
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
	// PluginFromPod: the node plugin of DriverName is not registered at
	// start but when its pod runs (RegisterDriver), as a plugin deployed
	// by a DaemonSet registers when its node-driver-registrar starts;
	// until then the CSINode lists no driver.
	PluginFromPod bool
	// Timing is the cluster's timing of node loss: the kubelet takes its
	// heartbeats' periods and its Lease's duration from it (zero: v1.37's
	// defaults).
	Timing timing.Timing
	// SELinuxEnabled: the node's kernel has SELinux enabled, which the
	// real kubelet asks the host (selinux.GetEnabled()). Then the pods'
	// seLinuxOptions give the volumes of drivers whose CSIDriver says
	// seLinuxMount: true a context mount option (selinux.go); without it
	// they change nothing.
	SELinuxEnabled bool
	// Fanout, if set, is the cluster's one registration on the claim,
	// volume and attachment informers the kubelets share (fanout.go);
	// without it the kubelet registers its own.
	Fanout *Fanout
	// ContainerExits, if set, says how a container's process ends the
	// moment it starts (now), nil if it runs: the container is restarted
	// with the kubelet's crash-loop backoff (crashloop.go).
	ContainerExits func(pod *corev1.Pod, c *corev1.Container, now time.Time) *ContainerExit
}

// Kubelet is one simulated node agent.
type Kubelet struct {
	cfg      Config
	clock    clock.PassiveClock
	client   kubernetes.Interface
	events   record.EventRecorder
	stopRecs func()
	// volumeStats is what the last volume stats collection found, for
	// the metrics endpoint (volumestats.go).
	volumeStats volumeStats
	// runs counts the kubelet's processes: Restart starts the next one,
	// and a CSI call of an earlier one is cut off (process.go).
	runs atomic.Int64
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

	// The volume manager: what is wanted (desired_state_of_world.go),
	// what is set up (actual_state_of_world.go), and the operation
	// executor's bookkeeping (operations.go).
	desired desiredState
	actual  actualState
	backoff opBackoff // per volume, for failed mount operations
	// unmountBackoff: per volume and pod (unmountOp), for failed unmounts.
	unmountBackoff opBackoff
	// expandBackoff: per volume, for failed online expansions.
	expandBackoff opBackoff
	pending       pendingOps
	// The pod workers (pod_workers.go); the status manager's cache of
	// the status it last posted for each pod (status_manager.go); the
	// addresses given to the pods' sandboxes (network.go), which outlive
	// the kubelet process but are in the pods' status.
	podWorkers podWorkers
	statuses   perPod[corev1.PodStatus]
	sandboxIPs perPod[netip.Addr]

	mu      sync.Mutex
	stopped bool
	// plugins are the node plugins of the node, one per CSI driver, in
	// the order they were given (registration.go).
	plugins []*nodePlugin
	// updater is the ticker of the CSINode's periodic update
	// (csinode_updater.go).
	updater csiNodeUpdater
	// lastStatusReport is when the kubelet last posted its node status.
	lastStatusReport time.Time
	// failedReconstruction: volume directories a restart found unmounted,
	// for the orphan clean-up (the reconciler's
	// volumesFailedReconstruction).
	failedReconstruction []*failedVolume
	// tokens: the token manager's service account tokens (tokens.go).
	tokens tokenCache
}

// New wires a kubelet to informers: podFactory must list only this node's
// pods (field selector spec.nodeName), factory everything else.
func New(cfg Config, client kubernetes.Interface, podFactory, factory informers.SharedInformerFactory, node csi.NodeClient, rt controller.Runtime) *Kubelet {
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Minute
	}
	newEvents := func() (record.EventRecorder, func()) { return rt.NewEventRecorder(client, "kubelet", cfg.NodeName) }
	events, stop := newEvents()
	k := &Kubelet{cfg: cfg, client: client, plugins: []*nodePlugin{{driver: cfg.DriverName, csi: node}}, events: events, stopRecs: stop, newEvents: newEvents,
		clock: rt.Clock, queue: rt.NewQueueWithBackoff("kubelet-"+cfg.NodeName, volumeRetryInitial, volumeRetryMax)}
	k.desired.reset()
	k.actual.reset()
	k.podWorkers.reset()
	podInf := podFactory.Core().V1().Pods()
	k.pods = podInf.Lister()
	indexErr := volumeutil.AddIndexes(podInf.Informer(), volumeutil.PodsByClaim) // wake.go copes without
	k.podIndex = podInf.Informer().GetIndexer()
	_, _ = podInf.Informer().AddEventHandler(controller.EnqueueHandler(k.queue))
	pvcInf, pvInf := factory.Core().V1().PersistentVolumeClaims(), factory.Core().V1().PersistentVolumes()
	nodeInf, drvInf, vaInf := factory.Core().V1().Nodes(), factory.Storage().V1().CSIDrivers(), factory.Storage().V1().VolumeAttachments()
	k.claims, k.volumes, k.nodes, k.drivers, k.vas = pvcInf.Lister(), pvInf.Lister(), nodeInf.Lister(), drvInf.Lister(), vaInf.Lister()
	k.addWakeHandlers(cfg.Fanout, podInf.Informer(), pvcInf.Informer(), pvInf.Informer(), nodeInf.Informer(), drvInf.Informer(), vaInf.Informer(), indexErr == nil)
	k.addCSINodeUpdaterHandlers(drvInf.Informer())
	k.synced = []cache.InformerSynced{podInf.Informer().HasSynced, pvcInf.Informer().HasSynced, pvInf.Informer().HasSynced,
		nodeInf.Informer().HasSynced, drvInf.Informer().HasSynced, vaInf.Informer().HasSynced}
	return k
}

// Register creates the Node and its CSINode and registers the node plugin
// of Config.DriverName: NodeGetInfo gives the driver's node ID, topology
// and volume limit.
func (k *Kubelet) Register(ctx context.Context, identity csi.IdentityClient) error {
	registered, err := k.registerNode(ctx)
	if err != nil {
		return err
	}
	k.startEvents(registered)
	if k.cfg.PluginFromPod {
		k.plugins[0].unregistered = true
		if err := k.initCSINode(ctx); err != nil {
			return err
		}
		return k.renewLease(ctx)
	}
	if err := k.RegisterDriver(ctx, k.cfg.DriverName, identity); err != nil {
		return err
	}
	return k.renewLease(ctx)
}

// initCSINode creates the node's CSINode without drivers, as the real
// kubelet's node info manager does at start
// (nodeinfomanager.InitializeCSINodeWithAnnotation).
func (k *Kubelet) initCSINode(ctx context.Context) error {
	node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node %s: %w", k.cfg.NodeName, err)
	}
	_, err = k.client.StorageV1().CSINodes().Create(ctx, newCSINode(node, nil), metav1.CreateOptions{})
	if err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("node %s: creating its CSINode: %w", k.cfg.NodeName, err)
	}
	return nil
}

// newCSINode is the node's CSINode with drivers, owned by the Node.
func newCSINode(node *corev1.Node, drivers []storagev1.CSINodeDriver) *storagev1.CSINode {
	return &storagev1.CSINode{
		ObjectMeta: metav1.ObjectMeta{
			Name:            node.Name,
			Annotations:     map[string]string{annMigratedPlugins: migratedPlugins},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "Node", Name: node.Name, UID: node.UID}},
		},
		Spec: storagev1.CSINodeSpec{Drivers: drivers},
	}
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

// csiNodeDriver is the driver's CSINode entry for its NodeGetInfo answer
// (nodeinfomanager's installDriverToCSINode): a limit over what an int32
// holds is cut to that.
func (k *Kubelet) csiNodeDriver(name string, info *csi.NodeGetInfoResponse) storagev1.CSINodeDriver {
	var topologyKeys []string
	for key := range info.GetAccessibleTopology().GetSegments() {
		topologyKeys = append(topologyKeys, key)
	}
	sort.Strings(topologyKeys)
	drv := storagev1.CSINodeDriver{Name: name, NodeID: info.GetNodeId(), TopologyKeys: topologyKeys}
	if n := info.GetMaxVolumesPerNode(); n > 0 {
		count := int32(min(n, math.MaxInt32))
		drv.Allocatable = &storagev1.VolumeNodeResources{Count: &count}
	}
	return drv
}

// registerDriver records the driver in the node's CSINode (owned by the
// Node), its node ID in the csi.volume.kubernetes.io/nodeid annotation
// (a JSON map of every registered driver's) and its topology as node
// labels.
func (k *Kubelet) registerDriver(ctx context.Context, name string, info *csi.NodeGetInfoResponse) error {
	node, err := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{})
	if err != nil {
		return fmt.Errorf("node %s: %w", k.cfg.NodeName, err)
	}
	drv := k.csiNodeDriver(name, info)
	_, err = k.client.StorageV1().CSINodes().Create(ctx, newCSINode(node, []storagev1.CSINodeDriver{drv}), metav1.CreateOptions{})
	if apierrors.IsAlreadyExists(err) {
		// Registered before (the plugin came back): update its entry.
		err = k.installInCSINode(ctx, drv)
	}
	if err != nil {
		return fmt.Errorf("node %s: recording driver %s in CSINode: %w", k.cfg.NodeName, name, err)
	}
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
		ids, err := nodeIDs(n)
		if err != nil {
			return err
		}
		ids[name] = info.GetNodeId()
		value, _ := json.Marshal(ids)
		n.Annotations[annNodeID] = string(value)
		for key, v := range info.GetAccessibleTopology().GetSegments() {
			n.Labels[key] = v
		}
		_, err = k.client.CoreV1().Nodes().Update(ctx, n, metav1.UpdateOptions{})
		if apierrors.IsConflict(err) {
			if fresh, gerr := k.client.CoreV1().Nodes().Get(ctx, k.cfg.NodeName, metav1.GetOptions{}); gerr == nil {
				node = fresh
			}
		}
		return err
	})
	if err != nil {
		return fmt.Errorf("node %s: recording driver %s: %w", k.cfg.NodeName, name, err)
	}
	return nil
}

// Run runs the kubelet (its pod workers and periodic work) until ctx is done.
func (k *Kubelet) Run(ctx context.Context) {
	defer func() { k.stopRecs() }()
	if !cache.WaitForCacheSync(ctx.Done(), k.synced...) {
		return
	}
	controller.RunComponent(ctx, k.Component())
}

// Workers are the kubelet's queue and sync function: the pod workers'
// (pod_workers.go), one sync per pod key.
func (k *Kubelet) Workers() []controller.Worker {
	return []controller.Worker{{Name: "kubelet-" + k.cfg.NodeName, Queue: k.queue, Sync: k.syncPod}}
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
