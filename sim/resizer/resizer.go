// Package resizer is the simulated external-resizer sidecar (v2.3, with
// RecoverVolumeExpansionFailure GA): it expands the volumes of bound
// claims of its driver whose storage request exceeds their capacity with
// ControllerExpandVolume, records the operation in the claim's
// status.allocatedResources and allocatedResourceStatuses and conditions,
// grows the PersistentVolume, and hands the file system to the kubelet
// when the driver says the node must expand too. A driver with node
// expansion only gets the sidecar's "trivial resizer": no CSI call, the
// volume is marked for node expansion at once. Beside it, for a driver
// with MODIFY_VOLUME, runs the sidecar's modify controller (modify.go):
// ControllerModifyVolume when a claim names another
// VolumeAttributesClass.
package resizer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	corelisters "k8s.io/client-go/listers/core/v1"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/clock"

	"github.com/csisim/csisim/drivers/driverinfo"
	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/csiclient"
	"github.com/csisim/csisim/sim/migration"
	"github.com/csisim/csisim/sim/volumeutil"
)

// Names the real external-resizer reads and writes (external-resizer
// pkg/util/util.go and events.go); the annotations it shares with the
// kubelet and the expand controller are in volumeutil.
const (
	EventResizing                 = "Resizing"
	EventResizeFailed             = "VolumeResizeFailed"
	EventResizeSuccessful         = "VolumeResizeSuccessful"
	EventFileSystemResizeRequired = "FileSystemResizeRequired"

	// FileSystemResizePendingMessage is the message of the claim's
	// FileSystemResizePending condition (external-resizer
	// pkg/controller/resize_status.go).
	FileSystemResizePendingMessage = "Waiting for user to (re-)start a pod to finish file system resize of volume on node."
)

// The sidecar's defaults (external-resizer v2.3.0 cmd/csi-resizer/main.go):
// --retry-interval-start, --retry-interval-max (also how long a claim
// whose expansion was infeasible waits before the next try),
// --resize-timeout (--timeout, when given, overrides it), --resync-period.
const (
	RetryIntervalStart = time.Second
	RetryIntervalMax   = 5 * time.Minute
	DefaultTimeout     = 10 * time.Second
	ResyncPeriod       = 10 * time.Minute
)

// ErrNotSupported is what a driver without controller service, or with
// neither controller nor node expansion nor MODIFY_VOLUME, gets: the real
// sidecar exits.
var ErrNotSupported = errors.New("CSI driver does not support resize nor modify")

// Config configures the resizer.
type Config struct {
	// DriverName is the driver's name (GetPluginInfo), the resizer's name.
	DriverName string
	// Timeout bounds every CSI call, like the sidecar's --resize-timeout.
	Timeout time.Duration
	// RetryIntervalStart and RetryIntervalMax are --retry-interval-start
	// and --retry-interval-max (also the wait of an infeasible claim);
	// default the package's constants.
	RetryIntervalStart, RetryIntervalMax time.Duration
}

// Resizer is one external-resizer for one driver.
type Resizer struct {
	cfg    Config
	client kubernetes.Interface
	csi    csi.ControllerClient
	clock  clock.PassiveClock
	events record.EventRecorder
	queue  controller.Queue

	claims  cache.Indexer // written through after each write, as the sidecar does
	volumes cache.Indexer
	pods    corelisters.PodLister

	// controllerExpand is false for a driver with node expansion only: the
	// sidecar's trivial resizer.
	controllerExpand bool

	// finalErrors are the claims whose last ControllerExpandVolume failed
	// with a final error (not a timeout or a retryable code).
	finalErrors keySet
	// slow are the claims whose expansion was infeasible: they are tried
	// again only after RetryIntervalMax.
	slow *slowSet
	// inUseErrors are the claims (by UID) whose driver answered
	// FailedPrecondition: it expands only offline.
	inUseErrors keySet
}

