package kubelet

// Node expansion: the kubelet's half of growing a volume, as the real
// kubelet v1.37 does it (kubernetes pkg/volume/util/operationexecutor/
// operation_generator.go: expandVolumeDuringMount, nodeExpandVolume,
// GenerateExpandInUseVolumeFunc, checkForRecoveryFromExpansion,
// legacyCallNodeExpandOnPlugin; node_expander.go; pkg/volume/csi/
// expander.go and csi_client.go NodeExpandVolume; the claim's status as
// pkg/volume/util/resize_util.go writes it).
//
// After the resizer has grown the volume (ControllerExpandVolume, the PV's
// spec.capacity) and marked the claim — status.allocatedResources, the
// allocatedResourceStatuses entry NodeResizePending — the kubelet grows
// what the node sees, with NodeExpandVolume:
//
//   - offline, as part of mounting (MountVolume, MapVolume): after
//     NodePublishVolume, when the claim's status.capacity is smaller than
//     the PV's capacity; a failure fails the mount, which is retried with
//     the mount's backoff, and the pod does not start;
//   - online, for a mounted volume: the volume manager knows each volume's
//     size (the claim's status.capacity when it first saw it) and the size
//     its pods want (the PV's capacity, read again at each periodic pod
//     sync); when the wanted size is larger it expands the volume, with a
//     backoff of its own, and the pod keeps running whatever happens.
//
// Either way the claim is then marked NodeResizeInProgress, NodeExpandVolume
// is called with the published path (the block device's publish path for
// volumeMode Block) and the staging path, and on success the claim's
// status.capacity becomes the allocated size, its allocatedResourceStatuses
// entry and resize conditions go, and FileSystemResizeSuccessful events go
// to the pod and the claim. A failure leaves a NodeResizeError condition
// (and NodeResizeInfeasible for InvalidArgument, OutOfRange, NotFound, which
// the kubelet then no longer retries); FailedPrecondition stops online
// expansion of the volume on this node without failing anything.

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/container-storage-interface/spec/lib/go/csi"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/strategicpatch"

	"github.com/csisim/csisim/sim/controller"
	"github.com/csisim/csisim/sim/volumeutil"
)

// Event reasons (kubernetes pkg/kubelet/events/event.go).
const (
	reasonFileSystemResizeSuccess = "FileSystemResizeSuccessful"
	reasonFileSystemResizeFailed  = "FileSystemResizeFailed"
	reasonVolumeResizeFailed      = "VolumeResizeFailed"
)

// resizeConditions are the claim conditions that belong to resizing; the
// end of a resize removes them all (kubernetes pkg/volume/util/
// resize_util.go, knownResizeConditions).
var resizeConditions = map[corev1.PersistentVolumeClaimConditionType]bool{
	corev1.PersistentVolumeClaimFileSystemResizePending: true,
	corev1.PersistentVolumeClaimResizing:                true,
	corev1.PersistentVolumeClaimControllerResizeError:   true,
	corev1.PersistentVolumeClaimNodeResizeError:         true,
}

// needsExpansion is the actual state's volumeNeedsExpansion: the size
// pods want the volume at is larger than the one it has, and the driver
// has not said it cannot grow it while in use.
func (k *Kubelet) needsExpansion(u corev1.UniqueVolumeName) bool {
	desired, _ := k.desired.size(u)
	s, known := k.actual.size(u)
	return known && !s.inUseError && !s.size.IsZero() && !desired.IsZero() && desired.Cmp(s.size) > 0
}

// awaitsExpansion reports whether a running pod has a mounted volume the
// volume manager wants to expand: its reconciler looks again every 100 ms,
// so a change of the claim (the resizer marking it) is seen at once.
func (k *Kubelet) awaitsExpansion(pod *corev1.Pod) bool {
	if pod.Status.Phase != corev1.PodRunning || pod.DeletionTimestamp != nil {
		return false
	}
	for _, m := range k.actual.podVolumes(pod.UID) {
		if !m.uncertain && k.needsExpansion(m.unique) {
			return true
		}
	}
	return false
}

