// Package attacher is the simulated external-attacher sidecar: it turns
// VolumeAttachments for its driver into ControllerPublishVolume and
// ControllerUnpublishVolume calls and reports the result in their status.
package attacher

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	storagev1 "k8s.io/api/storage/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	storagelisters "k8s.io/client-go/listers/storage/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/migration"
	"github.com/csisim/csisim/sim/volumeutil"
)

// annNodeID is where the sidecar records the driver's ID of the node.
const annNodeID = "csi.alpha.kubernetes.io/node-id"

// The sidecar's default retry backoff (--retry-interval-start,
// --retry-interval-max).
const (
	RetryIntervalStart = time.Second
	RetryIntervalMax   = 5 * time.Minute
)

// Config configures the attacher.
type Config struct {
	DriverName string
	// Timeout bounds every CSI call, like the sidecar's --timeout (15 s).
	Timeout time.Duration
	// RetryIntervalStart and RetryIntervalMax are --retry-interval-start
	// and --retry-interval-max; default the package's constants.
	RetryIntervalStart, RetryIntervalMax time.Duration
	// Capabilities are the driver's, as Check asked them at start: a
	// driver without CONTROLLER_SERVICE or PUBLISH_UNPUBLISH_VOLUME gets
	// the trivial handler (trivial.go).
	Capabilities driverinfo.Capabilities
}

// DefaultTimeout is the sidecar's --timeout.
const DefaultTimeout = 15 * time.Second

// Attacher is one external-attacher for one driver.
type Attacher struct {
	cfg       Config
	clock     clock.PassiveClock
	finalizer string
	client    kubernetes.Interface
	csi       csi.ControllerClient
	vas       storagelisters.VolumeAttachmentLister
	vaIndex   cache.Indexer // with volumeutil.AttachmentsByVolume
	volumes   corelisters.PersistentVolumeLister
	csiNodes  storagelisters.CSINodeLister
	vaQ       controller.Queue
	pvQ       controller.Queue

	// forceSync names attachments the reconciler found out of step with
	// the driver: their next sync acts whatever their status says.
	forceMu   sync.Mutex
	forceSync map[string]bool
}

// New wires an attacher to the factory's informers and a CSI controller client.
func New(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory, ctrl csi.ControllerClient, rt controller.Runtime) *Attacher {
	cfg.Timeout = controller.Or(cfg.Timeout, DefaultTimeout)
	start, most := controller.Or(cfg.RetryIntervalStart, RetryIntervalStart), controller.Or(cfg.RetryIntervalMax, RetryIntervalMax)
	a := &Attacher{cfg: cfg, finalizer: volumeutil.AttacherFinalizer(cfg.DriverName), client: client, csi: ctrl,
		clock: rt.Clock, vaQ: rt.NewQueueWithBackoff("attacher-va", start, most), pvQ: rt.NewQueueWithBackoff("attacher-pv", start, most)}
	vaInf := factory.Storage().V1().VolumeAttachments()
	pvInf := factory.Core().V1().PersistentVolumes()
	nodeInf := factory.Storage().V1().CSINodes()
	a.vas, a.volumes, a.csiNodes = vaInf.Lister(), pvInf.Lister(), nodeInf.Lister()
	_ = volumeutil.AddIndexes(vaInf.Informer(), volumeutil.AttachmentsByVolume)
	a.vaIndex = vaInf.Informer().GetIndexer()
	_, _ = vaInf.Informer().AddEventHandler(cache.FilteringResourceEventHandler{
		FilterFunc: func(obj any) bool {
			obj = controller.Unwrap(obj)
			va, ok := obj.(*storagev1.VolumeAttachment)
			return ok && va.Spec.Attacher == cfg.DriverName
		},
		Handler: cache.ResourceEventHandlerFuncs{
			AddFunc: a.enqueueVA,
			UpdateFunc: func(old, obj any) {
				if shouldEnqueueVAChange(old.(*storagev1.VolumeAttachment), obj.(*storagev1.VolumeAttachment)) {
					a.enqueueVA(obj)
				}
			},
			DeleteFunc: a.enqueueVA,
		},
	})
	_, _ = pvInf.Informer().AddEventHandler(controller.EnqueueHandler(a.pvQ))
	return a
}