// Check is the sidecar's start-up check (controller.Check), as its main
// runs it: the driver needs a controller service, and expansion in the
// controller (EXPAND_VOLUME: the CSI resizer) or else on the node (the
// trivial resizer; external-resizer pkg/resizer/csi_resizer.go). The
// sidecar exits when the driver cannot expand at all (ErrNotSupported)
// or does not answer.
func Check(ctx context.Context, d *controller.Driver) error {
	if err := probe(ctx, d); err != nil {
		return fmt.Errorf("%w: %w", controller.ErrExitsAtStart, err)
	}
	return nil
}

// Start starts the sidecar in a simulated cluster (controller.Start) for
// d's driver, once Check has passed: the resize controller, if the driver
// expands volumes, with its resync every ResyncPeriod, and the modify
// controller (modify.go), if it reports MODIFY_VOLUME, with its own.
func Start(_ context.Context, d controller.Deps) (controller.Component, error) {
	var comp controller.Component
	caps := d.Driver.Capabilities
	if expands(caps) {
		r := newResizer(Config{DriverName: d.Driver.Name, Timeout: d.Flags.Timeout, RetryIntervalStart: d.Flags.RetryIntervalStart,
			RetryIntervalMax: d.Flags.RetryIntervalMax}, d.Client, d.Informers, d.Driver.Controller, d.Runtime)
		r.controllerExpand = caps.Controller[csi.ControllerServiceCapability_RPC_EXPAND_VOLUME]
		comp.Workers = r.Workers()
		comp.Periodic = []controller.Periodic{{Every: ResyncPeriod, Run: r.Resync}}
	}
	if caps.Controller[csi.ControllerServiceCapability_RPC_MODIFY_VOLUME] {
		m := newModifier(Config{DriverName: d.Driver.Name, Timeout: d.Flags.ModifyTimeout, RetryIntervalStart: d.Flags.RetryIntervalStart,
			RetryIntervalMax: d.Flags.RetryIntervalMax}, d.Client, d.Informers, d.Driver.Controller, d.Runtime)
		comp.Workers = append(comp.Workers, m.Workers()...)
		comp.Periodic = append(comp.Periodic, controller.Periodic{Every: ResyncPeriod, Run: m.Resync})
	}
	return comp, nil
}

// expands: the driver expands in the controller or on the node, as Check
// asked it.
func expands(caps driverinfo.Capabilities) bool {
	return caps.Controller[csi.ControllerServiceCapability_RPC_EXPAND_VOLUME] || caps.Node[csi.NodeServiceCapability_RPC_EXPAND_VOLUME]
}

// newResizer wires a resizer to the factory's informers; whether the
// controller expands is for Start to say, from what Check asked.
func newResizer(cfg Config, client kubernetes.Interface, factory informers.SharedInformerFactory, ctrl csi.ControllerClient, rt controller.Runtime) *Resizer {
	cfg.Timeout = controller.Or(cfg.Timeout, DefaultTimeout)
	start, most := controller.Or(cfg.RetryIntervalStart, RetryIntervalStart), controller.Or(cfg.RetryIntervalMax, RetryIntervalMax)
	r := &Resizer{cfg: cfg, client: client, csi: ctrl, clock: rt.Clock,
		queue: rt.NewQueueWithBackoff(cfg.DriverName+"-pvc", start, most),
		slow:  newSlowSet(rt.Clock, most)}
	r.events, _ = rt.NewEventRecorder(client, "external-resizer "+cfg.DriverName, "")
	pvcInf := factory.Core().V1().PersistentVolumeClaims().Informer()
	pvInf := factory.Core().V1().PersistentVolumes().Informer()
	r.claims, r.volumes = pvcInf.GetIndexer(), pvInf.GetIndexer()
	r.pods = factory.Core().V1().Pods().Lister() // --handle-volume-inuse-error, on by default
	_, _ = pvcInf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    r.enqueue,
		UpdateFunc: r.claimUpdated,
		DeleteFunc: func(obj any) {
			if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
				r.queue.Forget(key)
			}
		},
	})
	return r
}