// expandInUse is the reconciler's online expansion (ExpandInUseVolume) of
// the pod's mounted volumes that need it. A failure posts VolumeResizeFailed
// on the pod and is retried after the operation's backoff; the pod is not
// held up.
func (k *Kubelet) expandInUse(ctx context.Context, pod *corev1.Pod, vols []volumeToMount) error {
	var retry time.Duration
	for _, v := range vols {
		m := k.actual.mountedVolume(pod.UID, v.pv.Name)
		if m == nil || m.uncertain || !k.needsExpansion(v.unique) {
			continue
		}
		s, _ := k.actual.size(v.unique)
		current, devicePath := s.size, s.devicePath
		desired, _ := k.desired.size(v.unique)
		now := k.clock.Now()
		if wait := k.expandBackoff.remaining(v.unique, now); wait > 0 {
			retry = shorter(retry, wait)
			continue
		}
		volumePath, staging := m.target, StagingPath(k.cfg.Dir, v.pv.Spec.CSI.Driver, v.pv.Spec.CSI.VolumeHandle)
		if v.block {
			volumePath, staging = devicePath, BlockStagingPath(k.cfg.Dir, v.pv.Name)
			if volumePath == "" {
				volumePath = m.target
			}
		}
		done, size, err := k.nodeExpandVolume(ctx, pod, v, volumePath, staging, current, desired)
		if err != nil {
			k.events.Eventf(pod, corev1.EventTypeWarning, reasonVolumeResizeFailed,
				"NodeExpandVolume.NodeExpandVolume failed for volume %q : %v", v.pv.Name, err)
			retry = shorter(retry, k.expandBackoff.failed(v.unique, now))
			continue
		}
		k.expandBackoff.reset(v.unique)
		if done {
			// MarkVolumeAsResized.
			k.actual.updateSize(v.unique, func(s *actualSize) { s.size = size })
		}
		// Not done and no error: the claim does not allow it yet
		// ("Waiting for volume to be expandable on the node"); a change
		// of the claim wakes the pod (wake.go).
	}
	if retry > 0 {
		return controller.RequeueAfter(retry)
	}
	return nil
}

func shorter(a, b time.Duration) time.Duration {
	if a == 0 || b < a {
		return b
	}
	return a
}

// nodeExpandVolume is the online expansion from the actual size to the
// desired one; it returns whether the volume is done and its size now.
func (k *Kubelet) nodeExpandVolume(ctx context.Context, pod *corev1.Pod, v volumeToMount, volumePath, staging string, current, desired resource.Quantity) (bool, resource.Quantity, error) {
	if desired.Cmp(current) <= 0 {
		return true, current, nil
	}
	pvc, err := k.getClaim(ctx, v)
	if err != nil {
		return false, current, fmt.Errorf("mountVolume.NodeExpandVolume get PVC failed : %w", err)
	}
	if v.readOnly {
		k.readOnlyResizeFailed(pod, pvc, v)
		return true, pvc.Status.Capacity.Storage().DeepCopy(), nil
	}
	op := expandOp{pod: pod, v: v, pvc: pvc, volumePath: volumePath, staging: staging, oldSize: current, newSize: desired}
	if !withRecovery(pvc) {
		done, err := k.legacyNodeExpand(ctx, op)
		return done, desired, err
	}
	op.newSize = pvc.Status.AllocatedResources.Storage().DeepCopy()
	return k.expandOnPlugin(ctx, op)
}

// expandDuringMount is the offline expansion at the end of a mount or map:
// when the claim's status.capacity is behind the PV's capacity. A false
// result without an error means nothing was done yet (the claim does not
// allow it): the mount stands.
func (k *Kubelet) expandDuringMount(ctx context.Context, pod *corev1.Pod, v volumeToMount, volumePath, staging string) (bool, error) {
	if v.inline {
		// A migrated inline volume is not resizable (operation_generator.go
		// checkIfSupportsNodeExpansion).
		return true, nil
	}
	pvc, err := k.getClaim(ctx, v)
	if err != nil {
		return false, fmt.Errorf("mountVolume.NodeExpandVolume get PVC failed : %v", err)
	}
	claimSize, pvSize := pvc.Status.Capacity.Storage().DeepCopy(), v.pv.Spec.Capacity.Storage().DeepCopy()
	if claimSize.Cmp(pvSize) >= 0 {
		return true, nil
	}
	if v.readOnly {
		k.readOnlyResizeFailed(pod, pvc, v)
		return true, nil
	}
	op := expandOp{pod: pod, v: v, pvc: pvc, volumePath: volumePath, staging: staging, oldSize: claimSize, newSize: pvSize}
	if !withRecovery(pvc) {
		return k.legacyNodeExpand(ctx, op)
	}
	op.newSize = pvc.Status.AllocatedResources.Storage().DeepCopy()
	done, _, err := k.expandOnPlugin(ctx, op)
	return done, err
}