// enqueueVA queues the attachment and its volume, whose finalizer depends
// on the attachments that refer to it.
func (a *Attacher) enqueueVA(obj any) {
	obj = controller.Unwrap(obj)
	va := obj.(*storagev1.VolumeAttachment)
	a.vaQ.Add(va.Name)
	if pv := va.Spec.Source.PersistentVolumeName; pv != nil {
		a.pvQ.Add(*pv)
	}
}

// Workers are the attacher's queues and sync functions: those of its CSI
// handler, or of its trivial handler for a driver it cannot attach with.
func (a *Attacher) Workers() []controller.Worker {
	sync := a.syncAttachment
	if !a.cfg.Capabilities.CanAttach() {
		sync = a.syncTrivially
	}
	return []controller.Worker{
		{Name: "attacher-va", Queue: a.vaQ, Sync: sync},
		{Name: "attacher-pv", Queue: a.pvQ, Sync: a.syncVolume},
	}
}

// Check is the sidecar's start-up check (controller.Check), as its main
// runs it (cmd/csi-attacher/main.go): GetPluginCapabilities, and for a
// driver with CONTROLLER_SERVICE ControllerGetCapabilities, which choose
// its handler. A driver that does not answer makes the real sidecar exit
// (klog.FlushAndExit): see controller.CheckFailed.
func Check(ctx context.Context, d *controller.Driver) error {
	callCtx, cancel := csiclient.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	var err error
	if d.Capabilities.Plugin, d.Capabilities.Expansion, err = driverinfo.AskPlugin(callCtx, d.Identity); err != nil {
		return controller.CheckFailed(fmt.Errorf("failed to check if the CSI driver supports the CONTROLLER_SERVICE: %w", err))
	}
	if !d.Capabilities.HasControllerService() {
		return nil
	}
	if d.Capabilities.Controller, err = driverinfo.AskController(callCtx, d.Controller); err != nil {
		return controller.CheckFailed(fmt.Errorf("failed to controller capability check: %w", err))
	}
	return nil
}

// Start starts the sidecar in a simulated cluster (controller.Start) for
// d's driver, once Check has asked its capabilities: its workers, and its
// reconciler every ReconcileInterval for a driver that lists the nodes
// its volumes are published to.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	a := New(Config{DriverName: d.Driver.Name, Capabilities: d.Driver.Capabilities, Timeout: d.Flags.Timeout,
		RetryIntervalStart: d.Flags.RetryIntervalStart, RetryIntervalMax: d.Flags.RetryIntervalMax}, d.Client, d.Informers, d.Driver.Controller, d.Runtime)
	comp := controller.Component{Workers: a.Workers()}
	if a.reconciles() {
		comp.Periodic = []controller.Periodic{{Every: ReconcileInterval, Run: a.Reconcile}}
	}
	return comp, nil
}