// probe asks the driver what Check needs, in the sidecar's order, and
// keeps the answers in d.
func probe(ctx context.Context, d *controller.Driver) error {
	callCtx, cancel := csiclient.WithTimeout(ctx, DefaultTimeout)
	defer cancel()
	var err error
	if d.Capabilities.Plugin, d.Capabilities.Expansion, err = driverinfo.AskPlugin(callCtx, d.Identity); err != nil {
		return fmt.Errorf("failed to check if plugin supports controller service: %w", err)
	}
	if !d.Capabilities.HasControllerService() {
		return fmt.Errorf("%w: CSI driver does not support controller service", ErrNotSupported)
	}
	if d.Capabilities.Controller, err = driverinfo.AskController(callCtx, d.Controller); err != nil {
		return fmt.Errorf("failed to check if plugin supports controller resize: %w", err)
	}
	if d.Capabilities.Controller[csi.ControllerServiceCapability_RPC_EXPAND_VOLUME] {
		return nil
	}
	if d.Capabilities.Node, err = driverinfo.AskNode(callCtx, d.Node); err != nil {
		return fmt.Errorf("failed to check if plugin supports node resize: %w", err)
	}
	if d.Capabilities.Node[csi.NodeServiceCapability_RPC_EXPAND_VOLUME] {
		return nil
	}
	// No resizer: the modify controller alone, if the driver modifies.
	// The real sidecar asks ControllerGetCapabilities once more for it;
	// the answer is the one above.
	if d.Capabilities.Controller[csi.ControllerServiceCapability_RPC_MODIFY_VOLUME] {
		return nil
	}
	return ErrNotSupported
}

// Workers is the resizer's queue and sync function.
func (r *Resizer) Workers() []controller.Worker {
	return []controller.Worker{{Name: "resizer", Queue: r.queue, Sync: r.syncClaim}}
}

// Resync queues every claim, as the sidecar's informer resync does every
// --resync-period.
func (r *Resizer) Resync(context.Context) {
	for _, key := range r.claims.ListKeys() {
		r.queue.Add(key)
	}
}

func (r *Resizer) enqueue(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		r.queue.Add(key)
	}
}

// claimUpdated queues a claim whose request changed, whose resizer
// annotation changed, whose capacity grew (the node finished) or whose
// resize status changed; other updates are someone else's business
// (external-resizer pkg/controller/controller.go updatePVC).
func (r *Resizer) claimUpdated(oldObj, newObj any) {
	was, ok1 := oldObj.(*corev1.PersistentVolumeClaim)
	claim, ok2 := newObj.(*corev1.PersistentVolumeClaim)
	if !ok1 || !ok2 {
		return
	}
	newReq, oldReq := claim.Spec.Resources.Requests[corev1.ResourceStorage], was.Spec.Resources.Requests[corev1.ResourceStorage]
	newCap, oldCap := claim.Status.Capacity[corev1.ResourceStorage], was.Status.Capacity[corev1.ResourceStorage]
	switch {
	case newReq.Cmp(oldReq) != 0, claim.Annotations[volumeutil.AnnResizer] != was.Annotations[volumeutil.AnnResizer],
		claim.ResourceVersion == was.ResourceVersion, newCap.Cmp(oldCap) > 0,
		claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != was.Status.AllocatedResourceStatuses[corev1.ResourceStorage]:
		r.enqueue(claim)
	}
}