// getClaim reads the volume's claim from the API server, as the kubelet
// does before it expands.
func (k *Kubelet) getClaim(ctx context.Context, v volumeToMount) (*corev1.PersistentVolumeClaim, error) {
	ref := v.pv.Spec.ClaimRef
	if ref == nil {
		return nil, fmt.Errorf("volume %s has no claim", v.pv.Name)
	}
	return k.client.CoreV1().PersistentVolumeClaims(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
}

// readOnlyResizeFailed: a read-only claim's file system is not grown.
func (k *Kubelet) readOnlyResizeFailed(pod *corev1.Pod, pvc *corev1.PersistentVolumeClaim, v volumeToMount) {
	msg := fmt.Sprintf("MountVolume.NodeExpandVolume failed for volume %q requested read-only file system", v.pv.Name)
	k.events.Event(pod, corev1.EventTypeWarning, reasonFileSystemResizeFailed, msg)
	k.events.Event(pvc, corev1.EventTypeWarning, reasonFileSystemResizeFailed, msg)
}

// withRecovery is checkForRecoveryFromExpansion with its feature gate
// (RecoverVolumeExpansionFailure) GA: the claim-status protocol is used
// unless the resizer left no trace of it in the claim (an older resizer,
// or a PV grown by hand), in which case the kubelet expands the old way.
func withRecovery(pvc *corev1.PersistentVolumeClaim) bool {
	return pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] != "" || pvc.Status.AllocatedResources != nil
}

// expandOp is one node expansion of a volume for a pod.
type expandOp struct {
	pod                 *corev1.Pod
	v                   volumeToMount
	pvc                 *corev1.PersistentVolumeClaim
	volumePath, staging string
	oldSize, newSize    resource.Quantity
}