func (a *Attacher) syncAttachment(ctx context.Context, name string) error {
	va, err := a.vas.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	forced := a.consumeForceSync(name)
	if va.DeletionTimestamp == nil && va.Status.Attached && !forced {
		return nil
	}
	// The cache may not have seen our own last write yet; ask the API
	// server before calling the driver again.
	va, err = a.client.StorageV1().VolumeAttachments().Get(ctx, name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	if va.DeletionTimestamp != nil {
		return a.detach(ctx, va)
	}
	if va.Status.Attached && !forced {
		return nil
	}
	return a.attach(ctx, va)
}

func (a *Attacher) attach(ctx context.Context, va *storagev1.VolumeAttachment) error {
	// As the sidecar: check all it can before the finalizer goes on, which
	// would hold the attachment's deletion on an error.
	pv, err := a.volumeOf(va)
	if err != nil {
		return a.attachFailed(ctx, va, err)
	}
	// An inline volume has no PV to hold (csi_handler.go csiAttach).
	if va.Spec.Source.PersistentVolumeName != nil {
		if pv.DeletionTimestamp != nil {
			return a.attachFailed(ctx, va, fmt.Errorf("PersistentVolume %q is marked for deletion", pv.Name))
		}
		if err := a.protectVolume(ctx, pv); err != nil {
			return a.attachFailed(ctx, va, fmt.Errorf("could not add PersistentVolume finalizer: %s", err))
		}
	}
	nodeID, err := a.nodeID(va.Spec.NodeName)
	if err != nil {
		return a.attachFailed(ctx, va, err)
	}
	if !slices.Contains(va.Finalizers, a.finalizer) || va.Annotations[annNodeID] != nodeID {
		// With its finalizer the sidecar records the driver's node ID, in
		// one merge patch.
		finalizers := va.Finalizers
		if !slices.Contains(finalizers, a.finalizer) {
			finalizers = append(slices.Clone(finalizers), a.finalizer)
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"finalizers": finalizers, "annotations": map[string]string{annNodeID: nodeID}}})
		if err != nil {
			return err
		}
		updated, err := a.client.StorageV1().VolumeAttachments().Patch(ctx, va.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if err != nil {
			return a.attachFailed(ctx, va, fmt.Errorf("could not save VolumeAttachment: %s", err))
		}
		va = updated
	}
	caps := a.cfg.Capabilities.Controller
	capability, err := csiclient.CapabilityOf(pv, caps[csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER])
	if err != nil {
		return a.attachFailed(ctx, va, err)
	}
	req := &csi.ControllerPublishVolumeRequest{
		VolumeId:         pv.Spec.CSI.VolumeHandle,
		NodeId:           nodeID,
		VolumeCapability: capability,
		// "CO MUST set this field to false if SP does not have the
		// PUBLISH_READONLY controller capability."
		Readonly:      pv.Spec.CSI.ReadOnly && caps[csi.ControllerServiceCapability_RPC_PUBLISH_READONLY],
		VolumeContext: pv.Spec.CSI.VolumeAttributes,
	}
	callCtx, cancel := csiclient.WithTimeout(ctx, a.cfg.Timeout)
	resp, err := a.csi.ControllerPublishVolume(callCtx, req)
	cancel()
	if err != nil {
		// The gRPC status error reads "rpc error: code = ... desc = ...",
		// which is what the sidecar saves.
		return a.attachFailed(ctx, va, err)
	}
	return a.patchStatus(ctx, va.Name, map[string]any{
		"attached": true, "attachmentMetadata": resp.GetPublishContext(), "attachError": nil,
	})
}

// attachFailed records the error in status.attachError and retries.
func (a *Attacher) attachFailed(ctx context.Context, va *storagev1.VolumeAttachment, cause error) error {
	if err := a.patchStatus(ctx, va.Name, map[string]any{"attachError": a.attachError(cause)}); err != nil {
		return err
	}
	return fmt.Errorf("attaching %s: %w", va.Name, cause)
}

func (a *Attacher) detach(ctx context.Context, va *storagev1.VolumeAttachment) error {
	if !slices.Contains(va.Finalizers, a.finalizer) {
		return nil
	}
	pv, err := a.volumeOf(va)
	if err != nil {
		return a.detachFailed(ctx, va, err)
	}
	// The node may be gone, and its CSINode with it: then the node ID the
	// sidecar recorded on the attachment is used, as the real one does.
	nodeID, err := a.nodeID(va.Spec.NodeName)
	if err != nil {
		recorded, ok := va.Annotations[annNodeID]
		if !ok {
			return a.detachFailed(ctx, va, err)
		}
		nodeID = recorded
	}
	callCtx, cancel := csiclient.WithTimeout(ctx, a.cfg.Timeout)
	_, err = a.csi.ControllerUnpublishVolume(callCtx, &csi.ControllerUnpublishVolumeRequest{
		VolumeId: pv.Spec.CSI.VolumeHandle, NodeId: nodeID})
	cancel()
	if err != nil {
		return a.detachFailed(ctx, va, err)
	}
	return a.markDetached(ctx, va)
}