func (r *Resizer) syncClaim(ctx context.Context, key string) error {
	obj, exists, err := r.claims.GetByKey(key)
	if err != nil || !exists {
		return err
	}
	claim := obj.(*corev1.PersistentVolumeClaim)
	if claim.Spec.VolumeName == "" {
		return nil
	}
	obj, exists, err = r.volumes.GetByKey(claim.Spec.VolumeName)
	if err != nil {
		return err
	}
	if !exists {
		// The informer may not have seen it yet: try again.
		return fmt.Errorf("PV %q bound to pvc %q not found", claim.Spec.VolumeName, key)
	}
	pv := obj.(*corev1.PersistentVolume)
	if metav1.HasAnnotation(pv.ObjectMeta, volumeutil.AnnPreResizeCapacity) && nodeExpandComplete(claim, pv) {
		next := pv.DeepCopy()
		delete(next.Annotations, volumeutil.AnnPreResizeCapacity)
		if _, err := r.patchVolume(ctx, pv, next); err != nil {
			return fmt.Errorf("failed removing annotation %s from pv %q: %w", volumeutil.AnnPreResizeCapacity, pv.Name, err)
		}
	}
	if !needsResize(claim) {
		return nil
	}
	return r.expandAndRecover(ctx, key, claim, pv)
}

// needsResize: a bound claim whose request exceeds its capacity.
func needsResize(claim *corev1.PersistentVolumeClaim) bool {
	if claim.Status.Phase != corev1.ClaimBound || claim.Spec.VolumeName == "" {
		return false
	}
	req, capacity := claim.Spec.Resources.Requests[corev1.ResourceStorage], claim.Status.Capacity[corev1.ResourceStorage]
	return req.Cmp(capacity) > 0
}

// nodeExpandComplete: the claim's capacity has caught up with the PV's.
func nodeExpandComplete(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) bool {
	c, p := claim.Status.Capacity[corev1.ResourceStorage], pv.Spec.Capacity[corev1.ResourceStorage]
	return c.Cmp(p) >= 0
}

// supports: a CSI volume of this driver, or a volume of the in-tree
// plugin this driver took over whose claim the expand controller handed
// to it (AnnResizer; external-resizer pkg/resizer/csi_resizer.go
// CanSupport), bound to this very claim.
func (r *Resizer) supports(claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) bool {
	_, migrated := migration.PluginFor(r.cfg.DriverName)
	handed := migrated && claim.Annotations[volumeutil.AnnResizer] == r.cfg.DriverName
	if !handed && (pv.Spec.CSI == nil || pv.Spec.CSI.Driver != r.cfg.DriverName) {
		return false
	}
	ref := pv.Spec.ClaimRef
	return ref != nil && ref.Namespace == claim.Namespace && ref.UID == claim.UID
}