// expandOnPlugin is the NodeExpander: check that the claim allows node
// expansion, mark it in progress, call the driver, and record the outcome
// in the claim. It returns whether the expansion is finished and the size.
func (k *Kubelet) expandOnPlugin(ctx context.Context, op expandOp) (bool, resource.Quantity, error) {
	pvc := op.pvc
	claimSize := pvc.Status.Capacity.Storage().DeepCopy()
	resizeStatus := pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage]
	requested := pvc.Spec.Resources.Requests.Storage().DeepCopy()
	markInfeasible := requested.Cmp(op.newSize) != 0 && k.actual.hasFinalExpansionError(op.v.unique)
	alreadyUpdated := claimSize.Cmp(op.newSize) >= 0 && resizeStatus == ""
	// A ReadWriteMany volume is expanded on every node that uses it,
	// unless the claim says the node need not (the resizer's
	// node-expansion-not-required annotation).
	allowed := alreadyUpdated && hasAccessMode(pvc.Spec.AccessModes, corev1.ReadWriteMany) &&
		!metav1.HasAnnotation(pvc.ObjectMeta, volumeutil.AnnNodeExpansionNotRequired)
	if !allowed {
		allowed = resizeStatus == corev1.PersistentVolumeClaimNodeResizePending || resizeStatus == corev1.PersistentVolumeClaimNodeResizeInProgress
	}
	if !allowed {
		if alreadyUpdated {
			return true, op.newSize, nil
		}
		return false, op.oldSize, nil
	}
	if !alreadyUpdated {
		next := pvc.DeepCopy()
		setResizeStatus(next, corev1.PersistentVolumeClaimNodeResizeInProgress)
		updated, err := k.patchClaimStatus(ctx, pvc, next, true)
		if err != nil {
			return false, op.oldSize, err
		}
		pvc = updated
	}
	err := k.nodeExpand(ctx, op)
	if err != nil {
		var e *expandError
		errors.As(err, &e)
		if e != nil && e.notSupported && alreadyUpdated {
			return true, op.newSize, nil
		}
		if e == nil || !e.transient {
			k.actual.markFinalExpansionError(op.v.unique)
			next := pvc.DeepCopy()
			if (e != nil && e.infeasible) || markInfeasible {
				setResizeStatus(next, corev1.PersistentVolumeClaimNodeResizeInfeasible)
			}
			mergeResizeConditions(next, []corev1.PersistentVolumeClaimCondition{{
				Type: corev1.PersistentVolumeClaimNodeResizeError, Status: corev1.ConditionTrue,
				LastTransitionTime: metav1.NewTime(k.clock.Now()),
				Message:            fmt.Sprintf("failed to expand pvc with %v", err),
			}}, true)
			// The kubelet only logs a failure to record the failure.
			_, _ = k.patchClaimStatus(ctx, pvc, next, false)
		}
		if e != nil && e.inUse {
			k.markInUseError(op.v.unique)
			return false, op.oldSize, nil
		}
		return false, op.oldSize, err
	}
	k.resizeSucceeded(op, pvc)
	if alreadyUpdated {
		return true, op.newSize, nil
	}
	if _, err := k.finishResize(ctx, pvc, op.newSize); err != nil {
		return true, op.newSize, fmt.Errorf("mountVolume.NodeExpandVolume update pvc status failed: %w", err)
	}
	return true, op.newSize, nil
}

// legacyNodeExpand expands for a claim without the resize status protocol:
// no check of the claim, no status but the end.
func (k *Kubelet) legacyNodeExpand(ctx context.Context, op expandOp) (bool, error) {
	if err := k.nodeExpand(ctx, op); err != nil {
		var e *expandError
		switch {
		case errors.As(err, &e) && e.notSupported:
			return true, nil
		case errors.As(err, &e) && e.inUse:
			k.markInUseError(op.v.unique)
			return true, nil
		}
		return false, err
	}
	k.resizeSucceeded(op, op.pvc)
	if op.pvc.Status.Capacity.Storage().Cmp(op.newSize) >= 0 {
		return true, nil
	}
	if _, err := k.finishResize(ctx, op.pvc, op.newSize); err != nil {
		return false, fmt.Errorf("mountVolume.NodeExpandVolume update PVC status failed : %v", err)
	}
	return true, nil
}

// resizeSucceeded posts FileSystemResizeSuccessful on the pod and the
// claim; the message ends with the node's name.
func (k *Kubelet) resizeSucceeded(op expandOp, pvc *corev1.PersistentVolumeClaim) {
	msg := fmt.Sprintf("MountVolume.NodeExpandVolume succeeded for volume %q %s", op.v.pv.Name, op.pod.Spec.NodeName)
	k.events.Event(op.pod, corev1.EventTypeNormal, reasonFileSystemResizeSuccess, msg)
	k.events.Event(pvc, corev1.EventTypeNormal, reasonFileSystemResizeSuccess, msg)
}

// finishResize is MarkNodeExpansionFinishedWithRecovery: the claim has the
// new size, its storage resize status and its resize conditions go.
func (k *Kubelet) finishResize(ctx context.Context, pvc *corev1.PersistentVolumeClaim, size resource.Quantity) (*corev1.PersistentVolumeClaim, error) {
	next := pvc.DeepCopy()
	if next.Status.Capacity == nil {
		next.Status.Capacity = corev1.ResourceList{}
	}
	next.Status.Capacity[corev1.ResourceStorage] = size
	delete(next.Status.AllocatedResourceStatuses, corev1.ResourceStorage)
	if len(next.Status.AllocatedResourceStatuses) == 0 {
		next.Status.AllocatedResourceStatuses = nil
	}
	mergeResizeConditions(next, nil, false)
	return k.patchClaimStatus(ctx, pvc, next, true)
}