// markDetached removes the finalizer first and then clears the status, as
// the sidecar does: an attachment being deleted without the finalizer is
// detached whatever its status says, so the API server removes it and the
// status update finds it gone. The other order would make a crash between
// the two writes call ControllerUnpublishVolume again.
func (a *Attacher) markDetached(ctx context.Context, va *storagev1.VolumeAttachment) error {
	if slices.Contains(va.Finalizers, a.finalizer) {
		var rest []string // null in the patch when none is left
		for _, f := range va.Finalizers {
			if f != a.finalizer {
				rest = append(rest, f)
			}
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": rest}})
		if err != nil {
			return err
		}
		_, err = a.client.StorageV1().VolumeAttachments().Patch(ctx, va.Name, types.MergePatchType, patch, metav1.PatchOptions{})
		if apierrors.IsNotFound(err) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("removing finalizer from VolumeAttachment %s: %w", va.Name, err)
		}
	}
	err := a.patchStatus(ctx, va.Name, map[string]any{"attached": false, "attachmentMetadata": nil, "detachError": nil})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	return nil
}

// shouldEnqueueVAChange leaves out updates that only change
// status.attachError or status.detachError — the sidecar's own error
// reports — so that a failure is retried after its backoff, not at once.
func shouldEnqueueVAChange(old, cur *storagev1.VolumeAttachment) bool {
	if old.ResourceVersion == cur.ResourceVersion {
		return true
	}
	if cur.Status.AttachError == nil && cur.Status.DetachError == nil && old.Status.AttachError == nil && old.Status.DetachError == nil {
		return true
	}
	sanitized := cur.DeepCopy()
	sanitized.ResourceVersion = old.ResourceVersion
	sanitized.Status.AttachError = old.Status.AttachError
	sanitized.Status.DetachError = old.Status.DetachError
	sanitized.ManagedFields = old.ManagedFields
	return !equality.Semantic.DeepEqual(old, sanitized)
}

func (a *Attacher) detachFailed(ctx context.Context, va *storagev1.VolumeAttachment, cause error) error {
	if err := a.patchStatus(ctx, va.Name, map[string]any{"detachError": a.volumeError(cause)}); err != nil {
		return err
	}
	return fmt.Errorf("detaching %s: %w", va.Name, cause)
}

func (a *Attacher) volumeError(err error) map[string]any {
	return map[string]any{"time": metav1.NewTime(a.clock.Now()).Rfc3339Copy(), "message": err.Error()}
}

// attachError is status.attachError for err. With
// MutableCSINodeAllocatableCount (GA, on in v1.37's sidecar) the sidecar
// saves a gRPC error's code beside its message, for attach errors only
// (external-attacher v4.13.0 pkg/controller/csi_handler.go
// saveAttachError); the kubelet looks there for ResourceExhausted.
func (a *Attacher) attachError(err error) map[string]any {
	e := a.volumeError(err)
	if st, ok := status.FromError(err); ok {
		e["errorCode"] = int32(st.Code())
	}
	return e
}

func (a *Attacher) patchStatus(ctx context.Context, name string, status map[string]any) error {
	patch, err := json.Marshal(map[string]any{"status": status})
	if err != nil {
		return err
	}
	_, err = a.client.StorageV1().VolumeAttachments().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return fmt.Errorf("updating status of VolumeAttachment %s: %w", name, err)
	}
	return nil
}