// expandAndRecover picks the size to expand to — the request, or the size
// an operation still pending or uncertain was started with — records it,
// and expands (external-resizer pkg/controller/expand_and_recover.go).
func (r *Resizer) expandAndRecover(ctx context.Context, key string, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume) error {
	if !r.supports(claim, pv) {
		return nil
	}
	request := claim.Spec.Resources.Requests[corev1.ResourceStorage]
	capacity := claim.Status.Capacity[corev1.ResourceStorage]
	pvSize := pv.Spec.Capacity[corev1.ResourceStorage]
	resizeStatus := claim.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
	var allocated *resource.Quantity
	if q, ok := claim.Status.AllocatedResources[corev1.ResourceStorage]; ok {
		allocated = &q
	}
	inSlowSet := r.slow.contains(key)
	if resizeStatus == corev1.PersistentVolumeClaimControllerResizeInfeasible {
		r.slow.add(key)
	}
	newSize := request
	if pvSize.Cmp(request) < 0 {
		switch resizeStatus {
		case corev1.PersistentVolumeClaimNodeResizeInfeasible:
			if allocated != nil {
				newSize = *allocated
			}
		case corev1.PersistentVolumeClaimNodeResizePending, corev1.PersistentVolumeClaimNodeResizeInProgress:
			if allocated != nil {
				newSize = *allocated
			}
			// Let the node finish the expansion it has.
			if pvSize.Cmp(newSize) >= 0 {
				return nil
			}
		case corev1.PersistentVolumeClaimControllerResizeInProgress:
			// An operation that ended uncertain must end before another
			// size is tried; one that ended for good need not.
			if !r.finalErrors.has(key) && allocated != nil {
				newSize = *allocated
			}
		}
	} else {
		switch resizeStatus {
		case corev1.PersistentVolumeClaimNodeResizeInProgress, corev1.PersistentVolumeClaimNodeResizePending:
			return nil // the kubelet's turn
		case corev1.PersistentVolumeClaimNodeResizeInfeasible:
			if r.controllerExpand && allocated != nil {
				newSize = *allocated
			}
		case corev1.PersistentVolumeClaimControllerResizeInProgress, corev1.PersistentVolumeClaimControllerResizeInfeasible:
			if allocated != nil {
				newSize = *allocated
			}
		default:
			if resizeStatus == "" && allocated != nil {
				newSize = *allocated
			} else if hasCondition(claim, corev1.PersistentVolumeClaimFileSystemResizePending) {
				return nil
			}
		}
	}
	updateStatus := true
	if allocated != nil && allocated.Cmp(newSize) == 0 {
		if inSlowSet {
			return controller.RequeueAfter(r.slow.remaining(key))
		}
		updateStatus = false
	}
	claim, err := r.markControllerResizeInProgress(ctx, claim, newSize, updateStatus)
	if err != nil {
		return fmt.Errorf("marking pvc %q as resizing failed: %w", key, err)
	}
	if r.inUseErrors.has(string(claim.UID)) && r.inUse(claim) {
		msg := fmt.Sprintf("Unable to expand %s because CSI driver %s only supports offline expansion and volume is currently in-use", key, r.cfg.DriverName)
		r.events.Event(claim, corev1.EventTypeWarning, EventResizeFailed, msg)
		return errors.New(msg)
	}
	r.events.Event(claim, corev1.EventTypeNormal, EventResizing, fmt.Sprintf("External resizer is resizing volume %s", pv.Name))
	r.inUseErrors.set(string(claim.UID), false)
	claim, err = r.resize(ctx, key, claim, pv, newSize, capacity)
	if err != nil {
		r.events.Event(claim, corev1.EventTypeWarning, EventResizeFailed, err.Error())
		return err
	}
	return nil
}

// resize expands the volume (or, for a driver with node expansion only,
// lets the node do it), grows the PV and records the outcome on the
// claim.
func (r *Resizer) resize(ctx context.Context, key string, claim *corev1.PersistentVolumeClaim, pv *corev1.PersistentVolume, newSize, oldSize resource.Quantity) (*corev1.PersistentVolumeClaim, error) {
	size, nodeRequired, err := r.expand(ctx, pv, newSize)
	if err != nil {
		if status.Code(err) == codes.FailedPrecondition {
			r.inUseErrors.set(string(claim.UID), true)
		}
		if finalError(err) {
			r.finalErrors.set(key, true)
			var markErr error
			if infeasible(err) {
				claim, markErr = r.markControllerExpansionFailed(ctx, claim, err, true)
			} else {
				r.slow.remove(key)
				claim, markErr = r.markControllerExpansionFailed(ctx, claim, err, false)
			}
			if markErr != nil {
				return claim, fmt.Errorf("resizing failed in controller with %v but failed to update PVC %s with: %v", err, key, markErr)
			}
		} else {
			r.slow.remove(key)
			r.finalErrors.set(key, false)
		}
		return claim, fmt.Errorf("resize volume %q by resizer %q failed: %v", pv.Name, r.cfg.DriverName, err)
	}
	r.finalErrors.set(key, false)
	r.slow.remove(key)
	if err := r.updateVolumeCapacity(ctx, pv, oldSize, size, nodeRequired); err != nil {
		return claim, fmt.Errorf("error updating pv %q by resizer: %v", pv.Name, err)
	}
	if nodeRequired {
		return r.markNodeExpansionPending(ctx, claim)
	}
	return r.markExpansionFinished(ctx, claim, size)
}