func (k *Kubelet) markInUseError(u corev1.UniqueVolumeName) {
	k.actual.updateSize(u, func(s *actualSize) { s.inUseError = true })
}

func hasAccessMode(modes []corev1.PersistentVolumeAccessMode, mode corev1.PersistentVolumeAccessMode) bool {
	for _, m := range modes {
		if m == mode {
			return true
		}
	}
	return false
}

// setResizeStatus sets the claim's allocatedResourceStatuses entry for
// storage.
func setResizeStatus(pvc *corev1.PersistentVolumeClaim, st corev1.ClaimResourceStatus) {
	if pvc.Status.AllocatedResourceStatuses == nil {
		pvc.Status.AllocatedResourceStatuses = map[corev1.ResourceName]corev1.ClaimResourceStatus{}
	}
	pvc.Status.AllocatedResourceStatuses[corev1.ResourceStorage] = st
}

// mergeResizeConditions is MergeResizeConditionOnPVC: other conditions
// stay; a resize condition is replaced by a new one of its type whose
// status differs, kept if the status is the same, and dropped if there is
// no new one unless keepOld; new types are added at the end.
func mergeResizeConditions(pvc *corev1.PersistentVolumeClaim, conds []corev1.PersistentVolumeClaimCondition, keepOld bool) {
	byType := map[corev1.PersistentVolumeClaimConditionType]int{}
	for i, c := range conds {
		byType[c.Type] = i
	}
	done := make([]bool, len(conds))
	out := []corev1.PersistentVolumeClaimCondition{}
	for _, c := range pvc.Status.Conditions {
		if !resizeConditions[c.Type] {
			out = append(out, c)
			continue
		}
		if i, ok := byType[c.Type]; ok {
			if conds[i].Status != c.Status {
				out = append(out, conds[i])
			} else {
				out = append(out, c)
			}
			done[i] = true
		} else if keepOld {
			out = append(out, c)
		}
	}
	for i, c := range conds {
		if !done[i] {
			out = append(out, c)
		}
	}
	pvc.Status.Conditions = out
}

// patchClaimStatus writes the claim's status as the kubelet does, with a
// strategic merge patch of the status subresource; withRV makes the patch
// carry the claim's resourceVersion, so that it fails on a newer claim. A
// patch that changes nothing is not sent.
func (k *Kubelet) patchClaimStatus(ctx context.Context, old, next *corev1.PersistentVolumeClaim, withRV bool) (*corev1.PersistentVolumeClaim, error) {
	from, err := json.Marshal(old)
	if err != nil {
		return old, fmt.Errorf("patchPVCStatus failed to patch PVC %q: %v", old.Name, err)
	}
	to, err := json.Marshal(next)
	if err != nil {
		return old, fmt.Errorf("patchPVCStatus failed to patch PVC %q: %v", old.Name, err)
	}
	patch, err := strategicpatch.CreateTwoWayMergePatch(from, to, corev1.PersistentVolumeClaim{})
	if err != nil {
		return old, fmt.Errorf("patchPVCStatus failed to patch PVC %q: %v", old.Name, err)
	}
	if string(patch) == "{}" {
		return old, nil
	}
	if withRV {
		var m map[string]any
		if err := json.Unmarshal(patch, &m); err != nil {
			return old, fmt.Errorf("patchPVCStatus failed to patch PVC %q: %v", old.Name, err)
		}
		meta, _ := m["metadata"].(map[string]any)
		if meta == nil {
			meta = map[string]any{}
		}
		meta["resourceVersion"] = old.ResourceVersion
		m["metadata"] = meta
		if patch, err = json.Marshal(m); err != nil {
			return old, fmt.Errorf("patchPVCStatus failed to patch PVC %q: %v", old.Name, err)
		}
	}
	updated, err := k.client.CoreV1().PersistentVolumeClaims(old.Namespace).Patch(ctx, old.Name, types.StrategicMergePatchType, patch, metav1.PatchOptions{}, "status")
	if err != nil {
		return old, fmt.Errorf("patchPVCStatus failed to patch PVC %q: %v", old.Name, err)
	}
	return updated, nil
}