// volumeOf is the CSI volume an attachment is for: its PV's, translated
// if it is an in-tree volume of a plugin that migrated, or the
// inlineVolumeSpec the attach/detach controller wrote for a pod's inline
// in-tree volume (already translated: the sidecar takes its CSI source as
// it is), in a PV of no name. The errors are the sidecar's
// (external-attacher v4.13.0 pkg/controller/csi_handler.go csiAttach,
// csiDetach).
func (a *Attacher) volumeOf(va *storagev1.VolumeAttachment) (*corev1.PersistentVolume, error) {
	src := va.Spec.Source
	switch {
	case src.PersistentVolumeName != nil && src.InlineVolumeSpec != nil:
		return nil, errors.New("both InlineCSIVolumeSource and PersistentVolumeName specified in VA source")
	case src.InlineVolumeSpec != nil && src.InlineVolumeSpec.CSI == nil:
		return nil, errors.New("inline volume spec contains nil CSI source")
	case src.InlineVolumeSpec != nil:
		return &corev1.PersistentVolume{Spec: *src.InlineVolumeSpec.DeepCopy()}, nil
	case src.PersistentVolumeName == nil:
		return nil, errors.New("neither InlineCSIVolumeSource nor PersistentVolumeName specified in VA source")
	}
	pv, err := a.volumes.Get(*src.PersistentVolumeName)
	if err != nil {
		return nil, err // persistentvolume "pvc-…" not found, as the sidecar reports it
	}
	// An in-tree volume whose plugin migrated is attached as its CSI
	// driver's volume (csi_handler.go: IsPVMigratable, then
	// TranslateInTreePVToCSI); its finalizer still goes on the PV as
	// written.
	pv, _, err = migration.PV(pv)
	if err != nil {
		return nil, fmt.Errorf("failed to translate in tree pv to CSI: %v", err)
	}
	if pv.Spec.CSI == nil {
		return nil, fmt.Errorf("persistentvolume %q is not a CSI volume", pv.Name)
	}
	return pv, nil
}

// nodeID is the driver's ID for a node, from the node's CSINode object,
// which the kubelet fills in when the driver registers.
func (a *Attacher) nodeID(nodeName string) (string, error) {
	n, err := a.csiNodes.Get(nodeName)
	if err != nil {
		// The lister's own words: csinode.storage.k8s.io "node-1" not found.
		return "", err
	}
	for _, d := range n.Spec.Drivers {
		if d.Name == a.cfg.DriverName {
			return d.NodeID, nil
		}
	}
	return "", fmt.Errorf("CSINode %s does not contain driver %s", nodeName, a.cfg.DriverName)
}

// protectVolume puts the attacher's finalizer on the PV while an
// attachment may refer to it.
func (a *Attacher) protectVolume(ctx context.Context, pv *corev1.PersistentVolume) error {
	if slices.Contains(pv.Finalizers, a.finalizer) || pv.DeletionTimestamp != nil {
		return nil
	}
	if err := a.patchFinalizers(ctx, pv.Name, append(slices.Clone(pv.Finalizers), a.finalizer)); err != nil {
		return fmt.Errorf("adding finalizer to PV %s: %w", pv.Name, err)
	}
	return nil
}

// patchFinalizers sets a PV's finalizers with a JSON merge patch of the
// finalizers alone, as the sidecar's patchPV does (csi_handler.go): no
// resourceVersion, so a write of the PV by someone else is no conflict.
func (a *Attacher) patchFinalizers(ctx context.Context, name string, finalizers []string) error {
	if finalizers == nil {
		finalizers = []string{}
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"finalizers": finalizers}})
	if err != nil {
		return err
	}
	_, err = a.client.CoreV1().PersistentVolumes().Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{})
	return err
}

// syncVolume removes the attacher's finalizer from a PV that no
// VolumeAttachment refers to any more.
func (a *Attacher) syncVolume(ctx context.Context, name string) error {
	pv, err := a.volumes.Get(name)
	if apierrors.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return err
	}
	// The finalizer stays while the volume lives; it goes once the volume
	// is being deleted and nothing refers to it.
	if !slices.Contains(pv.Finalizers, a.finalizer) || pv.DeletionTimestamp == nil {
		return nil
	}
	vas, err := volumeutil.ByIndex[*storagev1.VolumeAttachment](a.vaIndex, volumeutil.AttachmentsByVolume, name)
	if err != nil {
		return err
	}
	if len(vas) > 0 {
		return nil
	}
	rest := slices.DeleteFunc(slices.Clone(pv.Finalizers), func(f string) bool { return f == a.finalizer })
	if err := a.patchFinalizers(ctx, name, rest); err != nil && !apierrors.IsNotFound(err) {
		return fmt.Errorf("removing finalizer from PV %s: %w", name, err)
	}
	return nil
}