// expand is ControllerExpandVolume with the PV's controller-expand secret
// and capability; the trivial resizer answers the request at once, with
// node expansion required.
func (r *Resizer) expand(ctx context.Context, pv *corev1.PersistentVolume, size resource.Quantity) (resource.Quantity, bool, error) {
	old := pv.Spec.Capacity[corev1.ResourceStorage]
	if !r.controllerExpand {
		return size, true, nil
	}
	// A volume of a migrated in-tree plugin is expanded as the CSI volume
	// csi-translation-lib makes of it; its capacity is then written to
	// the PV as it is, in its in-tree form.
	csiPV, _, err := migration.PV(pv)
	if err != nil {
		return old, false, fmt.Errorf("failed to translate persistent volume: %v", err)
	}
	src := csiPV.Spec.CSI
	if src == nil {
		return old, false, fmt.Errorf("volume %v is not migrated to CSI", pv.Name)
	}
	if src.VolumeHandle == "" {
		return old, false, errors.New("empty volume handle")
	}
	secrets, err := volumeutil.SecretData(ctx, r.client, src.ControllerExpandSecretRef)
	if err != nil {
		return old, false, err
	}
	callCtx, cancel := csiclient.WithTimeout(ctx, r.cfg.Timeout)
	defer cancel()
	// The sidecar asks for SINGLE_NODE_MULTI_WRITER before every
	// expansion, to map the access modes.
	caps, err := driverinfo.AskController(callCtx, r.csi)
	if err != nil {
		return old, false, fmt.Errorf("failed to get capabilities of volume %s with %v", pv.Name, err)
	}
	capability, err := csiclient.CapabilityOf(csiPV, caps[csi.ControllerServiceCapability_RPC_SINGLE_NODE_MULTI_WRITER])
	if err != nil {
		return old, false, fmt.Errorf("failed to get capabilities of volume %s with %v", pv.Name, err)
	}
	resp, err := r.csi.ControllerExpandVolume(callCtx, &csi.ControllerExpandVolumeRequest{
		VolumeId: src.VolumeHandle, CapacityRange: &csi.CapacityRange{RequiredBytes: size.Value()},
		Secrets: secrets, VolumeCapability: capability,
	})
	if err != nil {
		return old, false, err
	}
	return *resource.NewQuantity(resp.GetCapacityBytes(), resource.BinarySI), resp.GetNodeExpansionRequired(), nil
}

// finalError: the operation is known to have ended, not merely timed out
// or been refused for now (external-resizer pkg/util/util.go).
func finalError(err error) bool {
	st, ok := status.FromError(err)
	if !ok {
		return false
	}
	switch st.Code() {
	case codes.Canceled, codes.DeadlineExceeded, codes.Unavailable, codes.ResourceExhausted, codes.Aborted:
		return false
	}
	return true
}

// infeasible: the driver will not expand to that size, ever.
func infeasible(err error) bool {
	switch status.Code(err) {
	case codes.InvalidArgument, codes.OutOfRange, codes.NotFound:
		return true
	}
	return false
}

func hasCondition(claim *corev1.PersistentVolumeClaim, t corev1.PersistentVolumeClaimConditionType) bool {
	for _, c := range claim.Status.Conditions {
		if c.Type == t && c.Status == corev1.ConditionTrue {
			return true
		}
	}
	return false
}

// inUse: a pod that has not terminated uses the claim.
func (r *Resizer) inUse(claim *corev1.PersistentVolumeClaim) bool {
	pods, err := r.pods.Pods(claim.Namespace).List(labels.Everything())
	if err != nil {
		return false
	}
	for _, pod := range pods {
		if pod.Status.Phase == corev1.PodSucceeded || pod.Status.Phase == corev1.PodFailed {
			continue
		}
		for _, v := range pod.Spec.Volumes {
			if v.PersistentVolumeClaim != nil && v.PersistentVolumeClaim.ClaimName == claim.Name {
				return true
			}
		}
	}
	return false
}