// expandError is a failed NodeExpand as the kubelet classifies it.
type expandError struct {
	msg string
	// transient: the operation may not have finished (the driver is not
	// registered): no failure is recorded in the claim.
	transient bool
	// infeasible: the driver said InvalidArgument, OutOfRange or NotFound.
	infeasible bool
	// inUse: FailedPrecondition, the volume cannot grow while in use.
	inUse bool
	// notSupported: the node plugin lacks EXPAND_VOLUME.
	notSupported bool
}

func (e *expandError) Error() string { return e.msg }

// nodeExpand is the CSI plugin's NodeExpand: the node plugin must have the
// EXPAND_VOLUME capability; the request carries the volume's path (the
// published directory, or a block volume's device), the staging path if
// any, the new size, the capability (access mode, and fs type and mount
// options or block) and the node-expand secret of the PV.
func (k *Kubelet) nodeExpand(ctx context.Context, op expandOp) error {
	src := op.v.pv.Spec.CSI
	if !k.driverRegistered(src.Driver) {
		return &expandError{msg: fmt.Sprintf("driver name %s not found in the list of registered CSI drivers", src.Driver), transient: true}
	}
	caps, err := k.nodeCapabilities(ctx, src.Driver)
	if err != nil {
		return fmt.Errorf("Expander.NodeExpand failed to check if node supports expansion : %v", err)
	}
	if !caps[csi.NodeServiceCapability_RPC_EXPAND_VOLUME] {
		return &expandError{msg: fmt.Sprintf("NodeExpand is not supported by the CSI driver %s", src.Driver), notSupported: true}
	}
	var secrets map[string]string
	if ref := src.NodeExpandSecretRef; ref != nil {
		secret, err := k.client.CoreV1().Secrets(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
		if err != nil {
			return fmt.Errorf("expander.NodeExpand failed to get NodeExpandSecretRef %s/%s: %s: failed to find the secret %s in the namespace %s with error: %v",
				ref.Namespace, ref.Name, csiPluginName, ref.Name, ref.Namespace, err)
		}
		secrets = map[string]string{}
		for key, v := range secret.Data {
			secrets[key] = string(v)
		}
	}
	if op.volumePath == "" {
		return errors.New("Expander.NodeExpand failed to expand the volume : missing volume path")
	}
	capability := blockCapability(op.v.pv, caps)
	if !op.v.block {
		capability = &csi.VolumeCapability{
			AccessMode: &csi.VolumeCapability_AccessMode{Mode: accessMode(op.v.pv, caps)},
			AccessType: &csi.VolumeCapability_Mount{Mount: &csi.VolumeCapability_MountVolume{FsType: src.FSType, MountFlags: op.v.pv.Spec.MountOptions}},
		}
	}
	callCtx, cancel := k.csiCallContext(ctx)
	defer cancel()
	_, err = k.nodeClient(src.Driver).NodeExpandVolume(callCtx, &csi.NodeExpandVolumeRequest{
		VolumeId: src.VolumeHandle, VolumePath: op.volumePath, StagingTargetPath: op.staging,
		CapacityRange: &csi.CapacityRange{RequiredBytes: op.newSize.Value()}, VolumeCapability: capability, Secrets: secrets,
	})
	if err == nil {
		return nil
	}
	// The CSI client hides the code of an error that may not be final;
	// of the final ones, FailedPrecondition says "not while in use" and
	// InvalidArgument, OutOfRange, NotFound that it cannot be done.
	code := codes.Unknown
	if st, ok := status.FromError(err); ok && isFinalError(err) {
		code = st.Code()
	}
	switch code {
	case codes.FailedPrecondition:
		return &expandError{msg: fmt.Sprintf("Expander.NodeExpand failed to expand the volume : %v", err), inUse: true}
	case codes.InvalidArgument, codes.OutOfRange, codes.NotFound:
		return &expandError{msg: fmt.Sprintf("Expander.NodeExpand failed to expand the volume %v", err), infeasible: true}
	}
	return fmt.Errorf("Expander.NodeExpand failed to expand the volume : %w", err)
}
